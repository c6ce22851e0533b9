#include "host_copier.hpp"

#include <algorithm>
#include <cstring>

namespace overlap::cuda::detail {

namespace {

// Below this a piece costs more to hand out than to copy.
constexpr std::size_t smallest_piece = std::size_t{256} << 10;

}  // namespace

host_copier::host_copier(unsigned threads) {
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
  // The jthreads join here.
}

void host_copier::copy_piece(unsigned index) const {
  const std::size_t pieces = workers_.size() + 1;
  const std::size_t per_piece = (bytes_ + pieces - 1) / pieces;
  const std::size_t begin = std::min(bytes_, index * per_piece);
  const std::size_t end = std::min(bytes_, begin + per_piece);
  if (begin < end) std::memcpy(to_ + begin, from_ + begin, end - begin);
}

void host_copier::work(unsigned index) {
  std::size_t done_round = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || round_ != done_round; });
      if (stopping_) return;
      done_round = round_;
    }
    copy_piece(index);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      --pieces_left_;
    }
    finished_.notify_one();
  }
}

void host_copier::copy(void* to, const void* from, std::size_t bytes) {
  if (bytes == 0) return;
  if (workers_.empty() || bytes < 2 * smallest_piece) {
    std::memcpy(to, from, bytes);
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    to_ = static_cast<std::byte*>(to);
    from_ = static_cast<const std::byte*>(from);
    bytes_ = bytes;
    pieces_left_ = static_cast<unsigned>(workers_.size());
    ++round_;
  }
  start_.notify_all();
  copy_piece(0);
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return pieces_left_ == 0; });
}

}  // namespace overlap::cuda::detail
