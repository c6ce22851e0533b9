// Shared by the cuda::Graph GPU tests: fixed-seed uint32 data that is never
// zero, and an element-by-element comparison that names the first mismatch.
// Host code only.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>

namespace overlap_test {

/// Fills `data` with nonzero values from `seed`, so failures reproduce.
inline void fill_random(std::span<std::uint32_t> data, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> value(1, 0xFFFFFFFFU);
  for (auto& x : data) x = value(rng);
}

/// Exact equality of every element; names the first mismatch and how many.
inline ::testing::AssertionResult same_values(std::span<const std::uint32_t> expected,
                                              std::span<const std::uint32_t> actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << expected.size() << " vs " << actual.size();
  }
  std::size_t mismatches = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i]) {
      if (mismatches == 0) first = i;
      ++mismatches;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << expected.size() << " elements differ; the first at index " << first
         << ": expected " << expected[first] << ", got " << actual[first];
}

}  // namespace overlap_test
