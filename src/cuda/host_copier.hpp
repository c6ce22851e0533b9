// A pool of host threads that copies one buffer into another in parallel:
// one thread moves ~9 GB/s from pageable into pinned memory, 8 move ~30
// (docs/hardware.md), so staging pageable data needs several. The threads are
// kept between copies; each copy waits for all its pieces. Private to
// src/cuda.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "streaming_copy.hpp"

namespace overlap::cuda::detail {

class host_copier {
 public:
  /// `threads` >= 1 copy at once (the caller is one of them).
  explicit host_copier(unsigned threads, host_stores stores = host_stores::cached);
  ~host_copier();
  host_copier(const host_copier&) = delete;
  host_copier& operator=(const host_copier&) = delete;
  host_copier(host_copier&&) = delete;
  host_copier& operator=(host_copier&&) = delete;

  /// memcpy(to, from, bytes), split over the threads; returns when done.
  /// One copy at a time per copier.
  void copy(void* to, const void* from, std::size_t bytes);

  [[nodiscard]] unsigned threads() const noexcept { return static_cast<unsigned>(workers_.size()) + 1; }

 private:
  void work();
  /// Copies pieces of round `round` until none is left to take.
  void copy_pieces(std::uint32_t round);

  host_stores stores_;
  std::vector<std::jthread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable finished_;
  // The copy under way, written under the mutex before its round begins and
  // left alone until every piece of it is copied.
  std::byte* to_ = nullptr;
  const std::byte* from_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t piece_bytes_ = 0;
  std::uint32_t round_ = 0;  ///< the caller's count of rounds begun
  // The round (high 32 bits), its pieces (next 16) and the next piece to
  // take (low 16), in one word: a thread takes a piece with one
  // compare-and-swap that also checks the piece belongs to the round whose
  // buffers it read. Also read without the mutex, by threads that spin a
  // little before they sleep (host_copier.cpp says why).
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::uint32_t> pieces_done_{0};
  bool stopping_ = false;
};

}  // namespace overlap::cuda::detail
