// overlap::check findings: what the checker reports, in words a user can act on.
//
// A Finding names its rule, its severity, the ops and streams involved (each
// op as "ops[3] kernel 'kernel2' on stream2", its index in issue order and
// its label), a fix sentence, and for the traps the time the model predicts
// it costs. Races are errors (the program is wrong) when every access they
// rest on is known by its bytes, warnings marked possible when one is only
// inferred; traps are warnings (the program is right but slower than it
// should be); notes on how the hardware shares itself are info. One finding
// stands for one pattern, with the count of its instances and the first few.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
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

/// One occurrence of a finding's pattern: for a race, one racing pair of ops.
struct Instance {
  std::vector<OpRef> ops;    ///< its ops, in issue order
  std::string text;          ///< this occurrence in words (for a race, which bytes each op touches)
  std::optional<Race> race;  ///< races: this pair
};

/// A finding lists at most this many of its instances; `count` counts them all.
inline constexpr std::size_t max_listed_instances = 5;

/// One thing the checker found: one pattern, however many times it occurs.
///
/// Races are grouped by what a CUDA programmer would call the same bug: the
/// same two ops (by kind and label, in the same order and with the same
/// access modes) racing, whatever the buffer or the pair of streams (a loop
/// over streams or over buffers repeats one bug). A trap rule that fires
/// several times on ops with the same labels is one finding too.
struct Finding {
  /// error for proven races, warning for traps and possible races, info for
  /// notes on how the hardware shares itself.
  severity level = severity::warning;
  std::string rule;                  ///< one of rules::*
  std::string message;               ///< what is wrong, one or two sentences
  std::vector<OpRef> ops;            ///< the ops involved (a group's: its first instance's), in issue order
  std::vector<std::string> streams;  ///< names of the streams involved (in all instances)
  std::string fix;                   ///< what to change, once for every instance
  /// Races resting on an inferred access (access_source::inferred): the ops
  /// may not touch the same bytes, so the race is possible, not proven, and
  /// at most a warning.
  bool possible = false;
  std::size_t count = 1;            ///< how many times the pattern occurs (racing pairs, trap firings)
  std::vector<Instance> instances;  ///< the first max_listed_instances occurrences, in issue order
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
/// A race as a Finding of one instance: an error, or a warning when it rests
/// on an inferred access (Race::inferred).
[[nodiscard]] Finding race_finding(const Program& program, const Race& race);

/// Races gathered into one Finding per pattern as they are found, so that a
/// program with millions of races costs memory per pattern, not per race.
class RaceGroups {
 public:
  /// Groups races of `program`, which must outlive this object.
  explicit RaceGroups(const Program& program) : program_(&program) {}
  /// Counts `race` in its pattern's group, keeping it if among the first few.
  void add(const Race& race);
  /// Racing pairs added so far.
  [[nodiscard]] std::size_t races() const noexcept { return races_; }
  /// One finding per pattern, in the order their first races were added;
  /// patterns are merged more coarsely (same labels in either order, then
  /// all races of one certainty) until at most `max_findings` remain.
  [[nodiscard]] std::vector<Finding> findings(std::size_t max_findings) const;

 private:
  struct Group {
    std::vector<Race> first;        // the first max_listed_instances races
    std::size_t count = 0;          // races in the group
    std::set<stream_id> streams;    // of either op
    std::set<std::string> buffers;  // the bytes were in
    bool mixed = false;             // merged from races between differently labelled ops
  };
  static void merge(Group& into, const Group& from);
  const Program* program_;
  std::vector<Group> groups_;                           // in first-seen order
  std::unordered_map<std::string, std::size_t> index_;  // pattern key: position in groups_
  std::size_t races_ = 0;
};

/// Merges findings of one rule whose ops have the same kinds and labels (a
/// trap fired on every iteration of a loop) into one with their count; if
/// more than `max_findings` remain, merges each rule's into one.
[[nodiscard]] std::vector<Finding> group_findings(std::vector<Finding> findings, std::size_t max_findings);

}  // namespace overlap::check
