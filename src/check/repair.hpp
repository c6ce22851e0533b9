// Repaired programs: the trap rules' "what if it were fixed?".
//
// A trap's cost is simulate(program) - simulate(repaired program), so the
// repair must be a program a user could write and that is still correct. A
// repair often removes an ordering the program relied on without saying so
// (a barrier, a blocking copy, a device-wide sync); restore_orderings puts
// back exactly the ones the declared accesses need, as an event record after
// the earlier op and a stream wait (or, for a host-side op, an event
// synchronize) before the later one, so the repaired program has no race the
// original did not have.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "overlap/core/program.hpp"

namespace overlap::check::detail {

/// A program rebuilt op by op, remembering where each op came from.
struct EditedProgram {
  Program program;
  std::vector<std::optional<op_id>> origin;  ///< per op: the original op it copies, if any
};

/// An ordering a repair had to add back, in the original program's op ids.
struct RestoredOrdering {
  op_id after = 0;     ///< record an event after this op...
  op_id before = 0;    ///< ...and wait for it before this one
  bool host = false;   ///< the later op runs on the host: cudaEventSynchronize
  std::string stream;  ///< the earlier op's stream
  std::string waiter;  ///< the later op's stream (empty for the host)
};

/// Builds an EditedProgram from an original one.
class ProgramEditor {
 public:
  /// Starts with the original's name, time unit, streams and events, and no ops.
  explicit ProgramEditor(const Program& original);

  /// A new stream named `base` (or base_2, ... if taken).
  stream_id add_stream(const std::string& base, stream_kind kind);
  /// A new event named `base` (or base_2, ... if taken).
  event_id add_event(const std::string& base);
  /// Appends original op `op` unchanged.
  void keep(op_id op);
  /// Appends `op`, a changed copy of `origin` or (no origin) a new call.
  void emit(Op op, std::optional<op_id> origin);

  [[nodiscard]] const Program& original() const noexcept { return original_; }
  /// The program built so far.
  [[nodiscard]] EditedProgram finish() &&;

 private:
  const Program& original_;
  EditedProgram edited_;
};

/// Races a repair looks at, at most: a program racing quadratically would
/// otherwise cost quadratic memory. Past it, a repair may miss orderings to
/// restore and price the trap a little high.
inline constexpr std::size_t max_repair_races = 1'000'000;

/// Unordered pairs of original ops that race, to tell old races from new ones.
using RacePairs = std::set<std::pair<op_id, op_id>>;
/// The racing pairs of `program`, smaller id first.
[[nodiscard]] RacePairs race_pairs(const Program& program);

/// Adds record/wait pairs (or record/event-synchronize for host-side ops) so
/// that `repaired` has no race between ops copied from the original that
/// did not race there; `restored` receives what was added.
[[nodiscard]] EditedProgram restore_orderings(EditedProgram repaired, const RacePairs& original_races,
                                              std::vector<RestoredOrdering>& restored);

}  // namespace overlap::check::detail
