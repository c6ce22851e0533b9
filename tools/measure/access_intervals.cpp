// Tables to intervals to records: see access_intervals.hpp.
#include "access_intervals.hpp"

#include <algorithm>
#include <span>

#include "record_writer.hpp"

namespace overlap::measure {

namespace {

void take_slots(std::span<const AccessSlot> slots, unsigned shift, LaunchAccesses& out) {
  for (const AccessSlot& slot : slots) {
    if (slot.key == 0) continue;
    const std::uint32_t low = ~slot.not_low;
    if (slot.high <= low) continue;  // claimed, bounds not yet written: cannot happen once the launch ended
    const std::uint64_t tagged = slot.key - 1U;
    const std::uint64_t base = (tagged >> 1U) << shift;
    auto& into = (tagged & 1U) == mode_write ? out.writes : out.reads;
    into.push_back({base + low, base + slot.high});
  }
}

void flatten(const std::vector<Interval>& intervals, std::vector<std::uint64_t>& flat) {
  flat.clear();
  flat.reserve(intervals.size() * 2);
  for (const Interval& i : intervals) {
    flat.push_back(i.begin);
    flat.push_back(i.end - i.begin);
  }
}

}  // namespace

void merge_intervals(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::size_t kept = 0;
  for (const Interval& i : intervals) {
    if (kept > 0 && i.begin <= intervals[kept - 1].end) {
      intervals[kept - 1].end = std::max(intervals[kept - 1].end, i.end);
    } else {
      intervals[kept++] = i;
    }
  }
  intervals.resize(kept);
}

LaunchAccesses read_table(const AccessTable& table) {
  LaunchAccesses out;
  take_slots(table.fine, fine_shift, out);
  take_slots(table.coarse, coarse_shift, out);
  out.lost = table.lost;
  if (table.lost > 0) {
    for (const unsigned mode : {mode_read, mode_write}) {
      const std::uint64_t low = ~table.not_hull_low[mode];
      if (table.hull_high[mode] > low)
        (mode == mode_write ? out.writes : out.reads).push_back({low, table.hull_high[mode]});
    }
  }
  merge_intervals(out.reads);
  merge_intervals(out.writes);
  return out;
}

void append_launch_record(std::string& line, std::uint64_t seq, std::string_view kernel,
                          const LaunchAccesses& accesses, const inject::PointerArgs& args,
                          std::string_view graph) {
  std::vector<std::uint64_t> flat;
  inject::JsonLine record(line, "launch");
  record.number("seq", seq).string("kernel", kernel);
  flatten(accesses.reads, flat);
  record.numbers("reads", flat);
  flatten(accesses.writes, flat);
  record.numbers("writes", flat);
  if (accesses.lost > 0) record.number("lost", accesses.lost);
  if (!args.params.empty()) record.numbers("ptrs", args.params);
  if (!args.in_structs.empty()) record.numbers("sptrs", args.in_structs);
  if (!graph.empty()) record.string("graph", graph);
  record.finish();
}

}  // namespace overlap::measure
