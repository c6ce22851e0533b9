// overlap::trace::audit: what kills concurrency in a real run, what it cost, and what a repair saves.
//
// The captured Program goes through the checker (overlap::check): races, and
// traps priced on a device model as simulate(program) - simulate(repaired).
// The audit adds what only a real run shows: for each finding its cost as
// measured in the trace (how long the barrier held streams back, how long the
// host sat blocked in pageable or synchronous copies, allocations, device-wide
// syncs), idle gaps of the whole device with a host call in flight, and a
// verdict: what bounds the program (copy engines, compute, host issue or
// synchronization) and the floor it could reach.
//
//   const Capture run = capture(load_trace("trace.123.jsonl"));
//   const AuditReport report = audit(run, DeviceModel::preset("h100"));
//   std::cout << format_text(report);
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "overlap/check/check.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/communication.hpp"
#include "overlap/trace/phases.hpp"

namespace overlap::trace {

/// Rules only a measured run can apply (the others are overlap::check::rules).
namespace rules {
/// The whole device sat idle while the host was inside a CUDA call.
inline constexpr std::string_view idle_gap = "idle-gap";
/// A kernel's first launch waited for its module to load (lazy loading)
/// while other work ran, and the kernel started late.
inline constexpr std::string_view lazy_module_load = "lazy-module-load";
/// An edge of a launched CUDA graph orders two nodes that touch no common
/// bytes and could have run at once (stream capture chains every call).
inline constexpr std::string_view graph_serialized_nodes = "graph-serialized-nodes";
/// Collective (NCCL) kernels on a stream that also runs compute kernels:
/// communication waits for compute and compute for communication.
inline constexpr std::string_view serialized_communication = "serialized-communication";
}  // namespace rules

/// What to report.
struct AuditOptions {
  /// Idle gaps of the whole device shorter than this are not reported (ms).
  double idle_gap_threshold = 0.1;
  /// Which traps the checker lists at all: min_time_lost_fraction is of the
  /// steady state. 0 (the default): every trap the model prices above
  /// rounding is listed, and its severity follows min_saving_fraction.
  check::TrapOptions traps{.min_time_lost_fraction = 0.0};
  /// A trap (or idle gap) is a warning only when its predicted saving is at
  /// least this fraction of the steady state's length; below that it is info.
  /// Idle gaps below it are not reported at all.
  double min_saving_fraction = 0.01;
  /// The same threshold in milliseconds; when set, it replaces min_saving_fraction.
  std::optional<double> min_saving_ms;
  /// How the steady state is found (--range).
  PhaseOptions phases;
  /// Findings reported at most (one per pattern; patterns merge more
  /// coarsely beyond it, see check::CheckOptions::max_findings): a report fits a screen.
  std::size_t max_findings = 20;
};

/// An op as the audit shows it: the call that issued it and where from.
struct AuditOp {
  op_id id = 0;        ///< its index in Capture::program, in issue order
  std::string kind;    ///< to_string(op_kind)
  std::string api;     ///< "cudaMemcpyAsync"
  std::string label;   ///< "H2D", the kernel's name
  std::string stream;  ///< stream name, empty for host calls
  std::string caller;  ///< the first frame outside CUDA, when symbols allow
  std::string text;    ///< "ops[12] copy 'H2D' on stream 14 (cudaMemcpyAsync from main+0x1a)"
};

/// What a finding cost in the traced run.
struct MeasuredCost {
  double time = 0.0;  ///< milliseconds
  std::string text;   ///< "the host sat blocked 41.2 ms in 32 pageable copies"
  /// How many of the pattern's calls the cost counts: all of them in the
  /// run, not only the few a finding lists (in the steady state when the
  /// cost is the steady state's). Zero means the pattern never happened there.
  std::size_t calls = 0;
};

/// One occurrence of a finding's pattern (for a race, one racing pair of ops).
struct AuditInstance {
  std::vector<AuditOp> ops;  ///< its ops, in issue order
  std::string text;          ///< the occurrence in words
};

/// One thing the audit found: one pattern, however many times it occurs.
struct AuditFinding {
  /// error for proven races, warning for possible races, traps and idle
  /// gaps, info for notes on the hardware.
  check::severity level = check::severity::warning;
  std::string rule;  ///< one of check::rules or trace::rules
  /// "certain", or "possible" for races resting on a kernel's accesses,
  /// which are inferred from its pointer parameters (at most warnings).
  std::string certainty = "certain";
  std::size_t count = 1;                 ///< how many times the pattern occurs (racing pairs of ops, ...)
  std::vector<AuditInstance> instances;  ///< the first few occurrences, in issue order
  std::string message;                   ///< what is wrong, in sentences
  std::string fix;                       ///< what to change
  std::vector<AuditOp> ops;              ///< the ops involved (a group's first instance's), in issue order
  std::vector<std::string> streams;      ///< names of the streams involved
  std::optional<MeasuredCost> measured;  ///< what it cost in the trace, where the trace shows it
  /// Predicted on the device model: simulate(captured) - simulate(repaired).
  std::optional<double> predicted_saving;
};

/// What bounds the run, and how far it is from that bound.
struct Verdict {
  /// What bounds the steady state, one of "copy engines", "compute", "host
  /// issue", "host synchronization", "false serialization", "launch latency".
  std::string bound;
  double total = 0.0;  ///< the measured run, ms, from the first CUDA call
  /// From the first device work's start to the last one's end, ms: the run
  /// without the process's set-up before it and host work after it.
  double active = 0.0;
  double floor = 0.0;  ///< the busiest engine's (or the host's issue) time, ms
  std::string text;    ///< the verdict in sentences, with what repairing the findings saves
  /// The steady state's length, ms: what the bound, the floor and the
  /// metrics are about (see AuditReport::phases).
  double steady = 0.0;
};

/// What one host thread did in the steady state, ms.
struct HostThreadUse {
  std::string name;      ///< Timeline::host_threads' name: "host", "host thread 2 (tid 4242)"
  double issuing = 0.0;  ///< in calls that issue or order work (the host-issue bound is judged on this)
  double blocked = 0.0;  ///< waiting for the device: synchronizing calls, blocking copies, polling
  double polling = 0.0;  ///< the part of `blocked` spent polling queries that returned not-ready
  double work = 0.0;     ///< its own work between calls, and calls that issue nothing
};

/// How the kernels' accesses were known (`--accesses`, docs/audit.md).
struct KernelAccessCounts {
  std::size_t launches = 0;  ///< kernel ops of the captured Program
  std::size_t measured = 0;  ///< of them, with accesses measured while they ran
  /// Wall time of the measuring run of `--accesses measured`, in seconds;
  /// negative when there was none (set by the caller).
  double measuring_run_s = -1.0;
  /// "measured" when a measuring run was made or a launch has measured accesses, else "inferred".
  [[nodiscard]] const char* mode() const noexcept {
    return measuring_run_s >= 0.0 || measured > 0 ? "measured" : "inferred";
  }
};

/// The audit of one traced run.
struct AuditReport {
  std::vector<std::string> command;      ///< the app and its arguments (set by the caller)
  int exit_code = 0;                     ///< the app's exit code (set by the caller)
  std::string device_model;              ///< the model predictions were made on
  std::string gpu;                       ///< the GPU the trace ran on
  bool complete = false;                 ///< the trace ended with its footer
  std::uint64_t dropped = 0;             ///< records the tracer lost, as the footer counts them
  std::size_t calls = 0;                 ///< API calls in the trace
  std::size_t ops = 0;                   ///< ops of the captured Program
  std::size_t streams = 0;               ///< streams of the captured Program
  std::vector<AuditFinding> findings;    ///< most severe first, then in issue order
  Verdict verdict;                       ///< what bounds the run's steady state
  Phases phases;                         ///< startup, steady state and teardown
  std::vector<HostThreadUse> threads;    ///< per host thread, in the steady state
  Metrics metrics;                       ///< of the measured Timeline's steady state
  std::vector<std::string> notes;        ///< what the capture could not do
  std::string trace_format = "overlap";  ///< the trace file's format (RawTrace::format)
  StreamActivity stream_activity;        ///< per stream, over the whole run (stream_activity.hpp)
  KernelAccessCounts kernel_accesses;    ///< how kernels' accesses were known
  HostLinkTraffic link;                  ///< what crossed the host link, by who moved it (whole run)
  /// Collective kernels against compute in the steady state (communication.hpp);
  /// empty when no collective kernel ran there.
  std::optional<CommunicationUse> communication;

  /// Findings of exactly severity `level`.
  [[nodiscard]] std::size_t count(check::severity level) const noexcept;
  /// True when some finding is at `level` or above.
  [[nodiscard]] bool fails(check::severity level) const noexcept;
};

/// Audits a captured run; predictions use `uncalibrated` with what the run
/// measured put in (see calibrate()), and each change is a note.
[[nodiscard]] AuditReport audit(const Capture& run, const DeviceModel& uncalibrated,
                                const AuditOptions& options = {});

/// The report for people.
[[nodiscard]] std::string format_text(const AuditReport& report,
                                      check::severity fail_on = check::severity::warning);
/// The report as JSON (docs/audit.md lists the fields).
[[nodiscard]] std::string format_json(const AuditReport& report,
                                      check::severity fail_on = check::severity::warning);
/// The report's lines on the run's phases, as format_text writes them: the
/// startup with where its time went, the steady state with how it was found,
/// the teardown, then what each host thread did in the steady state; one
/// line each, without line ends (the HTML report lists them above its chart).
[[nodiscard]] std::vector<std::string> phase_lines(const AuditReport& report);

}  // namespace overlap::trace
