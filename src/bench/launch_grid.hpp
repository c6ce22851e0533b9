// The grid the workload kernels are launched with. Private to src/bench.
#pragma once

#include <algorithm>
#include <cstddef>

#include "overlap/bench/kernels.hpp"

namespace overlap::bench::detail {

/// Blocks for `n` elements: one thread per element up to a grid of 2^20
/// blocks; the kernels' grid-stride loops cover the rest.
[[nodiscard]] inline unsigned blocks_for(std::size_t n) noexcept {
  const std::size_t wanted = (n + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(std::clamp<std::size_t>(wanted, 1, std::size_t{1} << 20));
}

}  // namespace overlap::bench::detail
