#include "parked_thread.hpp"

#include <chrono>
#include <utility>

namespace overlap::cuda::detail {

parked_thread::parked_thread() : thread_([this] { loop(); }) {}

parked_thread::~parked_thread() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void parked_thread::start(std::function<void()> job) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    has_job_ = true;
    escaped_ = nullptr;
    idle_.store(false, std::memory_order_release);
  }
  changed_.notify_all();
}

void parked_thread::wait(std::chrono::microseconds spin_for) {
  const auto until = std::chrono::steady_clock::now() + spin_for;
  while (!idle_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return idle_.load(std::memory_order_acquire); });
  if (escaped_) std::rethrow_exception(std::exchange(escaped_, nullptr));
}

void parked_thread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return has_job_ || quit_; });
    if (!has_job_) return;  // quit, nothing left to run
    std::function<void()> job = std::move(job_);
    has_job_ = false;
    lock.unlock();
    std::exception_ptr escaped;
    try {
      job();
    } catch (...) {
      escaped = std::current_exception();
    }
    job = nullptr;  // what it captured goes before the caller is told it may go
    lock.lock();
    escaped_ = escaped;
    idle_.store(true, std::memory_order_release);
    changed_.notify_all();
  }
}

}  // namespace overlap::cuda::detail
