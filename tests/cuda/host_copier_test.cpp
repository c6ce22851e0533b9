// The staged Pipeline's host copy pool (src/cuda/host_copier.hpp) and its
// streaming-store copy: host C++ only, so it runs without a GPU. Every byte
// of every copy is checked, over sizes below, at and above the split and odd
// ones, at every source and destination alignment, with back-to-back copies
// (the workers catch each round while spinning) and copies after a pause
// (they catch it asleep), with more threads than cores, and pools made and
// destroyed while idle.
#include "host_copier.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "streaming_copy.hpp"

namespace {

using overlap::cuda::detail::copy_streaming;
using overlap::cuda::detail::host_copier;
using overlap::cuda::detail::host_stores;

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> v(n);
  for (std::uint8_t& b : v) b = static_cast<std::uint8_t>(byte(gen));
  return v;
}

TEST(StreamingCopy, CopiesEveryByteAtEveryAlignment) {
  const std::vector<std::uint8_t> from = random_bytes(5000, 3);
  for (const std::size_t n : {0UL, 1UL, 15UL, 16UL, 63UL, 64UL, 65UL, 200UL, 4093UL}) {
    for (std::size_t to_offset = 0; to_offset < 16; ++to_offset) {
      for (const std::size_t from_offset : {0UL, 1UL, 7UL, 16UL}) {
        std::vector<std::uint8_t> to(n + 40, 0x5A);
        copy_streaming(to.data() + to_offset, from.data() + from_offset, n);
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < to.size(); ++i) {
          const bool inside = i >= to_offset && i < to_offset + n;
          wrong += to[i] != (inside ? from[from_offset + i - to_offset] : 0x5A) ? 1 : 0;
        }
        EXPECT_EQ(wrong, 0U) << n << " bytes to offset " << to_offset << " from offset " << from_offset;
      }
    }
  }
}

TEST(HostCopier, CopiesEveryByteOverThreadCountsAndOddSizes) {
  const std::vector<std::size_t> sizes = {1,
                                          4093,
                                          (std::size_t{512} << 10) - 1,
                                          std::size_t{512} << 10,
                                          (std::size_t{3} << 20) + 12345,
                                          (std::size_t{9} << 20) + 7};
  for (const auto& [threads, stores] :
       {std::pair{1U, host_stores::cached}, std::pair{2U, host_stores::streaming},
        std::pair{3U, host_stores::cached}, std::pair{3U, host_stores::streaming},
        std::pair{8U, host_stores::streaming}}) {
    host_copier copier(threads, stores);
    EXPECT_EQ(copier.threads(), threads);
    std::uint32_t seed = threads;
    for (const bool pause : {false, true}) {
      for (const std::size_t n : sizes) {
        SCOPED_TRACE(testing::Message()
                     << threads << " threads, " << n << " bytes" << (pause ? ", after a pause" : ""));
        const std::vector<std::uint8_t> from = random_bytes(n + 3, ++seed);
        std::vector<std::uint8_t> to(n + 2, 0xA5);
        if (pause) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin
        copier.copy(to.data() + 1, from.data() + 3, n);
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += to[i + 1] != from[i + 3] ? 1 : 0;
        EXPECT_EQ(wrong, 0U);
        EXPECT_EQ(to.front(), 0xA5);  // nothing written outside the destination
        EXPECT_EQ(to.back(), 0xA5);
      }
    }
  }
}

TEST(HostCopier, ManyRoundsBackToBackAndIdlePoolsComeAndGo) {
  host_copier copier(4, host_stores::streaming);
  const std::vector<std::uint8_t> from = random_bytes(std::size_t{1} << 20, 7);
  std::vector<std::uint8_t> to(from.size());
  for (int round = 0; round < 200; ++round) {
    to.assign(to.size(), 0);
    copier.copy(to.data(), from.data(), from.size() - static_cast<std::size_t>(round));
    ASSERT_TRUE(std::equal(from.begin(), from.end() - round, to.begin())) << "round " << round;
  }
  // Destroyed with workers spinning, and with workers asleep.
  for (int i = 0; i < 20; ++i) {
    host_copier fresh(8);
    if (i % 2 == 0) fresh.copy(to.data(), from.data(), from.size());
  }
}

// More threads than cores: some wake late or are preempted mid-round while
// the others take their pieces; each piece is still copied exactly once.
TEST(HostCopier, MoreThreadsThanCoresCopyEveryPieceOnce) {
  const unsigned threads = 3 * std::max(std::thread::hardware_concurrency(), 2U);
  host_copier copier(threads, host_stores::cached);
  const std::vector<std::uint8_t> from = random_bytes((std::size_t{6} << 20) + 11, 21);
  std::vector<std::uint8_t> to(from.size());
  std::mt19937 gen(5);
  std::uniform_int_distribution<std::size_t> size(std::size_t{512} << 10, from.size());
  for (int round = 0; round < 100; ++round) {
    const std::size_t n = size(gen);
    to.assign(to.size(), 0);
    copier.copy(to.data(), from.data(), n);
    ASSERT_TRUE(std::equal(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(n), to.begin()))
        << "round " << round << ", " << n << " bytes";
    ASSERT_TRUE(std::all_of(to.begin() + static_cast<std::ptrdiff_t>(n), to.end(),
                            [](std::uint8_t b) { return b == 0; }))
        << "round " << round << " wrote past its " << n << " bytes";
  }
}

}  // namespace
