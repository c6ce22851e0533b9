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
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "overlap/core/program.hpp"

namespace overlap::check {

/// A totally ordered line of execution: a stream (id = stream_id) or the
/// host thread (id = number of streams).
using timeline_id = std::uint32_t;

/// Where an op sits: its timeline and its position on it, counting from 1.
struct Epoch {
  timeline_id timeline = 0;    ///< the stream, or the host thread
  std::uint32_t sequence = 0;  ///< 1 for the timeline's first op

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

  bool operator==(const VectorClock&) const = default;

 private:
  std::vector<std::uint32_t> components_;
};

/// Walks a Program in issue order, computing each op's vector clock.
///
/// Streaming and allocation-free per op after start-up: memory is
/// O(streams x timelines + events x timelines), whatever the program length.
/// Use it when each op's clock is needed only while it is the current op
/// (the race detector); use HappensBefore for queries between any two ops.
class ClockWalker {
 public:
  /// The walker keeps a reference to `program`, which must outlive it.
  explicit ClockWalker(const Program& program);

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
  /// The clock of the last op issued on `stream` (all zero before its first).
  [[nodiscard]] const VectorClock& stream_clock(stream_id stream) const noexcept {
    return stream_clocks_[stream];
  }
  /// Ops issued so far on `stream`.
  [[nodiscard]] std::uint32_t issued_on(stream_id stream) const noexcept { return issued_[stream]; }
  /// True when `stream` has issued work the host does not know is complete.
  [[nodiscard]] bool in_flight(stream_id stream) const noexcept {
    return host_known_[stream] < issued_[stream];
  }
  /// The record a wait or event synchronize on `event` would bind to now:
  /// the most recent one issued, if any.
  [[nodiscard]] std::optional<op_id> last_record(event_id event) const noexcept;

  /// The host thread's timeline (one past the last stream).
  [[nodiscard]] timeline_id host_timeline() const noexcept {
    return static_cast<timeline_id>(program_.streams().size());
  }
  /// Streams plus the host thread.
  [[nodiscard]] std::size_t timeline_count() const noexcept { return program_.streams().size() + 1; }

 private:
  void step_stream_op(const Op& op, op_id id);
  void step_host_op(const Op& op);

  const Program& program_;
  std::size_t next_ = 0;
  VectorClock clock_;
  Epoch epoch_;
  VectorClock host_known_;
  std::vector<VectorClock> stream_clocks_;
  std::vector<std::uint32_t> issued_;
  std::uint32_t host_calls_ = 0;
  // Join of every op issued so far, and of those on blocking streams: what a
  // device drain and the legacy barrier wait for, kept up to date per op so
  // neither costs O(streams) joins.
  VectorClock all_issued_;
  VectorClock blocking_issued_;
  std::vector<std::optional<VectorClock>> record_clocks_;
  std::vector<std::optional<op_id>> records_;
  std::optional<stream_id> legacy_;
};

/// Every op's clock, for "is a ordered before b?" between any two ops.
/// Memory is O(ops x timelines).
class HappensBefore {
 public:
  /// Computes every op's clock (one ClockWalker pass); keeps no reference to `program`.
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
