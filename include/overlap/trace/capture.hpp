// overlap::trace::capture: a traced process as a Program and its measured Timeline.
//
// The host's API calls, in the order it made them, become the ops of a
// Program: streams with their real kinds, copies with bytes, direction and
// host memory kind, kernels with their measured durations, event records
// and waits, synchronizations, allocations and frees (with the host time
// they cost once the device drained), and the host's own time between calls
// as host work. The device work CUPTI measured becomes a Timeline of the same
// ops, so the checker, the simulator and every exporter apply to a real run,
// and the simulation of the Program can be compared with what happened.
//
// Accesses come from pointers: a copy writes its destination and reads its
// source, byte for byte. A kernel is assumed to read and write, from each of
// its 8-byte parameters that points into an allocation, the part starting
// there: up to the next pointer into that allocation the trace shows used as
// a start (by a kernel, copy or memset), no further than a copy or memset
// starting at that very pointer reaches, else to the allocation's end (so
// `kernel<<<g, b, 0, s[i]>>>(d + i * n)` on several streams touches disjoint
// slices). Those accesses are marked access_source::inferred. After each
// synchronizing call the host is assumed to read what the device-to-host
// copies it waited for wrote (a trace cannot see host loads). So races on
// kernels are "possible" (warnings), while races between copies are certain.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/trace/stream_activity.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace {

/// How to turn host time into ops.
struct CaptureOptions {
  /// Host time between calls shorter than this is carried to the next gap
  /// rather than becoming an op of its own (milliseconds).
  double min_host_work = 0.01;
  /// A call outside the modelled families (cudaHostRegister, cudaGetDevice...)
  /// at least this long becomes a host-work op of its own, labelled with the
  /// API name, so a rule can point at it (milliseconds).
  double min_call_op = 0.02;
  /// Host time the device model charges for an asynchronous call (its
  /// api_call_cost). What such a call took beyond it (a first launch loading
  /// its module, a first copy setting up the context) becomes host work
  /// before the op, so the simulated host keeps the measured pace.
  double modeled_call_cost = 0.003;
  /// Pageable copies take their time from the device model (so a repair
  /// that pins them is timed at pinned speed); pinned copies, memsets and
  /// kernels keep their measured times. True: every copy from the model.
  bool copies_from_model = false;
};

/// Where an op came from.
struct OpOrigin {
  std::optional<std::size_t> call;  ///< index into RawTrace::calls; empty for synthesized ops
  std::string api;                  ///< the API call, or what the op stands for ("host work")
  std::string caller;               ///< the call's caller, when known
  double call_start = 0.0;          ///< host time of the call, milliseconds from the trace start
  double call_end = 0.0;            ///< when the call returned, milliseconds from the trace start
  /// The op was synthesized: host time between calls, or the host reading
  /// results after a synchronize.
  bool synthesized = false;
  /// Kernels: some pointer parameter was found in an allocation.
  bool accesses_from_pointers = false;
  /// An allocation or free call (device, pinned, managed or stream-ordered),
  /// whether it synchronized (an implicit-sync op) or not (host work).
  bool allocation = false;
  /// Host work that stands for not-ready polls in a row (cudaEventQuery and
  /// the like returning cudaErrorNotReady) on one thread: the host waiting
  /// for the device, never issue cost. call_end is the last poll's end.
  bool polling = false;
  /// A graph launch whose graph copies to or from pageable host memory: the
  /// driver stages that copy inside the launch, so the call holds the host
  /// until the graph's earlier work is done (a blocked host, not issuing).
  bool holds_host = false;
  /// The host thread that made the call: an index into Timeline::host_threads.
  std::size_t thread = 0;
};

/// An NVTX range in trace time (milliseconds from the trace start).
struct CapturedRange {
  std::string name;    ///< the range's message
  double start = 0.0;  ///< when it was pushed or started
  double end = 0.0;    ///< when it was popped or ended
};

/// What the trace measured about the device and host that a device model
/// can be calibrated with (see calibrate()).
struct Calibration {
  /// Median time from the work a blocking call waited for finishing to the
  /// host returning from it, ms.
  std::optional<double> host_wakeup_latency;
  std::size_t wakeup_samples = 0;  ///< blocking calls host_wakeup_latency is the median of
  /// Median delay from an op becoming runnable (its call returned, its
  /// stream's previous op and its engine's previous work ended) to its start,
  /// ms, for kernels.
  std::optional<double> kernel_start_latency;
  std::optional<double> copy_start_latency;  ///< the same for copies and memsets, ms
  std::size_t start_samples = 0;             ///< ops both latencies come from, kernels and copies together
  /// Median rate of host-to-device pageable copies of at least 64 KiB, GB/s: bytes over the
  /// host's time in the call from when the copy could begin (staging included).
  std::optional<double> h2d_pageable_gbps;
  std::optional<double> d2h_pageable_gbps;  ///< the same for device-to-host pageable copies, GB/s
};

/// Bytes moved across the link between host and GPU one way and the other.
struct LinkMoves {
  std::uint64_t count = 0;      ///< transfers: device records or migrations
  std::uint64_t h2d_bytes = 0;  ///< host to device
  std::uint64_t d2h_bytes = 0;  ///< device to host
  double busy_ms = 0.0;         ///< their durations summed (transfers may overlap one another)
};

/// Kernels that touched host memory (pinned memory the device maps:
/// zero-copy) over the link, each byte crossing it at least once.
struct MappedAccessTraffic {
  std::uint64_t launches = 0;       ///< kernel launches that touched host memory
  std::uint64_t read_bytes = 0;     ///< distinct bytes they read (host to device)
  std::uint64_t written_bytes = 0;  ///< distinct bytes they wrote (device to host)
  /// Of `launches`, those whose bytes were inferred from a pointer
  /// parameter: counted over the extent the capture infers for it (from
  /// the pointer to the next pointer into its buffer, or the buffer's end),
  /// an estimate (`--accesses measured` counts the bytes touched).
  std::uint64_t inferred = 0;
};

/// What crossed the host link, by who moved it.
struct HostLinkTraffic {
  LinkMoves copies;      ///< copy calls and graph memcpy nodes between host and device memory
  LinkMoves prefetches;  ///< managed memory moved by cudaMemPrefetchAsync
  /// Managed memory the driver moved by itself: on page faults, speculatively, on eviction.
  LinkMoves on_demand;
  MappedAccessTraffic mapped;  ///< kernels reading and writing host memory
};

/// A traced run as the toolkit's two values, plus where each op came from.
struct Capture {
  Program program;                    ///< the host's calls as ops, in issue order; named after the executable
  Timeline timeline;                  ///< measured; one span per stream op, in issue order
  std::vector<OpOrigin> origin;       ///< per op of `program`
  std::vector<CapturedRange> ranges;  ///< the trace's NVTX ranges, in the order they ended
  std::string device;                 ///< the GPU's name, when the trace has it
  int sms = 0;                        ///< its multiprocessors, when known
  std::size_t calls = 0;              ///< API calls in the trace
  std::size_t failed_calls = 0;       ///< calls that returned an error (not turned into ops)
  std::size_t unmatched_work = 0;     ///< device work no call accounts for
  bool complete = false;              ///< the trace ended with its footer
  std::string end_reason;             ///< the footer's "exit", "signal 15" or "not traced"; empty without one
  std::uint64_t dropped = 0;          ///< records lost, as the footer counts them
  std::vector<std::string> notes;     ///< what the conversion could not do, for the report
  Calibration calibration;            ///< what the run measured, for calibrate()
  TraceEnvironment env;               ///< the traced process's environment (with_environment())
  /// From each cudaProfilerStart (cuProfilerStart) to the next Stop, in host order.
  std::vector<CapturedRange> profiled;
  /// When the first CUDA call returned, ms from the trace start: the driver
  /// loads the tracer and creates the context inside it.
  double first_call_end = 0.0;
  /// Per stream, idle time by cause and queue length, over the whole trace.
  StreamActivity stream_activity;
  std::string format = "overlap";  ///< the trace file's format (RawTrace::format)
  /// Graph launches whose structure the trace records: each op of one with
  /// an op it waits for by the graph's edges (the nearest recorded node the
  /// edges lead back to), as (before, after). Either may be on any stream.
  std::vector<std::pair<op_id, op_id>> graph_edges;
  HostLinkTraffic link;  ///< what crossed the host link, by who moved it
  /// The trace's start, the Timeline's 0, in the trace's own nanoseconds
  /// (CUPTI's clock, one for every process of a host): what lines up the
  /// traces of a job's processes (join_processes).
  std::uint64_t start_ns = 0;
};

/// `model` with what `run` measured put in: the host's wake-up latency after
/// blocking calls (when at least 3 were seen) and flat pageable copy rates.
/// `applied` receives a sentence per change, for the report.
[[nodiscard]] DeviceModel calibrate(DeviceModel model, const Capture& run,
                                    std::vector<std::string>* applied = nullptr);

/// Converts a trace. Throws overlap::invalid_input when the trace holds no
/// CUDA activity at all (no calls and no device work).
[[nodiscard]] Capture capture(const RawTrace& trace, const CaptureOptions& options = {});

/// "scale_kernel" from "_Z12scale_kernelPKfPfm" or "void scale_kernel<float>(...)":
/// the demangled name without its parameter list, template arguments kept.
[[nodiscard]] std::string short_kernel_name(const std::string& name);

}  // namespace overlap::trace
