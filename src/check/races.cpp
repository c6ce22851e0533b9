#include "overlap/check/races.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "access_history.hpp"
#include "overlap/check/findings.hpp"
#include "overlap/check/happens_before.hpp"

namespace overlap::check {

namespace {

using detail::BufferHistory;
using detail::ByteRange;
using detail::PastAccess;

constexpr op_id no_op = std::numeric_limits<op_id>::max();

class RaceDetector {
 public:
  RaceDetector(const Program& program, const RaceOptions& options,
               const std::function<bool(const Race&)>& visit)
      : program_(program),
        options_(options),
        visit_(visit),
        walker_(program),
        reported_for_(program.ops().size(), no_op),
        slot_(program.ops().size(), 0) {}

  // Returns true when it stopped before the end (the visitor asked, or max_races).
  bool run() {
    while (!walker_.done() && !stopped_) {
      const op_id id = walker_.next();
      const VectorClock& clock = walker_.step();
      const Op& op = program_.ops()[id];
      if (op.accesses.empty()) continue;
      check(id, op, clock);
      remember(id, op);
    }
    return stopped_;
  }

 private:
  BufferHistory& history(const std::string& buffer) { return buffers_[buffer]; }

  // Every earlier access this op's accesses race with, one Race per earlier
  // op: the first conflict found names it, unless a later one rests on exact
  // accesses only, which proves the race where the first could not.
  void check(op_id id, const Op& op, const VectorClock& clock) {
    found_.clear();
    for (std::uint32_t a = 0; a < op.accesses.size(); ++a) {
      const Access& access = op.accesses[a];
      const ByteRange range = detail::range_of(access);
      if (range.empty()) continue;
      history(access.buffer).conflicts(range, access.mode, clock, [&](const PastAccess& past) {
        if (shared_argument(past, id, a)) return;
        if (reported_for_[past.op] == id) {
          Race& known = found_[slot_[past.op]];
          if (known.inferred && !inferred(past, id, a)) known = race(past, id, a);
          return;
        }
        reported_for_[past.op] = id;
        slot_[past.op] = static_cast<std::uint32_t>(found_.size());
        found_.push_back(race(past, id, a));
      });
    }
    std::sort(found_.begin(), found_.end(), [](const Race& x, const Race& y) { return x.first < y.first; });
    for (const Race& r : found_) {
      if (visited_ >= options_.max_races || !visit_(r)) {
        stopped_ = true;
        return;
      }
      ++visited_;
    }
  }

  // Two launches of one kernel given the same pointer in the same parameter,
  // both accesses inferred from it: programs share an input among the
  // launches that split the work over streams (kernel<<<..., s[i]>>>(d + i *
  // n, factor)); a kernel that wrote through such an argument would have its
  // launches write the same bytes by design, which they do atomically or in
  // parts picked by another argument, and neither is a race. Not reported:
  // what the trace shows cannot tell these apart from a real conflict, and
  // only a program wrong in its own logic would have one. A buffer passed as
  // input to one launch and output to the next (ping-pong) comes from
  // different parameters and stays a race.
  [[nodiscard]] bool shared_argument(const PastAccess& past, op_id id, std::uint32_t access_index) const {
    const Op& earlier_op = program_.ops()[past.op];
    const Op& later_op = program_.ops()[id];
    const Access& earlier = earlier_op.accesses[past.access];
    const Access& later = later_op.accesses[access_index];
    return earlier.source == access_source::inferred && later.source == access_source::inferred &&
           earlier.parameter >= 0 && earlier.parameter == later.parameter &&
           earlier_op.kind == op_kind::kernel && later_op.kind == op_kind::kernel &&
           earlier_op.label == later_op.label && earlier.offset == later.offset && earlier.size == later.size;
  }

  [[nodiscard]] bool inferred(const PastAccess& past, op_id id, std::uint32_t access_index) const {
    return program_.ops()[past.op].accesses[past.access].source == access_source::inferred ||
           program_.ops()[id].accesses[access_index].source == access_source::inferred;
  }

  Race race(const PastAccess& past, op_id id, std::uint32_t access_index) const {
    const Access& earlier = program_.ops()[past.op].accesses[past.access];
    const Access& later = program_.ops()[id].accesses[access_index];
    const ByteRange shared = detail::intersect(detail::range_of(earlier), detail::range_of(later));
    Race r;
    r.first = past.op;
    r.second = id;
    r.buffer = later.buffer;
    r.begin = shared.begin;
    if (shared.end != ByteRange::unbounded) r.end = shared.end;
    r.first_mode = earlier.mode;
    r.second_mode = later.mode;
    r.first_access = past.access;
    r.second_access = access_index;
    r.inferred = inferred(past, id, access_index);
    return r;
  }

  void remember(op_id id, const Op& op) {
    for (std::uint32_t a = 0; a < op.accesses.size(); ++a) {
      const Access& access = op.accesses[a];
      const ByteRange range = detail::range_of(access);
      if (range.empty()) continue;
      history(access.buffer)
          .record(range, access.mode, walker_.epoch(), PastAccess{walker_.epoch().sequence, id, a},
                  walker_.host_known());
    }
  }

  const Program& program_;
  RaceOptions options_;
  const std::function<bool(const Race&)>& visit_;
  ClockWalker walker_;
  std::unordered_map<std::string, BufferHistory> buffers_;
  // reported_for_[a] == b: the pair (a, b) is already in found_, at slot_[a].
  std::vector<op_id> reported_for_;
  std::vector<std::uint32_t> slot_;
  std::vector<Race> found_;
  std::size_t visited_ = 0;
  bool stopped_ = false;
};

}  // namespace

bool visit_races(const Program& program, const std::function<bool(const Race&)>& visit,
                 const RaceOptions& options) {
  return RaceDetector(program, options, visit).run();
}

RaceReport find_races(const Program& program, const RaceOptions& options) {
  RaceReport report;
  report.truncated = visit_races(
      program,
      [&](const Race& r) {
        report.races.push_back(r);
        return true;
      },
      options);
  return report;
}

void require_race_free(const Program& program) {
  constexpr std::size_t shown = 3;
  RaceReport report = find_races(program, RaceOptions{shown + 1});
  if (report.races.empty()) return;
  const std::size_t count = report.races.size();
  const std::string_view name = program.name.empty() ? std::string_view("the program") : program.name;
  std::string message =
      count > shown ? fmt::format("{} is not race-free: more than {} races, the first: ", name, shown)
                    : fmt::format("{} is not race-free: {} race{}: ", name, count, count == 1 ? "" : "s");
  for (std::size_t i = 0; i < std::min(report.races.size(), shown); ++i) {
    const Race& r = report.races[i];
    message +=
        fmt::format("{}{} (fix: {})", i == 0 ? "" : "; ", describe_race(program, r), race_fix(program, r));
  }
  if (report.races.size() > shown) report.races.resize(shown);
  throw race_error(message, std::move(report.races));
}

}  // namespace overlap::check
