// overlap::probe: measure the current GPU the way the simulator needs it.
//
// run_probe() times, on the current device: copy trains per direction and
// host memory kind over a size sweep, one copy alone (its start-up), both
// directions at once, two streams copying the same direction, how the copy
// engine orders copies queued on several streams, per-call host costs, the
// delay before an op that waited for another engine starts, event timing
// overhead, how many streams run kernels at once, what dependent kernel
// pairs on more streams than connections lose to shared connections, host
// pageable->pinned copy rates by thread count and cudaHostRegister's cost.
// The GPU is held by a spin kernel while each train is queued, so the host's
// enqueue cost stays out of the copy timings. model_from_probe() turns the
// measurements into a DeviceModel with the probe's spread attached.
//
// Library code: it prints nothing; progress goes to a callback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/probe/link_peaks.hpp"

namespace overlap::probe {

/// How long and how finely to measure.
struct probe_options {
  /// A smaller sweep and fewer repetitions (under 20 s on an H100).
  bool quick = false;
  /// Called before each step: its 1-based number, the number of steps, what it measures.
  std::function<void(std::size_t step, std::size_t steps, const std::string& what)> progress;
};

/// A median with its spread, in the unit of the field that holds it.
struct measured {
  double median = 0.0;  ///< of the samples
  double min = 0.0;     ///< smallest sample
  double max = 0.0;     ///< largest sample
  /// (max - min) / median; 0 for one sample.
  [[nodiscard]] double spread() const noexcept { return median > 0.0 ? (max - min) / median : 0.0; }
};
/// Summarizes samples; throws overlap::error when there are none.
[[nodiscard]] measured summarize(std::vector<double> samples);

/// One size of a copy sweep.
struct copy_point {
  std::size_t bytes = 0;  ///< per copy
  measured train_ms;      ///< per copy, in a train of back-to-back copies queued behind a held GPU
  measured alone_ms;      ///< one copy on an idle stream, events around it (start-up included)
};

/// A copy sweep for one direction and host memory kind.
struct copy_sweep {
  std::vector<copy_point> points;  ///< one per size, smallest first
};

/// Both directions at once at one size: each direction's per-copy time in trains running together.
struct bidirectional_point {
  std::size_t bytes = 0;  ///< per copy, the same in both directions
  measured h2d_ms;        ///< per H2D copy of its train
  measured d2h_ms;        ///< per D2H copy of its train
};

/// Copies queued on several streams in one direction, released at once:
/// the order and times they finished in.
struct arbitration_run {
  unsigned streams = 0;            ///< streams the copies were queued on
  unsigned copies_per_stream = 0;  ///< copies queued on each stream
  std::size_t bytes = 0;           ///< per copy
  std::string issue;               ///< "depth-first" (stream by stream) or "breadth-first" (copy by copy)
  /// (stream, copy index) in the order they finished.
  std::vector<std::pair<unsigned, unsigned>> finish_order;
  std::vector<double> finish_ms;  ///< from the release, same order
};

/// Host time of one runtime call, issued many times while the GPU is held.
struct host_call_costs {
  measured copy_ms;          ///< cudaMemcpyAsync, 4 KiB, pinned
  measured launch_ms;        ///< an empty kernel
  measured record_ms;        ///< cudaEventRecord
  measured wait_ms;          ///< cudaStreamWaitEvent
  measured graph_launch_ms;  ///< cudaGraphLaunch of a 3-node graph
};

/// Dependent kernel pairs (A then B, 1-block spin kernels) on `streams`
/// streams: from the first kernel's start to the last one's end.
struct false_dependency_run {
  std::string issue;     ///< "breadth" (every stream's A, then every B) or "depth" (A, B stream by stream)
  unsigned streams = 0;  ///< streams, one pair each, created in one go (connections round-robin)
  measured makespan_ms;  ///< first start to last end, globaltimer
};

/// The false dependency of shared connections: dependent pairs on more
/// streams than CUDA_DEVICE_MAX_CONNECTIONS against as many streams as
/// connections. Alone, each pair takes two spins; run side by side on their
/// own connections, all pairs together take about two spins as well.
struct false_dependency_test {
  unsigned connections = 0;  ///< CUDA_DEVICE_MAX_CONNECTIONS in force while measured (8 when unset)
  unsigned spin_us = 0;      ///< each kernel's spin
  /// Per issue order: on min(connections, 32) streams, then on 32 streams.
  std::vector<false_dependency_run> runs;
  /// Makespan on `streams` streams over makespan on the fewest streams run,
  /// for `issue`; 0 when either was not run.
  [[nodiscard]] double slowdown(const std::string& issue, unsigned streams) const;
};

/// Host memcpy from pageable into pinned memory with N threads.
struct staging_point {
  unsigned threads = 0;           ///< host threads the copy is split over
  measured gigabytes_per_second;  ///< copy rate; 1 GB = 1e9 bytes
};

/// Everything run_probe measured.
struct probe_measurements {
  std::string device;          ///< cudaDeviceProp::name
  int driver_version = 0;      ///< cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;     ///< cudaRuntimeGetVersion
  int sm_count = 0;            ///< streaming multiprocessors
  int async_engine_count = 0;  ///< copy engines (cudaDeviceProp::asyncEngineCount)
  std::string date;            ///< UTC, "2026-11-23 14:05"
  bool quick = false;          ///< measured with probe_options::quick
  double seconds = 0.0;        ///< how long the probe took

  /// H2D copies from pinned host memory.
  copy_sweep h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable;
  /// Device-to-device copies (train_ms only).
  copy_sweep d2d, memset;                          ///< memsets (train_ms only)
  std::vector<bidirectional_point> bidirectional;  ///< both directions at once, per size
  /// The same while a memory-bound kernel keeps device memory busy (not yet
  /// a model figure: it tells how much a kernel beside the copies costs them).
  std::vector<bidirectional_point> bidirectional_beside_memory_kernel;
  /// Aggregate rate of two streams copying H2D at once over one stream's (1: one engine serves them).
  measured same_direction_speedup;
  /// 4 streams of 4 x 1 MiB, then of 2 x 16 MiB, each issued depth-first then breadth-first.
  std::vector<arbitration_run> arbitration;
  /// Host time per runtime call.
  host_call_costs calls;
  measured copy_start_ms;    ///< a copy that waited for a kernel: beyond its train time
  measured kernel_start_ms;  ///< an empty kernel that waited for a copy: its span
  measured kernel_train_ms;  ///< an empty kernel per kernel in a back-to-back train
  measured event_ms;         ///< two event records back to back on an idle stream
  /// A depth-first pipeline queued behind a held GPU (H2D, empty kernel,
  /// D2H per chunk, chunks round-robin over streams) against both-direction
  /// trains of the same copies: what the engines lose per chunk to hand-overs.
  struct queued_pipeline {
    std::size_t bytes = 0;   ///< per copy
    unsigned streams = 0;    ///< the chunks round-robin over
    measured chunk_ms;       ///< per chunk of the pipeline
    measured train_copy_ms;  ///< per copy of the slower direction in both-direction trains
  } pipeline;                ///< engine hand-overs in a queued pipeline
  /// Streams the concurrent-kernel test launched on, one 1-block kernel each.
  unsigned streams_tried = 0;
  unsigned concurrent_kernels = 0;  ///< most 1-block kernels of different streams seen running at once
  unsigned max_connections = 0;     ///< CUDA_DEVICE_MAX_CONNECTIONS in force (8 when unset)
  /// Dependent kernel pairs on more streams than connections vs. as many:
  /// what sharing a connection costs (DeviceModel::connections).
  false_dependency_test false_dependency;
  /// Per thread count: 1, 2, 4, ... up to the host's cores, at most 16.
  std::vector<staging_point> staging;
  measured register_ms_per_gib;    ///< cudaHostRegister
  measured unregister_ms_per_gib;  ///< cudaHostUnregister
  /// The link's peak rates, taken from the pinned and both-direction trains above.
  link_peaks peaks;

  /// \var probe_measurements::d2h_pinned
  /// D2H copies into pinned host memory.
  /// \var probe_measurements::h2d_pageable
  /// H2D copies from pageable host memory (fewer sizes and reps than pinned).
  /// \var probe_measurements::d2h_pageable
  /// D2H copies into pageable host memory (fewer sizes and reps than pinned).
};

/// Measures the current device; throws cuda_error, or overlap::error when
/// there is no CUDA device ("no CUDA device").
[[nodiscard]] probe_measurements run_probe(const probe_options& options);

/// Measures false_dependency_test on the current device with `spin_us`
/// kernels, `reps` times per run, on min(connections in force, streams) and
/// on `streams` streams (at most 32), both issue orders. Throws cuda_error.
[[nodiscard]] false_dependency_test measure_false_dependency(unsigned streams = 32, unsigned spin_us = 2000,
                                                             unsigned reps = 5);

/// The DeviceModel the measurements describe (name: the device's), with a
/// ProbeRecord of where and when, and every figure's spread.
[[nodiscard]] DeviceModel model_from_probe(const probe_measurements& m);

/// The measurements as JSON (kept in the model file under probe.raw).
[[nodiscard]] std::string to_json(const probe_measurements& m);

}  // namespace overlap::probe
