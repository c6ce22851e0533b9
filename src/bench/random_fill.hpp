// Random input data that does not depend on how many threads make it.
// Private to src/bench.
#pragma once

#include <cstdint>
#include <span>

namespace overlap::bench::detail {

/// Uniform floats in [low, high); element i depends on (seed, i) alone.
/// Random data, not zeros, so a kernel that skips elements or a copy that
/// moves the wrong bytes cannot pass the check.
void fill_random(std::span<float> data, std::uint64_t seed, float low, float high);

/// Uniform 32-bit values; element i depends on (seed, i) alone.
void fill_random_bits(std::span<std::uint32_t> data, std::uint64_t seed);

}  // namespace overlap::bench::detail
