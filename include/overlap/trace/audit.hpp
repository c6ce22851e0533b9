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

namespace overlap::trace {

/// Rules only a measured run can apply (the others are overlap::check::rules).
namespace rules {
/// The whole device sat idle while the host was inside a CUDA call.
inline constexpr std::string_view idle_gap = "idle-gap";
}  // namespace rules

/// What to report.
struct AuditOptions {
  /// Idle gaps of the whole device shorter than this are not reported (ms).
  double idle_gap_threshold = 0.1;
  /// Which traps to report; their minimum fraction is of the device's active window, not the whole run.
  check::TrapOptions traps;
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
};

/// One thing the audit found.
struct AuditFinding {
  /// error for races, warning for traps and idle gaps, info for notes on the hardware.
  check::severity level = check::severity::warning;
  std::string rule;  ///< one of check::rules or trace::rules
  /// "certain", or "possible" for races on kernels, whose accesses are
  /// assumed from their pointer parameters.
  std::string certainty = "certain";
  std::string message;                   ///< what is wrong, in sentences
  std::string fix;                       ///< what to change
  std::vector<AuditOp> ops;              ///< the ops involved, in issue order
  std::vector<std::string> streams;      ///< names of the streams involved
  std::optional<MeasuredCost> measured;  ///< what it cost in the trace, where the trace shows it
  /// Predicted on the device model: simulate(captured) - simulate(repaired).
  std::optional<double> predicted_saving;
};

/// What bounds the run, and how far it is from that bound.
struct Verdict {
  std::string bound;   ///< "copy engines", "compute", "host issue" or "synchronization"
  double total = 0.0;  ///< the measured run, ms, from the first CUDA call
  /// From the first device work's start to the last one's end, ms: the run
  /// without the process's set-up before it and host work after it.
  double active = 0.0;
  double floor = 0.0;  ///< the busiest engine's (or the host's issue) time, ms
  std::string text;    ///< the verdict in sentences, with what repairing the findings saves
};

/// The audit of one traced run.
struct AuditReport {
  std::vector<std::string> command;    ///< the app and its arguments (set by the caller)
  int exit_code = 0;                   ///< the app's exit code (set by the caller)
  std::string device_model;            ///< the model predictions were made on
  std::string gpu;                     ///< the GPU the trace ran on
  bool complete = false;               ///< the trace ended with its footer
  std::uint64_t dropped = 0;           ///< records the tracer lost, as the footer counts them
  std::size_t calls = 0;               ///< API calls in the trace
  std::size_t ops = 0;                 ///< ops of the captured Program
  std::size_t streams = 0;             ///< streams of the captured Program
  std::vector<AuditFinding> findings;  ///< most severe first, then in issue order
  Verdict verdict;                     ///< what bounds the run
  Metrics metrics;                     ///< of the measured Timeline
  std::vector<std::string> notes;      ///< what the capture could not do

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

}  // namespace overlap::trace
