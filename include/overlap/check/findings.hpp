// overlap::check findings: what the checker reports, in words a user can act on.
//
// A Finding names its rule, its severity, the ops and streams involved (each
// op as "ops[3] kernel 'kernel2' on stream2", its index in issue order and
// its label), a fix sentence, and for the traps the time the model predicts
// it costs. Races are errors (the program is wrong); traps are warnings (the
// program is right but slower than it should be); notes on how the hardware
// shares itself are info.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/check/races.hpp"
#include "overlap/core/program.hpp"

namespace overlap::check {

/// How bad a finding is; ordered, so `level >= severity::warning` works.
enum class severity : std::uint8_t {
  info,     ///< how the hardware serializes work, worth knowing
  warning,  ///< a trap: correct, but costs overlap
  error,    ///< a race: the result depends on timing
};

[[nodiscard]] std::string_view to_string(severity level) noexcept;
/// Parses "info", "warning" or "error"; throws overlap::invalid_input otherwise.
[[nodiscard]] severity parse_severity(std::string_view text);

/// Rule identifiers, stable for scripts and JSON.
namespace rules {
/// Two ops touch the same bytes, at least one writing, and nothing orders them.
inline constexpr std::string_view race = "race";
/// (a) a copy or memset on the legacy default stream: a barrier for every blocking stream.
inline constexpr std::string_view legacy_default_stream = "legacy-default-stream";
/// (a') a synchronous copy (cudaMemcpy) in a program whose other streams are all
/// non-blocking: no barrier, but the host waits for it.
inline constexpr std::string_view synchronous_copy = "synchronous-copy";
/// (b) cudaMemcpyAsync from pageable memory: the host waits for it.
inline constexpr std::string_view pageable_async_copy = "pageable-async-copy";
/// (c) allocation or free while work is in flight: drains the device.
inline constexpr std::string_view implicit_synchronization = "implicit-synchronization";
/// (d) cudaDeviceSynchronize where synchronizing some streams would do.
inline constexpr std::string_view device_synchronize = "device-synchronize";
/// (e) same-direction copies on several streams, serialized on one copy engine.
inline constexpr std::string_view copy_engine_serialization = "copy-engine-serialization";
/// (f) more streams than hardware queues, with false dependencies.
inline constexpr std::string_view hardware_queue_sharing = "hardware-queue-sharing";
/// (g) a wait on an event never recorded before it: a no-op.
inline constexpr std::string_view unrecorded_event = "unrecorded-event";
}  // namespace rules

/// An op as a finding shows it.
struct OpRef {
  op_id id = 0;                       ///< its index in issue order
  std::string kind;                   ///< to_string(op_kind): "kernel", "copy", ...
  std::string label;                  ///< the op's label (with its item, if any)
  std::optional<std::string> stream;  ///< its stream's name; empty for host calls
  std::string text;                   ///< "ops[3] kernel 'kernel2' on stream2"
};

/// One thing the checker found.
struct Finding {
  /// error for races, warning for traps, info for notes on how the hardware shares itself.
  severity level = severity::warning;
  std::string rule;                  ///< one of rules::*
  std::string message;               ///< what is wrong, one or two sentences
  std::vector<OpRef> ops;            ///< the ops involved, in issue order
  std::vector<std::string> streams;  ///< names of the streams involved
  std::string fix;                   ///< what to change
  /// Traps: simulate(program) - simulate(program with the trap repaired) on
  /// the device model, in the program's time unit. 0 for a no-op wait.
  std::optional<double> time_lost;
  /// Copy-engine serialization: copy time spent queued behind the other copies.
  std::optional<double> serialized_time;
  std::optional<Race> race;  ///< set for races
};

/// "ops[3] kernel 'kernel2' on stream2"; host calls have no stream part.
[[nodiscard]] std::string describe_op(const Program& program, op_id op);
/// The OpRef of `op`.
[[nodiscard]] OpRef op_ref(const Program& program, op_id op);
/// "y" for a whole buffer, "y[16:48]" or "y[16:]" for part of one.
[[nodiscard]] std::string describe_range(std::string_view buffer, std::uint64_t begin,
                                         std::optional<std::uint64_t> end);
/// "ops[0] kernel 'kernel1' on stream1 writes y and ops[1] kernel 'kernel2'
/// on stream2 reads y, and nothing orders them".
[[nodiscard]] std::string describe_race(const Program& program, const Race& race);
/// The missing ordering: "add cudaEventRecord after ops[0] on stream1 and
/// cudaStreamWaitEvent(stream2) before ops[1]" (or a host-side wait when the
/// later op runs on the host).
[[nodiscard]] std::string race_fix(const Program& program, const Race& race);
/// A race as an error Finding.
[[nodiscard]] Finding race_finding(const Program& program, const Race& race);

}  // namespace overlap::check
