#include "access_history.hpp"

#include <algorithm>

namespace overlap::check::detail {

ByteRange range_of(const Access& access) noexcept {
  if (!access.size) return {access.offset, ByteRange::unbounded};
  const std::uint64_t room = ByteRange::unbounded - access.offset;
  return {access.offset, access.offset + std::min(*access.size, room)};
}

ByteRange intersect(ByteRange a, ByteRange b) noexcept {
  return {std::max(a.begin, b.begin), std::min(a.end, b.end)};
}

bool conflict(const Access& a, const Access& b) noexcept {
  if (a.mode == access_mode::read && b.mode == access_mode::read) return false;
  return a.buffer == b.buffer && !intersect(range_of(a), range_of(b)).empty();
}

bool conflict(const Op& a, const Op& b) noexcept {
  for (const Access& x : a.accesses) {
    for (const Access& y : b.accesses) {
      if (conflict(x, y)) return true;
    }
  }
  return false;
}

BufferHistory::BufferHistory() {
  segments_.emplace(0, Segment{});  // one empty segment covers every byte
}

BufferHistory::Segments::iterator BufferHistory::first_segment(ByteRange range) {
  auto it = segments_.upper_bound(range.begin);
  return std::prev(it);  // the segment holding range.begin: key 0 always exists
}

// Splitting copies the lanes so both halves remember the same accesses.
void BufferHistory::split_at(std::uint64_t at) {
  if (at == ByteRange::unbounded) return;
  auto it = std::prev(segments_.upper_bound(at));
  if (it->first == at) return;
  segments_.emplace_hint(std::next(it), at, it->second);
}

void BufferHistory::append(std::vector<PastAccess>& list, std::size_t& after_prune, PastAccess past,
                           std::uint32_t forgettable) {
  // Forget what the host has waited for once the list has doubled since the
  // last time: amortized O(1), and memory stays bounded by a program's syncs.
  if (list.size() >= 64 && list.size() >= 2 * after_prune) {
    const auto keep =
        std::find_if(list.begin(), list.end(), [&](const PastAccess& p) { return p.sequence > forgettable; });
    list.erase(list.begin(), keep);
    after_prune = list.size();
  }
  list.push_back(past);
}

void BufferHistory::record(ByteRange range, access_mode mode, Epoch epoch, PastAccess past,
                           const VectorClock& host_known) {
  split_at(range.begin);
  split_at(range.end);
  for (auto it = segments_.find(range.begin); it != segments_.end() && it->first < range.end; ++it) {
    Segment& segment = it->second;
    auto lane = std::find_if(segment.begin(), segment.end(),
                             [&](const Lane& l) { return l.timeline == epoch.timeline; });
    if (lane == segment.end()) {
      segment.push_back(Lane{epoch.timeline, {}, {}, 0, 0});
      lane = std::prev(segment.end());
    }
    const std::uint32_t forgettable = host_known[epoch.timeline];
    if (mode == access_mode::write) {
      append(lane->writes, lane->writes_after_prune, past, forgettable);
    } else {
      append(lane->reads, lane->reads_after_prune, past, forgettable);
    }
  }
}

}  // namespace overlap::check::detail
