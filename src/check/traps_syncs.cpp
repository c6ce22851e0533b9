// Trap rules about host synchronization: (c) allocation and free while work
// is in flight, (d) cudaDeviceSynchronize where synchronizing some streams
// would do.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>

#include "access_history.hpp"
#include "overlap/check/happens_before.hpp"
#include "trap_context.hpp"

namespace overlap::check::detail {

namespace {

bool drains_device(op_kind kind) {
  return kind == op_kind::device_synchronize || is_implicitly_synchronizing(kind);
}

bool is_allocation(op_kind kind) {
  return kind == op_kind::device_allocate || kind == op_kind::host_allocate;
}

// Ascending. Only streams with work can have any in flight: visiting just
// those keeps a program that declares a million streams cheap.
std::vector<stream_id> in_flight_streams(const ClockWalker& walker) {
  std::vector<stream_id> streams;
  for (const stream_id s : walker.timelines().streams_with_work()) {
    if (walker.in_flight(s)) streams.push_back(s);
  }
  return streams;
}

void add_streams(Finding& f, const Program& p, const std::vector<stream_id>& streams) {
  for (const stream_id s : streams) f.streams.push_back(p.streams()[s].name);
}

/// Merged byte ranges of one buffer touched by one stream in one mode.
class RangeSet {
 public:
  void add(ByteRange r) {
    auto it = ranges_.upper_bound(r.begin);
    if (it != ranges_.begin() && std::prev(it)->second >= r.begin) {
      --it;
      r.begin = it->first;
    }
    while (it != ranges_.end() && it->first <= r.end) {
      r.end = std::max(r.end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(r.begin, r.end);
  }
  [[nodiscard]] bool overlaps(ByteRange r) const {
    auto it = ranges_.upper_bound(r.begin);
    if (it != ranges_.begin() && std::prev(it)->second > r.begin) return true;
    return it != ranges_.end() && it->first < r.end;
  }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;  // begin -> end
};

/// What each stream has touched so far, to ask "does a host access need stream s?".
class StreamCoverage {
 public:
  void add(stream_id stream, const Access& access) {
    const ByteRange r = range_of(access);
    if (!r.empty()) sets_[{access.buffer, stream}][access.mode == access_mode::write ? 1 : 0].add(r);
  }
  [[nodiscard]] bool conflicts(stream_id stream, const Access& access) const {
    const ByteRange r = range_of(access);
    const auto it = sets_.find({access.buffer, stream});
    if (r.empty() || it == sets_.end()) return false;
    return it->second[1].overlaps(r) || (access.mode == access_mode::write && it->second[0].overlaps(r));
  }

 private:
  std::map<std::pair<std::string, stream_id>, std::array<RangeSet, 2>> sets_;  // [0] reads, [1] writes
};

}  // namespace

void find_implicit_synchronization(TrapContext& context, std::vector<Finding>& findings) {
  const Program& p = context.program();
  std::vector<op_id> instances;
  std::map<op_id, std::vector<stream_id>> in_flight;
  std::size_t last_stream_op = 0;
  for (std::size_t i = 0; i < p.ops().size(); ++i) {
    if (is_stream_op(p.ops()[i].kind)) last_stream_op = i;
  }
  ClockWalker walker(p);
  while (!walker.done()) {
    const op_id i = walker.next();
    // Between pipelined ops: device work in flight now, and more issued later.
    if (is_implicitly_synchronizing(p.ops()[i].kind) && i < last_stream_op) {
      auto streams = in_flight_streams(walker);
      if (!streams.empty()) {
        instances.push_back(i);
        in_flight[i] = std::move(streams);
      }
    }
    walker.step();
  }
  if (instances.empty()) return;

  // Allocations move before the first op, frees after the last.
  ProgramEditor editor(p);
  const auto is_instance = [&](op_id i) { return in_flight.contains(i); };
  for (const op_id i : instances) {
    if (is_allocation(p.ops()[i].kind)) editor.keep(i);
  }
  for (op_id i = 0; i < p.ops().size(); ++i) {
    if (!is_instance(i)) editor.keep(i);
  }
  for (const op_id i : instances) {
    if (!is_allocation(p.ops()[i].kind)) editor.keep(i);
  }
  const RepairCost cost = context.price(std::move(editor).finish());
  if (!context.matters(cost.time_lost)) return;

  const op_id first = instances.front();
  Finding f;
  f.level = severity::warning;
  f.rule = std::string(rules::implicit_synchronization);
  f.message = fmt::format(
      "{} is issued while {} {} work in flight: allocation and free synchronize implicitly, so the host "
      "waits for the whole device to drain before the pipeline can go on",
      describe_op(p, first), stream_list(p, in_flight.at(first)),
      in_flight.at(first).size() == 1 ? "has" : "have");
  if (instances.size() > 1) f.message += fmt::format(" ({} such calls in all)", instances.size());
  f.message += ".";
  f.fix = fmt::format(
      "Allocate before the first op (ops[0]) and free after the last, or reuse the buffers across "
      "iterations.{}",
      restored_sentence(cost.restored));
  f.ops = listed_refs(p, instances);
  add_streams(f, p, in_flight.at(first));
  f.time_lost = cost.time_lost;
  findings.push_back(std::move(f));
}

void find_device_synchronize(TrapContext& context, std::vector<Finding>& findings) {
  const Program& p = context.program();
  // Without declared accesses nothing says what the host needs afterwards.
  if (!context.declares_accesses()) return;

  // The host-side accesses after each cudaDeviceSynchronize, up to the next
  // device-wide drain (which answers for what comes after it).
  std::map<op_id, std::vector<const Access*>> window;
  std::optional<op_id> open;
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (is_stream_op(op.kind)) continue;
    if (drains_device(op.kind)) open.reset();
    if (op.kind == op_kind::device_synchronize) {
      open = i;
      window[i];
      continue;
    }
    if (open) {
      for (const Access& a : op.accesses) window[*open].push_back(&a);
    }
  }
  if (window.empty()) return;

  // Keep only the streams whose work (anything issued so far: other device
  // syncs may be repaired too) a later host access touches.
  std::map<op_id, std::vector<stream_id>> needed;
  std::map<op_id, std::vector<stream_id>> in_flight;
  std::vector<op_id> instances;
  StreamCoverage coverage;
  // Streams an earlier repaired sync no longer waits for: in the repaired
  // program their work is still in flight at the next device-wide sync,
  // which the original program's clocks (drained by that earlier sync) miss.
  std::set<stream_id> left_in_flight;
  // Streams with a kernel that prints since the host last synchronized with
  // them: their output is written out at the next sync.
  std::set<stream_id> printed;
  ClockWalker walker(p);
  while (!walker.done()) {
    const op_id i = walker.next();
    const Op& op = p.ops()[i];
    if (is_implicitly_synchronizing(op.kind)) {
      left_in_flight.clear();
      printed.clear();
    }
    if (op.kind == op_kind::stream_synchronize) {
      left_in_flight.erase(*op.stream);
      printed.erase(*op.stream);
    }
    // A final device sync holds nothing back: the program ends with it.
    if (op.kind == op_kind::device_synchronize && i + 1 >= p.ops().size()) left_in_flight.clear();
    if (op.kind == op_kind::device_synchronize && i + 1 < p.ops().size()) {
      std::vector<stream_id> need;
      // Coverage holds only streams that issued work, so no other can be needed.
      for (const stream_id s : walker.timelines().streams_with_work()) {
        const auto& accesses = window.at(i);
        if (std::any_of(accesses.begin(), accesses.end(),
                        [&](const Access* a) { return coverage.conflicts(s, *a); }))
          need.push_back(s);
      }
      std::vector<stream_id> flying = in_flight_streams(walker);
      for (const stream_id s : left_in_flight) {
        if (std::find(flying.begin(), flying.end(), s) == flying.end()) flying.push_back(s);
      }
      std::sort(flying.begin(), flying.end());
      // A sync the host needs for no data but that waits for kernels that
      // print is there to show their output (device printf's buffer is
      // written out at synchronization): dropping it changes what the
      // program prints, and narrowing it is a guess about which output
      // matters. Where the host needs data, the printing streams are not
      // a reason to wait for them: their output shows at a later sync.
      const bool shows_output = need.empty() && std::any_of(flying.begin(), flying.end(),
                                                            [&](stream_id s) { return printed.contains(s); });
      printed.clear();
      const auto unneeded = [&](stream_id s) { return std::find(need.begin(), need.end(), s) == need.end(); };
      left_in_flight.clear();
      if (!shows_output && std::any_of(flying.begin(), flying.end(), unneeded)) {
        for (const stream_id s : flying) {
          if (unneeded(s)) left_in_flight.insert(s);
        }
        instances.push_back(i);
        needed[i] = std::move(need);
        in_flight[i] = std::move(flying);
      }
    } else if (is_stream_op(op.kind)) {
      for (const Access& a : op.accesses) coverage.add(*op.stream, a);
      if (op.kind == op_kind::kernel && op.prints) printed.insert(*op.stream);
    }
    walker.step();
  }
  if (instances.empty()) return;

  ProgramEditor editor(p);
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const auto n = needed.find(i);
    if (n == needed.end()) {
      editor.keep(i);
      continue;
    }
    for (const stream_id s : n->second) {
      Op sync;
      sync.kind = op_kind::stream_synchronize;
      sync.stream = s;
      editor.emit(std::move(sync), std::nullopt);
    }
  }
  const RepairCost cost = context.price(std::move(editor).finish());
  if (!context.matters(cost.time_lost)) return;

  const op_id first = instances.front();
  const std::vector<stream_id>& need = needed.at(first);
  std::vector<stream_id> spare;
  std::vector<stream_id> involved;
  for (const op_id i : instances)
    involved.insert(involved.end(), in_flight.at(i).begin(), in_flight.at(i).end());
  std::sort(involved.begin(), involved.end());
  involved.erase(std::unique(involved.begin(), involved.end()), involved.end());
  for (const stream_id s : in_flight.at(first)) {
    if (std::find(need.begin(), need.end(), s) == need.end()) spare.push_back(s);
  }
  Finding f;
  f.level = severity::warning;
  f.rule = std::string(rules::device_synchronize);
  f.message = fmt::format("{} waits for all work in flight, including {}'s, ", describe_op(p, first),
                          stream_list(p, spare));
  f.message += need.empty()
                   ? "but nothing the host does before the next device-wide sync touches it"
                   : fmt::format("but before the next device-wide sync the host touches only what {} did",
                                 stream_list(p, need));
  if (instances.size() > 1) f.message += fmt::format(" ({} such calls in all)", instances.size());
  f.message += ".";
  std::string fix;
  for (std::size_t k = 0; k < std::min<std::size_t>(instances.size(), 3); ++k) {
    const op_id i = instances[k];
    fix += k == 0 ? "" : "; ";
    if (needed.at(i).empty()) {
      fix += fmt::format("drop ops[{}]", i);
      continue;
    }
    std::string calls;
    for (const stream_id s : needed.at(i)) {
      calls += fmt::format("{}cudaStreamSynchronize({})", calls.empty() ? "" : " and ", p.streams()[s].name);
    }
    fix += fmt::format("replace ops[{}] with {}", i, calls);
  }
  if (instances.size() > 3) fix += fmt::format("; likewise the {} others", instances.size() - 3);
  fix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(fix[0])));
  f.fix = fix + "." + restored_sentence(cost.restored);
  f.ops = listed_refs(p, instances);
  add_streams(f, p, involved);
  f.time_lost = cost.time_lost;
  findings.push_back(std::move(f));
}

}  // namespace overlap::check::detail
