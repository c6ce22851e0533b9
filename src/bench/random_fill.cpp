// fill_random: splitmix64 per element, spread over the host's cores.
#include "random_fill.hpp"

#include <cstddef>

#include "host_parallel.hpp"

namespace overlap::bench::detail {

namespace {

// splitmix64: element i's value depends on (seed, i) alone, so threads agree.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void fill_random_bits(std::span<std::uint32_t> data, std::uint64_t seed) {
  parallel_for(data.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) data[i] = static_cast<std::uint32_t>(mix(seed + i) >> 32);
  });
}

void fill_random(std::span<float> data, std::uint64_t seed, float low, float high) {
  parallel_for(data.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const float unit = static_cast<float>(mix(seed + i) >> 40) * 0x1p-24F;  // [0, 1)
      data[i] = low + (high - low) * unit;
    }
  });
}

}  // namespace overlap::bench::detail
