// What the summary and the HTML report both say about a Timeline.
#pragma once

#include <string>
#include <vector>

#include "overlap/core/metrics.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap::io::detail {

/// "Why not faster": a sentence per stall (the longest first, at most 8),
/// each naming the idle engine, the op that waited and what it waited for,
/// then "... and N more" when some are left out. Empty when no engine idled
/// while work waited.
[[nodiscard]] std::vector<std::string> why_not_faster(const Timeline& timeline, const Metrics& metrics);

}  // namespace overlap::io::detail
