// overlap::DeviceModel: what the simulator knows about a GPU.
//
// A plain value, saved to and loaded from JSON, with presets: `unit` (the
// seeds' teaching model: every op takes its given time, ideal engines), `h100`
// (figures measured in HARDWARE.md), `hyperq` (a generic modern GPU), and
// `fermi-2ce` / `fermi-1ce` (one hardware queue per engine, as on Fermi, with
// two copy engines or one shared by both directions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {

/// How streams map onto the device's hardware work queues.
enum class queue_mapping : std::uint8_t {
  /// Hyper-Q: stream i uses queue i mod hardware_queues, in issue order.
  per_stream,
  /// Fermi: one queue per engine (copy, compute) fed in host issue order; a
  /// blocked op at the head of a queue blocks everything behind it.
  per_engine,
};

/// One point of a copy bandwidth curve: the effective rate at a size.
struct BandwidthPoint {
  std::uint64_t bytes = 0;
  double gigabytes_per_second = 0.0;  ///< 1 GB = 1e9 bytes
};

/// Effective copy bandwidth as a function of size, interpolated linearly in
/// log2(bytes) between points and held constant beyond the ends.
struct BandwidthCurve {
  std::vector<BandwidthPoint> points;  ///< strictly increasing in bytes

  /// Bandwidth in GB/s for a copy of `bytes`.
  [[nodiscard]] double at(std::uint64_t bytes) const;
};

/// A device as the simulator sees it. All times are milliseconds.
struct DeviceModel {
  std::string name = "custom";

  queue_mapping mapping = queue_mapping::per_stream;
  /// Hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS, default 8) for
  /// queue_mapping::per_stream; streams beyond it share queues.
  std::uint32_t hardware_queues = 8;
  /// False: one copy engine serves both directions, one copy at a time.
  bool copy_engine_per_direction = true;
  /// Largest number of kernels resident at once (1 = no concurrent kernels).
  std::uint32_t max_concurrent_kernels = 128;
  /// Fermi: kernels launched back to back on different streams signal their
  /// completion only when the last of them finishes.
  bool kernel_signal_waits_for_batch = false;

  /// Host cost of issuing one API call.
  double api_call_cost = 0.0;
  /// Delay between a kernel becoming runnable and starting.
  double kernel_launch_latency = 0.0;
  /// Fixed start-up cost added to every copy and memset.
  double copy_latency = 0.0;
  /// Delay between a copy or memset becoming runnable and starting (the
  /// kernels' is kernel_launch_latency). Measured by `overlap audit` from the
  /// trace it audits; 0 in the presets.
  double copy_start_latency = 0.0;
  /// Time from the work a blocking call waits for finishing to the host
  /// returning from the call (a synchronous copy, a synchronize). Measured
  /// by `overlap audit` from the trace it audits; 0 in the presets.
  double host_wakeup_latency = 0.0;

  BandwidthCurve h2d_pinned;
  BandwidthCurve d2h_pinned;
  BandwidthCurve h2d_pageable;
  BandwidthCurve d2h_pageable;
  BandwidthCurve d2d;
  BandwidthCurve memset;

  /// Slowdown of an H2D copy while a D2H copy runs (and vice versa): >= 1.
  double h2d_slowdown_when_bidirectional = 1.0;
  double d2h_slowdown_when_bidirectional = 1.0;

  /// Names of the built-in presets.
  [[nodiscard]] static std::vector<std::string> preset_names();
  /// A built-in preset; throws overlap::invalid_input for an unknown name.
  [[nodiscard]] static DeviceModel preset(std::string_view name);
  /// Parses a model from JSON text; throws overlap::invalid_input naming the field.
  [[nodiscard]] static DeviceModel from_json(std::string_view text);
  /// A preset name, or a path to a JSON file.
  [[nodiscard]] static DeviceModel load(std::string_view preset_or_path);
  /// The model as indented JSON, readable by from_json.
  [[nodiscard]] std::string to_json() const;

  /// Throws overlap::invalid_input if a field is out of range.
  void validate() const;
};

}  // namespace overlap
