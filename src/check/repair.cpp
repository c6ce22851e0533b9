#include "repair.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "overlap/check/races.hpp"

namespace overlap::check::detail {

ProgramEditor::ProgramEditor(const Program& original) : original_(original) {
  edited_.program = original.without_ops();
  // A repair keeps nearly every op and adds a few.
  edited_.program.reserve(original.streams().size(), original.ops().size() + original.ops().size() / 8);
  edited_.origin.reserve(original.ops().size() + original.ops().size() / 8);
}

stream_id ProgramEditor::add_stream(const std::string& base, stream_kind kind) {
  std::string name = base;
  for (int n = 2; edited_.program.find_stream(name); ++n) name = fmt::format("{}_{}", base, n);
  return edited_.program.add_stream(name, kind);
}

event_id ProgramEditor::add_event(const std::string& base) {
  std::string name = base;
  for (int n = 2; edited_.program.find_event(name); ++n) name = fmt::format("{}_{}", base, n);
  return edited_.program.add_event(name);
}

void ProgramEditor::keep(op_id op) {
  emit(original_.ops()[op], op);
}

void ProgramEditor::emit(Op op, std::optional<op_id> origin) {
  edited_.program.append(std::move(op));
  edited_.origin.push_back(origin);
}

EditedProgram ProgramEditor::finish() && {
  return std::move(edited_);
}

RacePairs race_pairs(const Program& program) {
  RacePairs pairs;
  for (const Race& r : find_races(program, RaceOptions{max_repair_races}).races)
    pairs.emplace(r.first, r.second);
  return pairs;
}

namespace {

// Where an added wait goes: before the earliest racing op of each stream
// (stream order covers the later ones) and of the host.
struct Waiter {
  op_id before = 0;  // in the repaired program
  bool host = false;
};

}  // namespace

EditedProgram restore_orderings(EditedProgram repaired, const RacePairs& original_races,
                                std::vector<RestoredOrdering>& restored) {
  const Program& p = repaired.program;
  // For each earlier op, per waiting stream (or the host: key = streams().size()),
  // the first later op that needs it.
  std::map<op_id, std::map<std::size_t, op_id>> needed;
  for (const Race& r : find_races(p, RaceOptions{max_repair_races}).races) {
    const auto a = repaired.origin[r.first];
    const auto b = repaired.origin[r.second];
    if (!a || !b || original_races.contains({std::min(*a, *b), std::max(*a, *b)})) continue;
    const Op& later = p.ops()[r.second];
    const std::size_t key = is_stream_op(later.kind) ? *later.stream : p.streams().size();
    auto [it, inserted] = needed[r.first].emplace(key, r.second);
    if (!inserted) it->second = std::min(it->second, r.second);
  }
  if (needed.empty()) return repaired;

  // A wait covers what stream order puts behind it: waiting for an op covers
  // the ops before it on its stream, and a wait before an op covers the ops
  // after it on the waiting stream (or the host). So each later op waits
  // only for the latest op of each stream not yet covered: a racy loop
  // otherwise asked for one record/wait pair per racing pair.
  struct Need {
    op_id before = 0;
    std::size_t key = 0;  // waiting stream, or the host
    op_id after = 0;
  };
  std::vector<Need> needs;
  for (const auto& [after, waiters] : needed) {
    for (const auto& [key, before] : waiters) needs.push_back({before, key, after});
  }
  std::sort(needs.begin(), needs.end(), [](const Need& x, const Need& y) {
    return x.before != y.before ? x.before < y.before : x.after > y.after;
  });
  std::map<std::pair<std::size_t, stream_id>, op_id> covered;  // (waiter, stream): latest op waited for
  ProgramEditor editor(p);
  std::map<op_id, event_id> events;  // per earlier op, the event recorded after it
  std::map<op_id, std::vector<op_id>> waits_before;
  for (const Need& n : needs) {
    const auto [it, first] = covered.try_emplace({n.key, *p.ops()[n.after].stream}, n.after);
    if (!first && it->second >= n.after) continue;
    it->second = n.after;
    if (!events.contains(n.after))
      events[n.after] = editor.add_event(fmt::format("restored_after_op{}", *repaired.origin[n.after]));
    waits_before[n.before].push_back(n.after);
  }
  std::vector<std::optional<op_id>> origin;
  auto add = [&](Op op, std::optional<op_id> from) {
    editor.emit(std::move(op), std::nullopt);
    origin.push_back(from);
  };
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (auto w = waits_before.find(i); w != waits_before.end()) {
      for (const op_id after : w->second) {
        Op wait;
        wait.event = events[after];
        const bool host = !is_stream_op(op.kind);
        wait.kind = host ? op_kind::event_synchronize : op_kind::stream_wait_event;
        if (!host) wait.stream = op.stream;
        add(std::move(wait), std::nullopt);
        restored.push_back(RestoredOrdering{*repaired.origin[after], *repaired.origin[i], host,
                                            p.streams()[*p.ops()[after].stream].name,
                                            host ? std::string() : p.streams()[*op.stream].name});
      }
    }
    add(op, repaired.origin[i]);
    if (auto e = events.find(i); e != events.end()) {
      Op record;
      record.kind = op_kind::event_record;
      record.event = e->second;
      record.stream = op.stream;
      add(std::move(record), std::nullopt);
    }
  }
  EditedProgram result = std::move(editor).finish();
  result.origin = std::move(origin);
  return result;
}

}  // namespace overlap::check::detail
