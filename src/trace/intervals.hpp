// Sets of time intervals, as the communication figures and HTA count them:
// merged where they overlap, their length, and the time two sets share.
// Times of any arithmetic type (CUPTI's nanoseconds, a Timeline's ms).
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace overlap::trace::detail {

template <typename T>
using Intervals = std::vector<std::pair<T, T>>;

/// `spans` sorted and merged where they touch or overlap: disjoint, in order.
template <typename T>
[[nodiscard]] Intervals<T> merged(Intervals<T> spans) {
  std::sort(spans.begin(), spans.end());
  Intervals<T> out;
  for (const auto& [start, end] : spans) {
    if (!out.empty() && start <= out.back().second) {
      out.back().second = std::max(out.back().second, end);
    } else {
      out.emplace_back(start, end);
    }
  }
  return out;
}

/// The time disjoint `spans` cover.
template <typename T>
[[nodiscard]] T length(const Intervals<T>& spans) {
  T total{};
  for (const auto& [start, end] : spans) total += end - start;
  return total;
}

/// The time two sets of disjoint, sorted intervals (merged()) share.
template <typename T>
[[nodiscard]] T intersection(const Intervals<T>& a, const Intervals<T>& b) {
  T total{};
  std::size_t j = 0;
  for (const auto& [start, end] : a) {
    while (j < b.size() && b[j].second <= start) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < end; ++k)
      total += std::min(end, b[k].second) - std::max(start, b[k].first);
  }
  return total;
}

}  // namespace overlap::trace::detail
