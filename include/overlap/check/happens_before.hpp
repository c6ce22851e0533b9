// overlap::check happens-before: which ops of a Program are ordered.
//
// CUDA orders the work of a stream program by a handful of rules, the same
// ones overlap::sim implements: each stream runs its ops in order; a
// cudaStreamWaitEvent orders its stream after the most recent record of the
// event issued before the wait (none: it orders nothing); the legacy default
// stream waits for all prior work on blocking streams (blocking and
// per-thread default ones) and later work on those waits for it; the host
// thread runs its calls one at a time, so everything it has done precedes
// every op it issues later, and a call that blocks it (a stream, event or
// device synchronize, a synchronous or pageable copy, an allocation or free)
// adds the device work it waited for to what it has done.
//
// Those rules make each stream and the host thread a *timeline*: a chain of
// ops in which every op precedes the next. A vector clock per op (one
// component per timeline, the last position on it known to precede the op)
// then answers "does a happen before b?" in O(1): exactly when b's clock
// covers a's position. ClockWalker computes the clocks in one pass in issue
// order (every rule points from an earlier-issued op to a later one, so
// issue order is a topological order) at O(timelines) per op; HappensBefore
// keeps all of them for random queries.
//
// Only streams that issue work are timelines (Timelines maps them densely):
// a stream with no ops has no position anyone could cover, and giving it a
// component anyway made every clock as wide as the declared stream count, so
// a program declaring a million streams but using four needed terabytes.
// What remains is still quadratic (clocks x timelines), so the walker sizes
// its clocks before allocating them and refuses, as bad input, a program
// whose clocks would pass clock_budget_bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "overlap/core/program.hpp"

namespace overlap::check {

/// A totally ordered line of execution: a stream that issues at least one op,
/// or the host thread. Ids are dense (see Timelines), not stream ids.
using timeline_id = std::uint32_t;

/// The most memory the vector clocks of one ClockWalker or HappensBefore may
/// take: 2 GiB. Clock memory grows as clocks x timelines, so a program with
/// tens of thousands of busy streams would otherwise run the machine out of
/// memory (or get killed) before printing anything; refusing it with a
/// message is the useful answer. 2 GiB leaves room for the rest of a check
/// (the Program, the simulated timeline, repaired copies) on an ordinary
/// workstation; a walker fits programs of up to about 23,000 busy streams.
inline constexpr std::uint64_t clock_budget_bytes = std::uint64_t{2} << 30;

/// Which timeline each stream is, built in one pass over the ops (stopping
/// once every stream has shown work) and one over the streams. Streams with
/// work get ids 0, 1, ... in stream-id order (so a program that uses every
/// stream keeps timeline == stream id); streams with no ops get none; the
/// host thread comes last.
class Timelines {
 public:
  /// Maps `program`'s streams; keeps no reference to it.
  explicit Timelines(const Program& program);

  /// The timeline of `stream`, or nullopt when it issues no op.
  [[nodiscard]] std::optional<timeline_id> of(stream_id stream) const noexcept {
    const timeline_id t = of_stream_[stream];
    return t == none ? std::nullopt : std::optional<timeline_id>(t);
  }
  /// The host thread's timeline: one past the last stream's.
  [[nodiscard]] timeline_id host() const noexcept { return static_cast<timeline_id>(streams_.size()); }
  /// Number of timelines: streams with work plus the host thread.
  [[nodiscard]] std::size_t size() const noexcept { return streams_.size() + 1; }
  /// The streams with work, ascending; timeline t is streams_with_work()[t].
  [[nodiscard]] const std::vector<stream_id>& streams_with_work() const noexcept { return streams_; }

 private:
  static constexpr timeline_id none = ~timeline_id{0};
  std::vector<timeline_id> of_stream_;  // per stream_id; none: no ops
  std::vector<stream_id> streams_;
};

/// Bytes of vector-clock components `clocks` clocks over `timelines`
/// timelines take (4 bytes each), saturating at UINT64_MAX instead of
/// wrapping.
[[nodiscard]] std::uint64_t clock_bytes(std::uint64_t clocks, std::uint64_t timelines) noexcept;

/// Throws overlap::invalid_input, one line saying what `clocks` clocks over
/// `timelines` would need and the limit, when that passes clock_budget_bytes.
void require_clock_budget(std::uint64_t clocks, const Timelines& timelines);

/// Where an op sits: its timeline and its position on it, counting from 1.
struct Epoch {
  timeline_id timeline = 0;    ///< the stream's timeline, or the host thread's
  std::uint32_t sequence = 0;  ///< 1 for the timeline's first op

  /// Equal when both name the same position.
  bool operator==(const Epoch&) const = default;
};

/// Per timeline, the last position known to happen before (or be) an op.
class VectorClock {
 public:
  /// A clock over no timelines (assign a sized one before use).
  VectorClock() = default;
  /// A clock that knows nothing, over `timelines` timelines.
  explicit VectorClock(std::size_t timelines) : components_(timelines, 0) {}

  /// The last position on `timeline` this clock covers (0: none).
  [[nodiscard]] std::uint32_t operator[](timeline_id timeline) const noexcept {
    return components_[timeline];
  }
  /// True when the op at `epoch` happens before (or is) the op of this clock.
  [[nodiscard]] bool covers(Epoch epoch) const noexcept {
    return components_[epoch.timeline] >= epoch.sequence;
  }
  /// Componentwise maximum: afterwards this clock covers what either did.
  void join(const VectorClock& other) noexcept;
  /// Marks the op at `epoch` as this clock's own position.
  void place(Epoch epoch) noexcept { components_[epoch.timeline] = epoch.sequence; }
  /// Number of timelines.
  [[nodiscard]] std::size_t size() const noexcept { return components_.size(); }

  /// Equal when both have the same components.
  bool operator==(const VectorClock&) const = default;

 private:
  std::vector<std::uint32_t> components_;
};

/// Walks a Program in issue order, computing each op's vector clock.
///
/// Streaming and allocation-free per op after start-up: memory is
/// O((streams with work + events) x timelines), whatever the program length
/// and however many streams sit unused. Use it when each op's
/// clock is needed only while it is the current op (the race detector); use
/// HappensBefore for queries between any two ops.
class ClockWalker {
 public:
  /// The walker keeps a reference to `program`, which must outlive it.
  /// Throws overlap::invalid_input when its clocks would pass
  /// clock_budget_bytes (see clocks_needed), before allocating them.
  explicit ClockWalker(const Program& program);
  /// The same, reusing a mapping of `program` already built (HappensBefore
  /// maps the program first to size all of its memory at once).
  ClockWalker(const Program& program, Timelines timelines);

  /// The most clocks a walker over `program`, mapped as `timelines`, keeps:
  /// one per stream with work, one per event (once recorded), and the few of
  /// its own.
  [[nodiscard]] static std::uint64_t clocks_needed(const Program& program,
                                                   const Timelines& timelines) noexcept;

  /// True when every op has been stepped over.
  [[nodiscard]] bool done() const noexcept { return next_ >= program_.ops().size(); }
  /// The op the next step() processes.
  [[nodiscard]] op_id next() const noexcept { return static_cast<op_id>(next_); }
  /// Processes the next op and returns its clock (valid until the next step).
  const VectorClock& step();

  /// The clock of the op last stepped over.
  [[nodiscard]] const VectorClock& clock() const noexcept { return clock_; }
  /// The epoch of the op last stepped over.
  [[nodiscard]] Epoch epoch() const noexcept { return epoch_; }

  /// What the host thread knows has happened by now (its own calls and the
  /// device work it waited for). Every op issued from now on is ordered after
  /// all of it, so an access it covers can never race again.
  [[nodiscard]] const VectorClock& host_known() const noexcept { return host_known_; }
  /// The clock of the last op issued on `stream` (all zero before its first,
  /// and always for a stream with no ops).
  [[nodiscard]] const VectorClock& stream_clock(stream_id stream) const noexcept {
    const auto t = timelines_.of(stream);
    return t ? stream_clocks_[*t] : zero_;
  }
  /// Ops issued so far on `stream`.
  [[nodiscard]] std::uint32_t issued_on(stream_id stream) const noexcept {
    const auto t = timelines_.of(stream);
    return t ? issued_[*t] : 0;
  }
  /// True when `stream` has issued work the host does not know is complete.
  [[nodiscard]] bool in_flight(stream_id stream) const noexcept {
    const auto t = timelines_.of(stream);
    return t && host_known_[*t] < issued_[*t];
  }
  /// The record a wait or event synchronize on `event` would bind to now:
  /// the most recent one issued, if any.
  [[nodiscard]] std::optional<op_id> last_record(event_id event) const noexcept;

  /// Which timeline each stream is. Its streams_with_work() are the only
  /// streams that can ever be in_flight(), so rules asking "which streams
  /// have work in flight?" visit those, not every declared stream.
  [[nodiscard]] const Timelines& timelines() const noexcept { return timelines_; }
  /// The host thread's timeline (one past the last stream with work).
  [[nodiscard]] timeline_id host_timeline() const noexcept { return timelines_.host(); }
  /// Streams with work plus the host thread.
  [[nodiscard]] std::size_t timeline_count() const noexcept { return timelines_.size(); }

 private:
  void step_stream_op(const Op& op, op_id id);
  void step_host_op(const Op& op);

  const Program& program_;
  Timelines timelines_;
  std::size_t next_ = 0;
  VectorClock clock_;
  Epoch epoch_;
  VectorClock host_known_;
  VectorClock zero_;                        // stream_clock() of a stream with no ops
  std::vector<VectorClock> stream_clocks_;  // per timeline
  std::vector<std::uint32_t> issued_;       // per timeline
  std::uint32_t host_calls_ = 0;
  // Join of every op issued so far, and of those on blocking streams: what a
  // device drain and the legacy barrier wait for, kept up to date per op so
  // neither costs O(streams) joins.
  std::vector<VectorClock> all_issued_;       // per device: every op issued there so far
  std::vector<VectorClock> blocking_issued_;  // per device: its blocking streams' ops
  std::vector<std::optional<VectorClock>> record_clocks_;
  std::vector<std::optional<op_id>> records_;
  std::vector<std::optional<timeline_id>> legacy_;  // per device: its legacy default stream, when it has work
};

/// Every op's clock, for "is a ordered before b?" between any two ops.
/// Memory is O(ops x timelines), timelines counting only streams with work.
class HappensBefore {
 public:
  /// Computes every op's clock (one ClockWalker pass); keeps no reference to
  /// `program`. Throws overlap::invalid_input, before allocating any clock,
  /// when its clocks and its walker's would together pass clock_budget_bytes.
  explicit HappensBefore(const Program& program);

  /// True when `before` happens before `after` (an op does not precede itself).
  [[nodiscard]] bool ordered(op_id before, op_id after) const noexcept;
  /// True when neither op happens before the other.
  [[nodiscard]] bool concurrent(op_id a, op_id b) const noexcept {
    return a != b && !ordered(a, b) && !ordered(b, a);
  }
  /// Where `op` sits on its timeline.
  [[nodiscard]] Epoch epoch(op_id op) const noexcept { return epochs_[op]; }
  /// What happens before `op` (and `op` itself).
  [[nodiscard]] const VectorClock& clock(op_id op) const noexcept { return clocks_[op]; }
  /// Number of ops.
  [[nodiscard]] std::size_t size() const noexcept { return clocks_.size(); }

 private:
  std::vector<VectorClock> clocks_;
  std::vector<Epoch> epochs_;
};

}  // namespace overlap::check
