// overlap::DeviceModel: what the simulator knows about a GPU.
//
// A plain value, saved to and loaded from JSON, with presets: `unit` (the
// seeds' teaching model: every op takes its given time, ideal engines), `h100`
// (figures measured in docs/hardware.md), `hyperq` (a generic modern GPU), and
// `fermi-2ce` / `fermi-1ce` (one hardware queue per engine, as on Fermi, with
// two copy engines or one shared by both directions).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/core/bandwidth_curve.hpp"
#include "overlap/core/host_links.hpp"
#include "overlap/core/program.hpp"

namespace overlap {

/// How streams map onto the device's hardware work queues.
enum class queue_mapping : std::uint8_t {
  /// Hyper-Q: stream i feeds connection i mod DeviceModel::connections, in
  /// issue order (see DeviceModel::connections for what sharing one costs).
  per_stream,
  /// Fermi: one queue per engine (copy, compute) fed in host issue order; a
  /// blocked op at the head of a queue blocks everything behind it.
  per_engine,
};

/// Which ready copy a copy engine starts next when several streams have one.
enum class copy_arbitration : std::uint8_t {
  /// The one that became ready first (ties: host issue order).
  earliest_ready,
  /// The engine stays with the stream it served last while that stream has
  /// a copy ready, then moves to the next stream in creation order that has
  /// one: copies queued on several streams run stream by stream, not
  /// interleaved (measured on an H100 by `overlap probe`).
  stream_round_robin,
};

/// How much slower each direction runs while the other runs too, at a copy size.
struct BidirectionalPoint {
  std::uint64_t bytes = 0;    ///< copy size
  double h2d_slowdown = 1.0;  ///< >= 1
  double d2h_slowdown = 1.0;  ///< >= 1
};

/// Host cost of each kind of runtime call, measured by `overlap probe`
/// (milliseconds per call). A call of a kind not listed costs api_call_cost.
struct HostCallCosts {
  std::optional<double> copy;          ///< cudaMemcpyAsync
  std::optional<double> launch;        ///< a kernel launch
  std::optional<double> record;        ///< cudaEventRecord
  std::optional<double> wait;          ///< cudaStreamWaitEvent
  std::optional<double> graph_launch;  ///< cudaGraphLaunch
};

/// Host memcpy rate from pageable into pinned memory with `threads` threads:
/// the floor of staging pageable data through pinned buffers.
struct StagingPoint {
  std::uint32_t threads = 1;          ///< host threads copying at once (>= 1)
  double gigabytes_per_second = 0.0;  ///< their combined rate, 1 GB = 1e9 bytes
};

/// Where, when and how well a model was measured (`overlap probe`).
struct ProbeRecord {
  std::string device;    ///< the GPU's name
  std::string driver;    ///< "13.0" (cudaDriverGetVersion)
  std::string runtime;   ///< "13.0" (cudaRuntimeGetVersion)
  std::string date;      ///< UTC, "2026-11-23 14:05"
  bool quick = false;    ///< measured with --quick
  double seconds = 0.0;  ///< how long the probe took
  /// Each measured figure's spread, (max - min) / median over its repetitions.
  std::map<std::string, double> spread;
  /// Every measurement, as JSON text (kept so a model file can be re-fitted).
  std::string raw;
};

/// A device as the simulator sees it. All times are milliseconds.
struct DeviceModel {
  std::string name = "custom";  ///< preset name or a label; becomes the simulated Timeline's device

  queue_mapping mapping = queue_mapping::per_stream;  ///< how streams map onto hardware queues
  /// Connections (hardware work queues) the streams are spread over for
  /// queue_mapping::per_stream: CUDA_DEVICE_MAX_CONNECTIONS in force, 8 when
  /// unset, 1 to 32. It is not how many kernels run at once (32 single-kernel
  /// streams all run at once over 8 connections on an H100: nothing blocks the
  /// head of a queue) but what ops of streams sharing one connection pay: an op
  /// at the head of the connection that must wait for its stream's previous op
  /// holds up the ops behind it, whatever their stream (a false dependency; 32
  /// streams of dependent kernel pairs issued stream by stream ran 2.49x slower
  /// over 8 connections than over 32 on an H100, and breadth-first 1.02x). The run's environment overrides
  /// it: `overlap audit` reads it from the trace, `overlap simulate/check` take --connections. A JSON model's
  /// `hardware_queues`, the field's name before, still reads (docs/hardware.md says how).
  std::uint32_t connections = 8;
  /// CUDA_DEVICE_MAX_CONNECTIONS' upper limit: the driver uses at most 32.
  static constexpr std::uint32_t max_connections = 32;
  /// False: one copy engine serves both directions, one copy at a time.
  bool copy_engine_per_direction = true;
  /// How a copy engine picks among ready copies of different streams.
  copy_arbitration arbitration = copy_arbitration::earliest_ready;
  /// Largest number of kernels resident at once (1 = no concurrent kernels):
  /// how many kernels run at once, whatever the connections.
  std::uint32_t max_concurrent_kernels = 128;
  /// True: running kernels share the SMs' throughput, each asking its
  /// gpu_share and slowed when the asks exceed the GPU (src/sim/sm_sharing);
  /// false: a kernel takes min(gpu_share, what is free) and runs at full
  /// speed, and none starts while the GPU is full. Probed models set it.
  bool kernels_share_sms = false;
  /// Fermi: kernels launched back to back on different streams signal their
  /// completion only when the last of them finishes.
  bool kernel_signal_waits_for_batch = false;

  /// Host cost of issuing one API call (of a kind host_calls does not give).
  double api_call_cost = 0.0;
  /// Measured host cost per kind of call.
  HostCallCosts host_calls;
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
  /// True: an op that was already waiting when its engine freed starts
  /// without kernel_launch_latency / copy_start_latency (the engine fetched
  /// it while the op before ran); only an op that arrives at an idle engine
  /// pays its start latency. Probed models set it; presets keep false.
  bool start_latency_hidden_when_queued = false;
  /// What an op fetched early (start latency hidden) still pays before it
  /// starts when the op before it on its stream ran on another engine, or it
  /// follows an event wait: the engine acquires that hand-over only when it
  /// reaches the op. Probed models measure it (a queued depth-first pipeline
  /// against independent copy trains); 0 in the presets and older probes.
  double queued_handover_latency = 0.0;

  BandwidthCurve h2d_pinned;    ///< H2D copies from pinned host memory
  BandwidthCurve d2h_pinned;    ///< D2H copies to pinned host memory
  BandwidthCurve h2d_pageable;  ///< H2D copies from pageable host memory
  BandwidthCurve d2h_pageable;  ///< D2H copies to pageable host memory
  BandwidthCurve d2d;           ///< device-to-device copies within the GPU
  /// Copies between two GPUs (cudaMemcpyPeerAsync) when nothing else shares
  /// their link. Empty where unknown (the h100, hyperq and fermi presets:
  /// it depends on the host, NVLink or PCIe): a peer copy then needs a time.
  BandwidthCurve peer;
  BandwidthCurve memset;  ///< memsets: bytes set per second

  /// Slowdown of an H2D copy while a D2H copy runs (and vice versa): >= 1.
  double h2d_slowdown_when_bidirectional = 1.0;
  double d2h_slowdown_when_bidirectional = 1.0;  ///< of a D2H copy while an H2D copy runs: >= 1
  /// The same by copy size (interpolated like a BandwidthCurve, strictly
  /// increasing bytes); when given it replaces the two figures above. Small
  /// copies lose more to the other direction than large ones (probed: 1.27x
  /// at 256 KiB, 1.09x at 16 MiB on an H100).
  std::vector<BidirectionalPoint> bidirectional;
  /// The slowdown of a copy of `bytes` in `direction` while the other direction runs.
  [[nodiscard]] double bidirectional_slowdown(copy_direction direction, std::uint64_t bytes) const;

  /// Host pageable->pinned copy rates by thread count (probed; empty in presets).
  std::vector<StagingPoint> host_staging;
  /// cudaHostRegister / cudaHostUnregister cost per GiB (probed; empty in presets).
  std::optional<double> host_register_ms_per_gib;
  std::optional<double> host_unregister_ms_per_gib;  ///< cudaHostUnregister ms per GiB (probed)

  /// What this GPU shares with the other GPUs of its host, and their own
  /// links (`overlap probe --all-devices`); unset: every GPU of a program
  /// copies at these curves, as if alone on the host.
  std::optional<HostLinks> host;

  /// Set when `overlap probe` measured the model.
  std::optional<ProbeRecord> probe;

  /// Names of the built-in presets.
  [[nodiscard]] static std::vector<std::string> preset_names();
  /// A built-in preset; throws overlap::invalid_input for an unknown name.
  [[nodiscard]] static DeviceModel preset(std::string_view name);
  /// Parses a model from JSON text; throws overlap::invalid_input naming the field.
  [[nodiscard]] static DeviceModel from_json(std::string_view text);
  /// A preset name, or a path to a JSON file.
  [[nodiscard]] static DeviceModel load(std::string_view preset_or_path);
  /// Host cost of issuing an op of `kind` (host_calls, else api_call_cost).
  [[nodiscard]] double call_cost(op_kind kind) const noexcept;
  /// The model as indented JSON, readable by from_json.
  [[nodiscard]] std::string to_json() const;

  /// Throws overlap::invalid_input if a field is out of range.
  void validate() const;
};

}  // namespace overlap
