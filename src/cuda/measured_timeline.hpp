// A measured Timeline from timing events recorded around each work op of a
// Program, shared by Pipeline::run and Graph::run with recording::on.
// Private to src/cuda.
#pragma once

#include <vector>

#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/cuda/event.hpp"

namespace overlap::cuda::detail {

/// The Timeline of a finished run of `program`: `timing[0]` was recorded
/// before any op, then a start and an end event around each work op, in the
/// Program's op order, on the op's stream. Every event must be complete.
/// Copies in one direction start no earlier than the previous one's end (one
/// copy engine per direction); spans' solo durations are their measured ones.
[[nodiscard]] Timeline measured_timeline(const Program& program, const std::vector<event>& timing);

}  // namespace overlap::cuda::detail
