#include "host_copier.hpp"

#include <algorithm>
#include <chrono>

namespace overlap::cuda::detail {

namespace {

// Below this a piece costs more to hand out than to copy.
constexpr std::size_t smallest_piece = std::size_t{256} << 10;

// How long a thread looks for its next round, or the caller for the last
// piece, before it sleeps on a condition variable. A staged Pipeline hands
// out a round every few hundred microseconds and its pieces end together,
// so the wait is usually short; a thread that sleeps through it may wake
// late (blocked waits woke up to 300 us late on the lent machines:
// bench/RESULTS.md, issue 12 part 3), long next to an 8 MiB round, which
// 8 threads copy in about 250 us.
constexpr auto spin_for = std::chrono::microseconds(200);

// Spins until `done()` or spin_for has passed; true when done.
template <typename Done>
bool spin_until(Done&& done) {
  const auto until = std::chrono::steady_clock::now() + spin_for;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

host_copier::host_copier(unsigned threads, host_stores stores) : stores_(stores) {
  const unsigned helpers = std::max(threads, 1U) - 1;
  workers_.reserve(helpers);
  for (unsigned i = 0; i < helpers; ++i) workers_.emplace_back([this, i] { work(i + 1); });
}

host_copier::~host_copier() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  // Joined here, while the mutex and condition variables they use still
  // exist (members are destroyed after the body, and workers_ after them).
  workers_.clear();
}

void host_copier::copy_piece(unsigned index) const {
  const std::size_t pieces = workers_.size() + 1;
  const std::size_t per_piece = (bytes_ + pieces - 1) / pieces;
  const std::size_t begin = std::min(bytes_, index * per_piece);
  const std::size_t end = std::min(bytes_, begin + per_piece);
  if (begin < end) copy_host(stores_, to_ + begin, from_ + begin, end - begin);
}

void host_copier::work(unsigned index) {
  std::size_t done_round = 0;
  for (;;) {
    (void)spin_until([&] { return round_.load(std::memory_order_acquire) != done_round; });
    {
      // The round's buffers were written under the mutex: read them under it.
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || round_.load(std::memory_order_relaxed) != done_round; });
      if (stopping_) return;
      done_round = round_.load(std::memory_order_relaxed);
    }
    copy_piece(index);
    bool last = false;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      last = pieces_left_.fetch_sub(1, std::memory_order_acq_rel) == 1;
    }
    if (last) finished_.notify_one();
  }
}

void host_copier::copy(void* to, const void* from, std::size_t bytes) {
  if (bytes == 0) return;
  if (workers_.empty() || bytes < 2 * smallest_piece) {
    copy_host(stores_, to, from, bytes);
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    to_ = static_cast<std::byte*>(to);
    from_ = static_cast<const std::byte*>(from);
    bytes_ = bytes;
    pieces_left_.store(static_cast<unsigned>(workers_.size()), std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  copy_piece(0);
  if (spin_until([&] { return pieces_left_.load(std::memory_order_acquire) == 0; })) return;
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return pieces_left_.load(std::memory_order_relaxed) == 0; });
}

}  // namespace overlap::cuda::detail
