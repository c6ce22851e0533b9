// Shared helpers for the GPU tests: element types, fixed-seed random data
// that is never zero, output poisoning, exact comparison, and device memory
// readings. Host code only; the shared y = 2x + 1 stage is in axpb.hpp.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>

#include "overlap/cuda/error.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace overlap_test {

constexpr std::size_t MiB = std::size_t{1} << 20;

/// A 24-byte element with no padding, so byte-wise comparison is exact.
struct record24 {
  std::uint32_t id;
  float weight;
  double value;
  std::int64_t tag;
};
static_assert(sizeof(record24) == 24);

/// Fills `data` with values that are never zero (all bytes never zero for
/// the integer fields), from a fixed seed so failures reproduce.
inline void fill_random(std::span<std::uint8_t> data, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> byte(1, 255);
  for (auto& x : data) x = static_cast<std::uint8_t>(byte(rng));
}

inline void fill_random(std::span<float> data, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> magnitude(0.5F, 1000.0F);
  std::bernoulli_distribution negative(0.5);
  for (auto& x : data) x = negative(rng) ? -magnitude(rng) : magnitude(rng);
}

inline void fill_random(std::span<double> data, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> magnitude(0.5, 1.0e6);
  std::bernoulli_distribution negative(0.5);
  for (auto& x : data) x = negative(rng) ? -magnitude(rng) : magnitude(rng);
}

inline void fill_random(std::span<record24> data, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> id(1, 0xFFFFFFFFU);
  std::uniform_real_distribution<float> weight(0.5F, 100.0F);
  std::uniform_real_distribution<double> value(1.0, 1.0e9);
  std::uniform_int_distribution<std::int64_t> tag(1, INT64_MAX);
  for (auto& x : data) x = record24{id(rng), weight(rng), value(rng), tag(rng)};
}

/// Overwrites every byte of `data` with `pattern`, so an element the run
/// fails to write keeps a value the check can tell from a written one
/// (a run is checked under two different patterns).
template <typename T>
void poison(std::span<T> data, unsigned char pattern) {
  std::memset(static_cast<void*>(data.data()), pattern, data.size_bytes());
}

/// Compares element by element, byte-exact; names the first mismatch and
/// how many there are.
template <typename T>
::testing::AssertionResult same_bytes(std::span<const T> expected, std::span<const T> actual,
                                      std::size_t first = 0) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << expected.size() << " vs " << actual.size();
  }
  std::size_t mismatches = 0;
  std::size_t first_bad = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(T)) != 0) {
      if (mismatches == 0) first_bad = i;
      ++mismatches;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << mismatches << " of " << expected.size()
                                       << " elements differ; the first at index " << first + first_bad;
}

/// Free device memory in bytes (cudaMemGetInfo), checked.
inline std::size_t free_device_bytes() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  overlap::cuda::check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return free_bytes;
}

/// Waits for all device work and lets the stream-ordered allocator's pool
/// give freed memory back (it trims at synchronization), so free memory
/// readings compare like with like.
inline std::size_t settled_free_device_bytes() {
  overlap::cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return free_device_bytes();
}

/// Threads per block and enough blocks to cover `n` with a grid-stride loop.
constexpr unsigned threads_per_block = 256;
inline unsigned blocks_for(std::size_t n) {
  const std::size_t blocks = (n + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(blocks < 65535 ? (blocks == 0 ? 1 : blocks) : 65535);
}

/// The shape the failure tests run: 16 chunks of 64 Ki floats over 4 streams
/// and a ring of 6, so slots pass between streams with events, the hardest
/// hand-over to leave consistent when a chunk fails.
namespace ring_handover {
constexpr std::size_t elements = std::size_t{1} << 20;
constexpr std::size_t chunk_elements = std::size_t{1} << 16;
constexpr std::size_t chunks = elements / chunk_elements;

inline overlap::cuda::pipeline_options options() {
  overlap::cuda::pipeline_options o;
  o.chunk_bytes = chunk_elements * sizeof(float);
  o.streams = 4U;
  o.ring_depth = 6U;
  return o;
}
}  // namespace ring_handover

}  // namespace overlap_test
