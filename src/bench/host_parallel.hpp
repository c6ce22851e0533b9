// Host work over large buffers (random fill, reference, checks), spread over
// the cores: checking 64 Mi floats after every run must not dominate the
// bench. Private to src/bench.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace overlap::bench::detail {

/// Threads for host work: the cores, at most 16.
[[nodiscard]] inline unsigned host_threads() noexcept {
  return std::clamp(std::thread::hardware_concurrency(), 1U, 16U);
}

/// Calls f(begin, end) on disjoint ranges that cover [0, n), one per thread
/// (one range in all when n is small); f must not throw.
template <typename F>
void parallel_for(std::size_t n, const F& f) {
  const unsigned threads = n < (std::size_t{1} << 16) ? 1 : host_threads();
  if (threads == 1) {
    f(std::size_t{0}, n);
    return;
  }
  const std::size_t per_thread = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(n, t * per_thread);
    const std::size_t end = std::min(n, begin + per_thread);
    if (begin < end) pool.emplace_back([&f, begin, end] { f(begin, end); });
  }
  for (std::thread& thread : pool) thread.join();
}

}  // namespace overlap::bench::detail
