// overlap::probe::run_host_probe: every GPU of the host, alone and together.
//
// `overlap probe --all-devices` runs it. It probes GPU 0 in full (the model's
// curves, run_probe), then measures each GPU's link alone (link peaks), every
// GPU copying at once -- H2D, D2H, both ways -- with each GPU's trains queued
// behind a held GPU and all released together, and peer copies for each
// ordered pair of GPUs. model_from_host_probe() keeps GPU 0's model and adds
// what the GPUs share (DeviceModel::host).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/probe/link_peaks.hpp"
#include "overlap/probe/probe.hpp"

namespace overlap::probe {

/// One GPU's link, measured while no other GPU copies.
struct gpu_link {
  int device = 0;          ///< CUDA device ordinal
  std::string name;        ///< cudaDeviceProp::name
  std::string uuid;        ///< "GPU-..." as nvidia-smi -L spells it
  std::string pci_bus_id;  ///< "0000:18:00.0": where on the host the GPU sits
  link_peaks peaks;        ///< peak H2D, D2H and both ways over the size sweep
};

/// Every GPU copying at once, each moving the same bytes.
struct together_rates {
  std::size_t bytes = 0;  ///< per copy
  unsigned copies = 0;    ///< per train, per GPU and direction
  /// Total GB/s over the GPUs: their bytes over the slowest GPU's span from
  /// the release (what a job split evenly over them gets).
  measured h2d_gbps;
  measured d2h_gbps;   ///< total, every GPU copying D2H
  measured both_gbps;  ///< total of both directions, every GPU copying both ways
  /// Each GPU's own rate in the runs above, by device: {h2d, d2h, both}.
  std::vector<std::vector<measured>> per_gpu;
};

/// Peer copies (cudaMemcpyPeerAsync) from one GPU to another, in held trains.
struct peer_measurement {
  int from = 0;                    ///< the GPU read
  int to = 0;                      ///< the GPU written
  bool direct = false;             ///< peer access enabled (NVLink or PCIe P2P); false: staged by the driver
  std::vector<std::size_t> sizes;  ///< per copy
  std::vector<measured> gbps;      ///< the rate at each size
};

/// Everything run_host_probe measured.
struct host_measurements {
  probe_measurements first;             ///< the full probe of GPU 0: the model's own curves
  std::vector<gpu_link> gpus;           ///< each GPU's link alone, by device
  together_rates together;              ///< every GPU copying at once
  std::vector<peer_measurement> peers;  ///< each ordered pair of GPUs
  double seconds = 0.0;                 ///< the whole probe, GPU 0's included
};

/// Measures every visible GPU; throws overlap::error when there is none,
/// cuda_error on a CUDA failure. Progress goes to options.progress.
[[nodiscard]] host_measurements run_host_probe(const probe_options& options);

/// GPU 0's model (model_from_probe) with DeviceModel::host filled in.
[[nodiscard]] DeviceModel model_from_host_probe(const host_measurements& m);

/// The measurements as JSON (kept in the model file under probe.raw).
[[nodiscard]] std::string to_json(const host_measurements& m);

}  // namespace overlap::probe
