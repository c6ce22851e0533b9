// Reading a traced app's trace file while the app still writes it, on a
// thread of its own, so that the audit has little left to read when the
// app ends (the app's wall time is what a user waits for; the trace's
// parse, done afterwards, was a tenth of it on graph-launch loops).
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "overlap/trace/trace_file.hpp"

namespace overlap::cli {

/// Follows one trace file as it grows, from a thread started at construction.
class TraceFollower {
 public:
  /// Starts following `file`, which need not exist yet (the app creates it
  /// at its first CUDA call).
  explicit TraceFollower(std::filesystem::path file);
  /// Stops the thread if finish() was not called.
  ~TraceFollower();
  TraceFollower(const TraceFollower&) = delete;
  TraceFollower& operator=(const TraceFollower&) = delete;
  TraceFollower(TraceFollower&&) = delete;
  TraceFollower& operator=(TraceFollower&&) = delete;

  /// Waits up to `timeout` for the trace's footer; true once it has been
  /// read (the tracer writes it in the app's exit handlers, before CUDA is
  /// torn down: finish() then returns at once, and the trace is whole).
  [[nodiscard]] bool wait_for_footer(std::chrono::milliseconds timeout);

  /// Once the app has ended or the footer was read: reads what is left and returns the trace.
  /// Nothing when the file never appeared or did not parse; the caller then
  /// reads the file itself, which names the problem if there is one.
  [[nodiscard]] std::optional<trace::RawTrace> finish();

 private:
  void follow();
  /// Reads from `fd` to its current end; false if the reader threw.
  bool drain(int fd);
  /// Waits a poll interval or until the app ends; true once it has ended.
  bool wait();
  /// Tells the thread the app has ended and joins it.
  void end();

  std::filesystem::path file_;
  trace::TraceReader reader_;
  std::mutex mutex_;
  std::condition_variable ended_signal_;
  bool app_ended_ = false;    // guarded by mutex_
  bool footer_read_ = false;  // guarded by mutex_
  bool failed_ = false;       // written by the thread, read after join
  bool opened_ = false;       // likewise
  std::thread thread_;        // last: started once every member it uses exists
};

}  // namespace overlap::cli
