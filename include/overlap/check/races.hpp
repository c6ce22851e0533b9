// overlap::check races: pairs of ops that touch the same bytes, at least one
// writing, with nothing ordering them.
//
// Ops declare what they touch in Op::accesses (buffer, byte range, read or
// write); host-side ops (host_work) count too, so refilling a host buffer
// that an in-flight copy still reads is a race. Two accesses race when their
// byte ranges overlap, at least one writes, and neither op happens before the
// other under CUDA's ordering rules (see happens_before.hpp). The result is
// exact for those rules: every racing pair is reported, and nothing else.
//
// One pass in issue order with vector clocks and a per-buffer interval map
// of past accesses: O(ops x timelines + accesses x log segments + races).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/program.hpp"

namespace overlap::check {

/// Two unordered ops touching the same bytes, at least one writing.
struct Race {
  op_id first = 0;     ///< the op issued first
  op_id second = 0;    ///< the op issued later
  std::string buffer;  ///< the buffer both touch
  /// The bytes both accesses touch, [begin, end); no end: to the end of the buffer.
  std::uint64_t begin = 0;
  std::optional<std::uint64_t> end;              ///< one past the last byte; empty: to the end of the buffer
  access_mode first_mode = access_mode::write;   ///< how the first op touches it
  access_mode second_mode = access_mode::write;  ///< how the second op touches it
  std::uint32_t first_access = 0;                ///< index into ops[first].accesses
  std::uint32_t second_access = 0;               ///< index into ops[second].accesses
  /// One of the two accesses is only inferred (access_source::inferred): the
  /// ops may not touch these bytes at all, so the race is possible, not proven.
  /// A pair racing on exact accesses too is reported by those (inferred false).
  bool inferred = false;

  /// Equal when every field is.
  bool operator==(const Race&) const = default;
};

/// How much of the answer to collect.
struct RaceOptions {
  /// Stop after this many races (a badly racy program can have quadratically many).
  std::size_t max_races = std::numeric_limits<std::size_t>::max();
};

/// The races of a program: one per racing pair of ops (the first buffer
/// range found names it), ordered by the later op, then the earlier.
struct RaceReport {
  std::vector<Race> races;  ///< in the order described above
  bool truncated = false;   ///< max_races was reached; there may be more
};

/// Finds every pair of racing ops in `program`.
[[nodiscard]] RaceReport find_races(const Program& program, const RaceOptions& options = {});

/// Calls `visit` with each race, in find_races' order, without keeping them:
/// a racy trace can have millions, and a caller that groups them needs none
/// of them stored. Stops when `visit` returns false or after
/// options.max_races; returns true when it stopped early (there may be more).
bool visit_races(const Program& program, const std::function<bool(const Race&)>& visit,
                 const RaceOptions& options = {});

/// Thrown by require_race_free: the program has races; the message lists the first.
class race_error : public error {
 public:
  /// `message` lists the races in words; `races` are the same as values.
  race_error(const std::string& message, std::vector<Race> races)
      : error(message), races_(std::move(races)) {}
  /// The first races found (at most a handful).
  [[nodiscard]] const std::vector<Race>& races() const noexcept { return races_; }

 private:
  std::vector<Race> races_;
};

/// Throws race_error naming the first races (with the missing ordering for
/// each) if `program` has any; lets a builder check a program before issuing it.
void require_race_free(const Program& program);

}  // namespace overlap::check
