// parked_thread: one thread kept between a Feed's runs, parked while idle.
//
// A Feed run used to start its consumer thread and join it at the end. On
// the lent H200 a run lost a fixed ~90 us to a hand-written one-thread loop
// (bench/RESULTS.md, issue 38 part 4): about 30 us of it the thread's start
// (measured by starting it after the first item instead), the rest its exit
// (the CUDA runtime's per-thread cleanup included), the join and the sleeps
// at the end. A parked thread takes a run's job in a few microseconds and is
// joined once, with the Feed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace overlap::cuda::detail {

class parked_thread {
 public:
  /// Starts the thread, parked; throws std::system_error when it cannot.
  parked_thread();
  /// Ends the thread (after the job it runs, if any) and joins it.
  ~parked_thread();
  parked_thread(const parked_thread&) = delete;
  parked_thread& operator=(const parked_thread&) = delete;
  parked_thread(parked_thread&&) = delete;
  parked_thread& operator=(parked_thread&&) = delete;

  /// Hands `job` to the thread, which runs it once; the job before must be
  /// waited for. A job should catch what it throws: what escapes is kept
  /// and rethrown by wait().
  void start(std::function<void()> job);
  /// Returns once the job has returned, and nothing of it runs any more:
  /// what it used may go. Looks without sleeping for up to `spin_for`, as
  /// the end of a job is often microseconds away, then sleeps.
  void wait(std::chrono::microseconds spin_for = std::chrono::microseconds(200));

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;  // set by start(), cleared by the thread once run
  bool has_job_ = false;
  bool quit_ = false;
  std::atomic<bool> idle_{true};  // no job handed over or running
  std::exception_ptr escaped_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace overlap::cuda::detail
