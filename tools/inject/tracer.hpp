// What the injection library's CUDA-side files share: the process-wide
// Tracer, each thread's state, the guard around the library's own driver
// calls, and error reporting.
//
// The Tracer is created by InitializeInjection and never destroyed: CUPTI
// calls back from any thread until the process is gone, including after
// static destructors ran, so nothing it touches may be torn down. Per-thread
// state is reached through a trivially destructible thread_local pointer for
// the same reason (see tracer.cpp).
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api_params.hpp"
#include "callers.hpp"
#include "kernel_params.hpp"
#include "record_writer.hpp"

namespace overlap::inject {

struct Tracer {
  Tracer(std::string path, bool with_callers);

  RecordWriter writer;
  std::unique_ptr<CallerResolver> callers;  ///< null with OVERLAP_TRACE_CALLERS=0
  std::uint64_t start_time = 0;             ///< CUPTI time when tracing began (the header's `start`)
  /// This library's callbacks in progress on any thread: a signal handler
  /// only asks CUPTI to flush when none is (CUPTI may hold its locks then).
  std::atomic<int> callbacks_running{0};

  /// Time this library spends, counted with OVERLAP_TRACE_STATS=1 and
  /// printed at exit: how the tracer's own share of its overhead is measured.
  struct Costs {
    bool counted = false;
    std::atomic<std::uint64_t> api_ns{0};
    std::atomic<std::uint64_t> api_callbacks{0};
    std::atomic<std::uint64_t> activity_ns{0};
    std::atomic<std::uint64_t> activity_buffers{0};
  };
  Costs costs;
};

/// Monotonic nanoseconds, for Tracer::Costs.
[[nodiscard]] std::uint64_t monotonic_ns() noexcept;

/// Adds the time from construction to destruction to a Tracer::Costs pair, when counted.
class CostTimer {
 public:
  CostTimer(const Tracer& tracer, std::atomic<std::uint64_t>& ns, std::atomic<std::uint64_t>& count)
      : ns_(ns), count_(count), start_(tracer.costs.counted ? monotonic_ns() : 0) {}
  ~CostTimer() {
    if (start_ == 0) return;
    ns_.fetch_add(monotonic_ns() - start_, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  CostTimer(const CostTimer&) = delete;
  CostTimer& operator=(const CostTimer&) = delete;
  CostTimer(CostTimer&&) = delete;
  CostTimer& operator=(CostTimer&&) = delete;

 private:
  std::atomic<std::uint64_t>& ns_;
  std::atomic<std::uint64_t>& count_;
  std::uint64_t start_;
};

/// The tracer, or null before InitializeInjection made one or when this run is not traced.
[[nodiscard]] Tracer* tracer() noexcept;
void install_tracer(Tracer* t) noexcept;

/// One API call in flight on a thread, as CUPTI's enter callback saw it.
struct OpenCall {
  std::uint32_t corr = 0;
  CUpti_CallbackDomain domain = CUPTI_CB_DOMAIN_INVALID;
  CUpti_CallbackId cbid = 0;
};

struct ThreadState {
  ThreadState();

  std::uint64_t tid = 0;     ///< OS thread id (gettid)
  int own_driver_calls = 0;  ///< > 0 while this library calls the driver
  /// The calls in flight, outermost first: open[0] is the app's call; the
  /// rest are the runtime's and driver's calls made on its behalf.
  int depth = 0;
  std::array<OpenCall, 16> open{};

  // The outermost call, filled at its entry and by the calls nested in it.
  CallClass outer_class = CallClass::other;
  std::uint64_t start = 0;
  RawFrames frames;
  std::optional<std::uint32_t> entry_stream;  ///< stream_destroy: the id, read before the stream is gone
  bool launch_seen = false;                   ///< a nested driver launch filled kernel/ptrs
  bool has_ptrs = false;
  std::string kernel;
  PointerArgs ptrs;
  std::uint32_t last_alias = 0;  ///< the last driver corr aliased, so each pair is written once

  /// Graph nodes made during the app's call, described at its exit (graphs.hpp).
  struct NewGraphNode {
    CUgraphNode node = nullptr;
    std::uint64_t id = 0;    ///< CUPTI's node id
    std::uint32_t corr = 0;  ///< the app's call that made it; 0 if none was open
    bool captured = false;   ///< made by a stream call under capture (its call record has the parameters)
  };
  std::vector<NewGraphNode> new_graph_nodes;
  /// Ids of the nodes cloned during the app's call (instantiation): their
  /// `graph_clone` record ties them to the node they copy, which has its record.
  std::vector<std::uint64_t> cloned_graph_nodes;
  /// Graphs instantiated during the app's call, walked at its exit.
  std::vector<std::pair<CUgraph, CUgraphExec>> new_graph_execs;

  /// Stream ids this thread knows to have their record (a cache in front of
  /// the process-wide set, so most calls take no lock for it).
  std::array<std::uint32_t, 8> streams_seen{};
  std::size_t streams_seen_count = 0;

  std::string line;   ///< scratch for building one record
  std::string batch;  ///< scratch for the activity records of one buffer
};

/// The calling thread's state, created on its first callback.
[[nodiscard]] ThreadState& thread_state();

/// Marks the driver calls this library makes from inside a callback, so the
/// callbacks CUPTI makes for them are ignored rather than traced.
class OwnDriverCalls {
 public:
  OwnDriverCalls() : state_(thread_state()) { ++state_.own_driver_calls; }
  ~OwnDriverCalls() { --state_.own_driver_calls; }
  OwnDriverCalls(const OwnDriverCalls&) = delete;
  OwnDriverCalls& operator=(const OwnDriverCalls&) = delete;
  OwnDriverCalls(OwnDriverCalls&&) = delete;
  OwnDriverCalls& operator=(OwnDriverCalls&&) = delete;

 private:
  ThreadState& state_;
};

/// Counts a callback of this library in progress (Tracer::callbacks_running).
class RunningCallback {
 public:
  explicit RunningCallback(Tracer& tracer) : tracer_(tracer) {
    tracer_.callbacks_running.fetch_add(1, std::memory_order_acq_rel);
  }
  ~RunningCallback() { tracer_.callbacks_running.fetch_sub(1, std::memory_order_acq_rel); }
  RunningCallback(const RunningCallback&) = delete;
  RunningCallback& operator=(const RunningCallback&) = delete;
  RunningCallback(RunningCallback&&) = delete;
  RunningCallback& operator=(RunningCallback&&) = delete;

 private:
  Tracer& tracer_;
};

/// Appends the record(s) built in `line` (complete lines) and clears it.
void write_line(std::string& line, std::uint64_t records = 1);

/// Writes `{"t":"error","message":...}` the first time (`what`, `code`) fails.
void report_error(std::string_view what, long code, std::string_view detail);
/// True on success; otherwise reports `what` failed with CUPTI's description.
bool cupti_ok(CUptiResult result, std::string_view what);
/// True on success; otherwise reports `what` failed with the driver's error name.
bool driver_ok(CUresult result, std::string_view what);
/// CUPTI's description of `result` ("CUPTI_ERROR_...").
[[nodiscard]] std::string_view cupti_result_text(CUptiResult result) noexcept;

/// cuptiGetTimestamp: the clock of activity records. 0 if CUPTI fails.
[[nodiscard]] std::uint64_t timestamp() noexcept;

// Implemented in the files named.
void CUPTIAPI on_api_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* data);  // api_callbacks.cpp
/// Tracing starts inside cuInit, which the runtime may have called from the
/// app's first runtime call: on the calling thread, treat what follows as
/// nested in that call until its exit, which is then written with the
/// tracing start as its start.
void begin_inside_runtime_call();  // api_callbacks.cpp
/// Registers the activity buffers and enables the traced kinds; the
/// registration's result (a kind that does not enable is only reported).
CUptiResult start_activity_tracing();  // activity.cpp
/// Managed memory's migration records, enabled once the driver is ready (activity.cpp).
void enable_migrations_once();
void flush_activity(bool forced);  // activity.cpp
/// Records CUPTI dropped; `per_context` also asks each live context (not from a signal handler).
[[nodiscard]] std::uint64_t activity_records_dropped(bool per_context);  // activity.cpp

}  // namespace overlap::inject
