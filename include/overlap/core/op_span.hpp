// The parts of a Timeline span that follow from its op alone, shared by
// every Timeline's maker: the simulator, measured runs (CUDA events) and
// traced processes (CUPTI).
#pragma once

#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap {

/// The engine `op` occupies on a GPU with a copy engine per direction (an
/// H100's): copies by direction, kernels and memsets the SMs, host functions
/// the driver's callback thread, records and waits none.
[[nodiscard]] engine engine_of(const Op& op) noexcept;

/// A span for op `id`: its kind, direction (copies), label, item, chunk,
/// stream (stream ops) and bytes, with unit = engine_of(op). Times and the
/// wait reason are the caller's.
[[nodiscard]] Span span_of(const Op& op, op_id id);

}  // namespace overlap
