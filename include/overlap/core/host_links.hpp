// overlap::HostLinks: what the GPUs of one host share when they copy at once.
//
// Whether two GPUs move twice the bytes of one depends on the host: its
// memory bandwidth, the CPU's root ports, PCIe switches. `overlap probe
// --all-devices` measures each GPU's link alone, all GPUs copying together
// (one direction, then both) and each pair's peer copies, and keeps the
// result in the DeviceModel it writes (DeviceModel::host). The simulator then
// runs each GPU's host copies at its own link's rate and holds the copies
// running on several GPUs at each moment to the host's total.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "overlap/core/bandwidth_curve.hpp"
#include "overlap/core/program.hpp"

namespace overlap {

/// One GPU of the host, its link measured with no other GPU copying.
struct HostGpu {
  std::string name;                        ///< cudaDeviceProp::name
  double h2d_gigabytes_per_second = 0.0;   ///< peak H2D; 1 GB = 1e9 bytes
  double d2h_gigabytes_per_second = 0.0;   ///< peak D2H
  double both_gigabytes_per_second = 0.0;  ///< H2D + D2H bytes per second, both directions at once
};

/// Peer copies (cudaMemcpyPeerAsync) from one GPU to another, alone on their link.
struct PeerLink {
  device_id from = 0;   ///< the GPU read
  device_id to = 0;     ///< the GPU written
  BandwidthCurve rate;  ///< by copy size
  /// Peer access was on (NVLink or PCIe P2P); false: the driver staged the copies through the host.
  bool direct = false;
};

/// What a host's GPUs share. Rates in GB/s, 1 GB = 1e9 bytes.
struct HostLinks {
  /// The host's GPUs by device id. The model's own curves are gpus[0]'s; the
  /// other GPUs' host copies run at those curves scaled by their peak over gpus[0]'s.
  std::vector<HostGpu> gpus;
  /// Total H2D rate with every GPU copying H2D at once, each moving the same bytes.
  double h2d_gigabytes_per_second = 0.0;
  double d2h_gigabytes_per_second = 0.0;   ///< total D2H rate, every GPU copying D2H at once
  double both_gigabytes_per_second = 0.0;  ///< total of both directions, every GPU copying both ways
  /// Measured peer pairs; a pair not listed uses DeviceModel::peer.
  std::vector<PeerLink> peers;

  /// How much longer a host copy of `direction` takes on `device` than on
  /// gpus[0] (1 for a device the host does not list).
  [[nodiscard]] double copy_time_scale(device_id device, copy_direction direction) const noexcept;
  /// The measured link from `from` to `to`, or nullptr.
  [[nodiscard]] const PeerLink* peer(device_id from, device_id to) const noexcept;

  /// Throws overlap::invalid_input naming the field ("device model: host.gpus[1].h2d_gbps: ...").
  void validate() const;
};

}  // namespace overlap
