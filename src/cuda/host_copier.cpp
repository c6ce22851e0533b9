#include "host_copier.hpp"

#include <algorithm>
#include <chrono>

namespace overlap::cuda::detail {

namespace {

// Below this a piece costs more to hand out than to copy.
constexpr std::size_t smallest_piece = std::size_t{256} << 10;

// A copy is cut into up to this many pieces per thread, taken one at a time
// by whichever thread is free: a thread that wakes late for a round, or is
// preempted by another process, holds up a piece instead of its whole share
// while the others take the rest. 256 MiB in 8 MiB copies on a 2-core
// machine, medians of 15: 3 threads 28.0 ms with equal shares, 20.4 with
// pieces (2 threads: 20.6 either way); 2 threads beside a busy-looping
// thread 39.9 against 33.7. On the lent VMs, whose staged runs keep 16 copy
// threads on 16 cores, one bench call of three ran the staged row 2.5x its
// usual time with equal shares (bench/RESULTS.md, issue 38).
constexpr std::size_t pieces_per_thread = 4;

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

// next_'s fields (host_copier.hpp).
constexpr std::uint32_t round_of(std::uint64_t word) {
  return static_cast<std::uint32_t>(word >> 32U);
}
constexpr std::uint32_t pieces_of(std::uint64_t word) {
  return static_cast<std::uint32_t>(word >> 16U) & 0xFFFFU;
}
constexpr std::uint32_t taken_of(std::uint64_t word) {
  return static_cast<std::uint32_t>(word) & 0xFFFFU;
}
constexpr std::uint64_t word_of(std::uint32_t round, std::uint32_t pieces) {
  return (std::uint64_t{round} << 32U) | (std::uint64_t{pieces} << 16U);
}

}  // namespace

host_copier::host_copier(unsigned threads, host_stores stores) : stores_(stores) {
  // At most 16,383 threads keep a round's pieces within next_'s 16 bits.
  const unsigned helpers = std::clamp(threads, 1U, 0xFFFFU / unsigned{pieces_per_thread}) - 1;
  workers_.reserve(helpers);
  for (unsigned i = 0; i < helpers; ++i) workers_.emplace_back([this] { work(); });
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

void host_copier::copy_pieces(std::uint32_t round) {
  for (;;) {
    std::uint64_t word = next_.load(std::memory_order_acquire);
    do {
      if (round_of(word) != round || taken_of(word) >= pieces_of(word)) return;
    } while (
        !next_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire));
    // The piece is ours and its round unfinished until we count it done:
    // the buffers are still the round's.
    const std::size_t begin = std::min(bytes_, taken_of(word) * piece_bytes_);
    const std::size_t end = std::min(bytes_, begin + piece_bytes_);
    if (begin < end) copy_host(stores_, to_ + begin, from_ + begin, end - begin);
    if (pieces_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == pieces_of(word)) {
      // Taking the mutex orders the count before a caller that checks it and sleeps.
      { const std::lock_guard<std::mutex> lock(mutex_); }
      finished_.notify_one();
    }
  }
}

void host_copier::work() {
  std::uint32_t seen = 0;
  for (;;) {
    (void)spin_until([&] { return round_of(next_.load(std::memory_order_acquire)) != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || round_of(next_.load(std::memory_order_relaxed)) != seen; });
      if (stopping_) return;
      seen = round_of(next_.load(std::memory_order_relaxed));
    }
    // Late for a round the others finished: there is nothing left to take.
    copy_pieces(seen);
  }
}

void host_copier::copy(void* to, const void* from, std::size_t bytes) {
  if (bytes == 0) return;
  if (workers_.empty() || bytes < 2 * smallest_piece) {
    copy_host(stores_, to, from, bytes);
    return;
  }
  constexpr std::size_t line = 64;  // pieces start on cache lines of the source's offset
  const std::size_t most = threads() * pieces_per_thread;
  const std::size_t wanted = std::min(most, bytes / smallest_piece);
  const std::size_t piece = ((bytes + wanted - 1) / wanted + line - 1) / line * line;
  const auto pieces = static_cast<std::uint32_t>((bytes + piece - 1) / piece);
  std::uint32_t round = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    to_ = static_cast<std::byte*>(to);
    from_ = static_cast<const std::byte*>(from);
    bytes_ = bytes;
    piece_bytes_ = piece;
    pieces_done_.store(0, std::memory_order_relaxed);
    round = ++round_;
    next_.store(word_of(round, pieces), std::memory_order_release);
  }
  start_.notify_all();
  copy_pieces(round);
  const auto done = [&] { return pieces_done_.load(std::memory_order_acquire) == pieces; };
  if (spin_until(done)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, done);
}

}  // namespace overlap::cuda::detail
