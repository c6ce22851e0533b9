// A Feed's run: the producer on the calling thread, the issue of uploads
// and stages on the same thread or (feed_issuing_thread::dedicated, or
// automatic once the producer is seen to set the pace) a thread of its
// own, the consumer on another, and the slots between them.
// The consumer's and the issuer's threads are kept between runs, parked
// (parked_thread.hpp): starting and joining them was most of a fixed ~90 us
// a run cost against a one-thread loop.
//
// Item k uses slot k mod N. The calling thread waits for item k - N's
// upload before producing item k into the slot's pinned input. The issuing
// thread (the same one, or the dedicated one once the item is handed over)
// issues the upload and the stage. Item k's download goes once the consumer
// is done with item k - N; whichever thread makes that true (the issuer
// after the stage, or the consumer after item k - N) issues it, so no copy
// waits for a second thread to wake up; a consumer already waiting for item
// k issues it itself, keeping it off a producer that paces the run. The
// consumer thread takes items in order, waits for each one's "ready" event,
// and calls the consumer. So the producer is never more than N items ahead,
// the threads sleep between looks (the last items' waits excepted, which
// spin briefly so that the run's end is seen at once), and the producer of
// item k + N - 1 overlaps the consumer of k - 1. A dedicated issuer keeps
// the host cost of issuing (about 20 us an item by stage) off the producer,
// so a producer slower than the GPU sets the pace alone; it costs one more
// thread hand-off per item.
//
// By stage (the default), every upload goes on one stream, every stage on
// a second and every download on a third, with the slot's events between
// (FeedShape draws the same): item k's upload waits on the device for item
// k - N's stage only, not its download, and each copy engine is fed from a
// single stream, as in the fastest hand-written loop the bench knows (on
// an H100, 4 MiB frames: 1.5% faster than a stream per slot, bench/
// RESULTS.md, issue 38 part 4). By slot (and for graphs per slot, which
// replay each slot's work on its stream), each slot's stream runs on its
// own; measured then and dropped (issue 12 parts 2 and 3): a second stream
// per slot so that the slot's next upload need not queue behind its
// download (no faster).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/device_scope.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/feed.hpp"
#include "overlap/cuda/graph.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/nvtx.hpp"
#include "parked_thread.hpp"

namespace overlap::cuda::detail {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Waits for `e` on the host without spinning (feed_wait, feed.hpp): a
// query first, so that an event already complete costs no sleep; then, for
// feed_wait::poll, queries with short sleeps, which wake within a few
// microseconds (with the fine timer slack below), until poll_for has passed,
// and with longer ones after, when a late wake-up costs little next to the
// item. feed_wait::block waits in the driver (a blocking-sync event).
// 10 us rather than 20: a GPU-bound feed's producer waits for the
// consumer, which waits for the GPU, each a half-period late on average;
// 4 MiB frames on an H200 ran 0.2-0.3% closer to the hand-written loop.
constexpr auto poll_every = std::chrono::microseconds(10);
constexpr auto poll_for = std::chrono::milliseconds(2);
constexpr auto poll_slowly_every = std::chrono::microseconds(200);

// With `spin_first` (the run's last items, once the producer is done) it
// queries without sleeping for up to poll_for first: a sleep's late wake-up
// there lands on the run's end.
cudaError_t wait_for(const event& e, feed_wait how, bool spin_first = false) {
  if (how == feed_wait::block) return cudaEventSynchronize(e.get());
  cudaError_t status = cudaEventQuery(e.get());
  if (spin_first) {
    const auto spin_until = clock_type::now() + poll_for;
    while (status == cudaErrorNotReady && clock_type::now() < spin_until) {
      std::this_thread::yield();
      status = cudaEventQuery(e.get());
    }
  }
  const auto until = clock_type::now() + poll_for;
  while (status == cudaErrorNotReady) {
    std::this_thread::sleep_for(clock_type::now() < until ? poll_every : poll_slowly_every);
    status = cudaEventQuery(e.get());
  }
  return status;
}

// The slots' events: blocking-sync ones only for feed_wait::block, whose
// threads sleep in the driver; recording them costs the copies time.
event_wait events_for(feed_wait how) {
  return how == feed_wait::block ? event_wait::block : event_wait::spin;
}

// check() for the calls made for every item: the context is formatted
// only when the call failed, not at every call.
void check_item(cudaError_t status, std::string_view call, std::string_view what, std::size_t k) {
  if (status != cudaSuccess) {
    check(status, call, what.empty() ? fmt::format("item {}", k) : fmt::format("{} of item {}", what, k));
  }
}

// Linux rounds a thread's sleeps up by its timer slack (50 us by default),
// longer than poll_every, so the feed's threads ask for 1 us while the
// feed runs; the caller's thread gets its own setting back.
class fine_timer_slack {
 public:
  fine_timer_slack() {
#ifdef __linux__
    const int previous = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
    if (previous > 0 && prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL) == 0)
      previous_ = static_cast<unsigned long>(previous);
#endif
  }
  ~fine_timer_slack() {
#ifdef __linux__
    if (previous_ != 0) (void)prctl(PR_SET_TIMERSLACK, previous_, 0UL, 0UL, 0UL);
#endif
  }
  fine_timer_slack(const fine_timer_slack&) = delete;
  fine_timer_slack& operator=(const fine_timer_slack&) = delete;

 private:
  unsigned long previous_ = 0;  // NOLINT(google-runtime-int): prctl's type
};

// The feed's own threads (consumer, issuer) keep the fine slack once set:
// they sleep only for the feed, and setting it back at the end of every
// run put two system calls between the last item and run()'s return.
void keep_fine_timer_slack() {
#ifdef __linux__
  thread_local const bool set = prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL) == 0;
  (void)set;
#endif
}

// Order statistics by selection, reordering `v`: sorting the run's three
// vectors of per-item times (between the last item and run()'s return)
// cost a GPU-bound run of 100 items 5 us more on an H200.
double median_of(std::vector<double>& v) {
  if (v.empty()) return 0.0;
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), middle, v.end());
  return *middle;
}

feed_latency latency_of(std::vector<double>& v) {
  feed_latency l;
  if (v.empty()) return l;
  l.median_ms = median_of(v);  // leaves every later element no smaller
  const auto p95 = v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size() - 1, v.size() * 95 / 100));
  std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), p95, v.end());
  l.p95_ms = *p95;
  l.max_ms = *std::max_element(p95, v.end());
  return l;
}

}  // namespace

/// One slot's graphs (feed_issue::graph_per_slot), for the item sizes they
/// were captured for. A run captures its own: its stage may differ.
struct slot_graphs {
  graph_exec upload;  // H2D, "uploaded", the stage
  std::optional<std::size_t> upload_elements;
  graph_exec download;  // D2H, "ready"
  std::optional<std::size_t> download_elements;
};

/// One slot: pinned input and output, device buffers, its stream and events.
/// The stream is declared before the device buffers, which are freed on it.
struct feed_slot {
  feed_slot(std::size_t in_bytes, std::size_t out_bytes, feed_wait how)
      : host_in(in_bytes),
        host_out(out_bytes),
        s(stream::options{stream_sync::non_blocking, 0}),
        device_in(in_bytes, s.view()),
        device_out(out_bytes, s.view()),
        uploaded(event_timing::disabled, events_for(how)),
        computed(event_timing::disabled, event_wait::spin),
        ready(event_timing::disabled, events_for(how)) {}

  pinned_buffer<std::byte> host_in;
  pinned_buffer<std::byte> host_out;
  stream s;
  device_buffer<std::byte> device_in;
  device_buffer<std::byte> device_out;
  event uploaded;  // the host may refill host_in
  event computed;  // by stage: the stage is done with device_in and device_out
  event ready;     // host_out holds the item
  slot_graphs graphs;
};

struct feed_resources {
  // The consumer's thread, and the issuer's once a run asks for it: kept
  // between runs (parked_thread.hpp). Parked threads touch nothing else.
  std::unique_ptr<parked_thread> consumer = std::make_unique<parked_thread>();
  std::unique_ptr<parked_thread> issuer;
  std::vector<std::unique_ptr<feed_slot>> slots;
  // By stage: every upload, every stage, every download on its own stream.
  stream up{stream::options{stream_sync::non_blocking, 0}};
  stream compute{stream::options{stream_sync::non_blocking, 0}};
  stream down{stream::options{stream_sync::non_blocking, 0}};
  feed_wait wait = feed_wait::poll;  // what the slots' events were made for
};

namespace {

/// An item between the threads.
struct item_record {
  std::size_t in_elements = 0;
  std::size_t out_elements = 0;
  clock_type::time_point produced;
};

/// The run's jobs on the parked threads, waited for before the run's state
/// goes: by wait(), which rethrows what escaped a job, or on the way out.
class waits_for_jobs {
 public:
  waits_for_jobs(parked_thread* consumer, parked_thread* issuer) : threads_{issuer, consumer} {}
  ~waits_for_jobs() {
    for (parked_thread* t : threads_) {
      if (t == nullptr) continue;
      try {
        t->wait();
      } catch (...) {  // NOLINT(bugprone-empty-catch): leaving already; wait() reported it if it could
      }
    }
  }
  waits_for_jobs(const waits_for_jobs&) = delete;
  waits_for_jobs& operator=(const waits_for_jobs&) = delete;
  waits_for_jobs(waits_for_jobs&&) = delete;
  waits_for_jobs& operator=(waits_for_jobs&&) = delete;
  void wait() const {
    for (parked_thread* t : threads_) {
      if (t != nullptr) t->wait();
    }
  }

 private:
  std::array<parked_thread*, 2> threads_;
};

/// What the threads share, under `mutex`.
class feed_run {
 public:
  feed_run(const feed_layout& layout, const feed_options& options, feed_resources& res,
           const erased_producer& producer, const erased_stage& stage, const erased_consumer& consumer,
           const std::atomic<bool>& stop)
      : layout_(layout),
        options_(options),
        res_(res),
        producer_(producer),
        stage_(stage),
        consumer_(consumer),
        stop_(stop),
        n_(static_cast<unsigned>(res.slots.size())),
        graphs_(options.issue == feed_issue::graph_per_slot),
        dedicated_issuer_(options.issuing_thread == feed_issuing_thread::dedicated),
        automatic_issuer_(options.issuing_thread == feed_issuing_thread::automatic),
        by_stage_(!graphs_ && options.streams == feed_streams::by_stage),
        ring_(n_),
        staged_items_(n_),
        downloaded_items_(n_) {}

  feed_report run();

 private:
  void produce();
  /// Issues item k's upload and stage, and its download if the consumer
  /// has released the slot's output; false when the run is over.
  bool issue_item(std::size_t k, const item_record& item);
  /// Issues every download that may go, in item order: item k's once its
  /// stage is issued and the consumer is done with item k - n. The thread
  /// that makes one possible (the issuer after a stage, the consumer after
  /// an item) issues it, so no download waits for another thread to wake,
  /// except that a consumer already waiting for the item issues its
  /// download itself (consume()); one thread at a time, and one busy
  /// issuing also takes what others made possible meanwhile. Called with `lock` held; returns with it held.
  void issue_downloads(std::unique_lock<std::mutex>& lock);
  /// The dedicated issuing thread: items in order from `first` as they are produced.
  void issue(std::size_t first);
  /// Hands items `first` on to the issuing thread, started now.
  void start_issuer(std::size_t first);
  /// feed_issuing_thread::automatic, after the producer's thread issued
  /// item k: whether the producer set the pace over the items watched.
  [[nodiscard]] bool producer_set_the_pace(std::size_t k) const;
  /// Hands consume() to the consumer's parked thread, once a run: after
  /// the first item is issued, so that waking it is not between run()'s
  /// start and the first upload (nothing is there to consume for a copy's
  /// time), or when the producer is done, whichever comes first.
  void start_consumer();
  void consume();
  void enqueue_upload(std::size_t k, const item_record& item, bool external);
  void enqueue_stage(std::size_t k, const item_record& item);
  void enqueue_download(std::size_t k, const item_record& item, bool external);
  template <typename Enqueue>
  graph_exec capture(std::size_t k, stream_view s, const char* what, Enqueue&& enqueue);
  template <typename Enqueue>
  void enqueue_part(std::size_t k, stream_view s, const char* what, graph_exec& g,
                    std::optional<std::size_t>& captured_for, std::size_t elements, Enqueue&& enqueue);
  /// Issue item k's upload and stage, or its download, directly or as a
  /// slot's graph; false when it failed (recorded).
  bool issue_upload_and_stage(std::size_t k, const item_record& item);
  bool issue_download(std::size_t k, const item_record& item);
  /// Keeps the failure of the earliest item; `abort` also stops the consumer.
  void fail(std::size_t item, feed_part part, std::exception_ptr error, bool abort);
  /// Runs one thread's part. Bookkeeping that fails there (out of memory)
  /// stops the run cleanly all the same: fail() names the first item not
  /// yet consumed.
  template <typename Part>
  void guarded(feed_part part, Part&& body) {
    try {
      body();
    } catch (...) {
      fail(0, part, std::current_exception(), true);
    }
  }
  /// Waits, `lock` held, until `ready()`. With feed_wait::poll the thread
  /// looks again every poll_every, the lock released between looks, and
  /// sleeps on the condition variable only once poll_for has passed, as
  /// the waits for the GPU do: on the lent machines a thread woken from a
  /// long sleep could wake hundreds of microseconds late (bench/RESULTS.md,
  /// issue 12 part 3). Two threads that poll each other this way moved
  /// 4 MiB frames at 0.97x the copy rate, as the Feed now does (part 4).
  /// `spin_first`: the caller's wait for the run's end, looking without
  /// sleeping for up to poll_for first, as wait_for() does.
  template <typename Ready>
  void wait_until(std::unique_lock<std::mutex>& lock, Ready&& ready, bool spin_first = false) {
    if (spin_first && options_.wait == feed_wait::poll) {
      const auto until = clock_type::now() + poll_for;
      while (!ready() && clock_type::now() < until) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      }
    }
    if (options_.wait == feed_wait::poll) {
      const auto until = clock_type::now() + poll_for;
      while (!ready() && clock_type::now() < until) {
        lock.unlock();
        std::this_thread::sleep_for(poll_every);
        lock.lock();
      }
    }
    changed_.wait(lock, ready);
  }
  /// Sets a thread's "no more items" flag and wakes the others.
  void mark_done(bool& flag) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      flag = true;
    }
    changed_.notify_all();
  }
  [[noreturn]] void rethrow_failure();

  const feed_layout& layout_;
  const feed_options& options_;
  feed_resources& res_;
  const erased_producer& producer_;
  const erased_stage& stage_;
  const erased_consumer& consumer_;
  const std::atomic<bool>& stop_;
  const unsigned n_;
  const bool graphs_;              // feed_issue::graph_per_slot
  const bool dedicated_issuer_;    // feed_issuing_thread::dedicated
  const bool automatic_issuer_;    // feed_issuing_thread::automatic
  const bool by_stage_;            // feed_streams::by_stage, issued directly
  int device_ = 0;                 // the caller's GPU, current on every thread of the run
  bool consumer_started_ = false;  // the caller's thread's own

  std::mutex mutex_;
  std::condition_variable changed_;
  // Item k at k mod n_, published when produced_ / staged_ / downloading_ > k.
  std::vector<item_record> ring_;
  std::vector<item_record> staged_items_;
  std::vector<item_record> downloaded_items_;
  std::size_t produced_ = 0;        // items the producer has filled
  std::size_t uploading_ = 0;       // items whose upload is issued
  std::size_t staged_ = 0;          // items whose stage is issued
  std::size_t downloading_ = 0;     // items whose download is issued
  std::size_t consumed_ = 0;        // items the consumer has returned from
  bool issuing_downloads_ = false;  // a thread is in issue_downloads()
  bool consumer_waiting_ = false;   // the consumer waits for the next item's stage
  double download_issue_ms_ = 0.0;  // host time issuing downloads, by whichever thread
  bool producing_done_ = false;     // no item after produced_ will come
  bool issuing_done_ = false;       // no stage after staged_ will come
  bool consuming_done_ = false;     // the consumer's thread is about to end
  bool aborted_ = false;            // the consumer or the device failed: stop everything
  std::exception_ptr error_;        // set: the producer stops
  std::size_t failed_item_ = 0;
  feed_part failed_part_ = feed_part::producer;
  bool stopped_ = false;

  // Written by one thread each, read after all are done.
  std::size_t producer_waits_ = 0;          // items from n_ on whose slot the producer waited for
  std::optional<std::size_t> issuer_from_;  // the first item the issuing thread issues (producer's thread)
  std::vector<double> producer_ms_;
  std::vector<FeedItem> described_;
  double issue_ms_ = 0.0;
  std::atomic<std::size_t> graph_captures_{0};  // the issuer's and the downloads
  std::size_t most_ahead_ = 0;
  std::vector<double> latency_ms_;
  std::vector<double> consumer_ms_;
  std::size_t input_bytes_ = 0;
  std::size_t output_bytes_ = 0;
  clock_type::time_point last_consumed_;
};

void feed_run::fail(std::size_t item, feed_part part, std::exception_ptr error, bool abort) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    // Consumed items succeeded: a device error seen later (errors are
    // sticky) belongs to an item still in flight.
    item = std::max(item, consumed_);
    if (!error_ || item < failed_item_) {
      error_ = std::move(error);
      failed_item_ = item;
      failed_part_ = part;
    }
    aborted_ = aborted_ || abort;
  }
  changed_.notify_all();
}

void feed_run::produce() {
  for (std::size_t k = 0;; ++k) {
    if (stop_.load(std::memory_order_relaxed)) {
      stopped_ = true;
      return;
    }
    feed_slot& slot = *res_.slots[k % n_];
    // The slot's input is free once item k - n's upload is done; and no
    // more than n items may wait for the consumer (backpressure). A stop()
    // made while this thread waited ends the run here, before item k.
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto slot_free = [&] { return error_ || k < n_ || (uploading_ > k - n_ && consumed_ + n_ >= k); };
      if (!slot_free()) {
        ++producer_waits_;
        wait_until(lock, slot_free);
      }
      if (error_) return;
      if (stop_.load(std::memory_order_relaxed)) {
        stopped_ = true;
        return;
      }
      most_ahead_ = std::max(most_ahead_, k - consumed_);
    }
    if (k >= n_) {
      const cudaError_t status = wait_for(slot.uploaded, options_.wait);
      if (status != cudaSuccess) {
        fail(k - n_, feed_part::device,
             std::make_exception_ptr(cuda_error(status, "cudaEventSynchronize", "waiting for an upload")),
             true);
        return;
      }
    }
    const auto started = clock_type::now();
    std::optional<std::size_t> produced;
    try {
      const nvtx_range range("Produce", k);
      produced = producer_(slot.host_in.data(), layout_.slot_elements, k);
      if (produced) check_item_size(*produced, k, options_);
    } catch (...) {
      fail(k, feed_part::producer, std::current_exception(), false);
      return;
    }
    const auto done = clock_type::now();
    if (!produced) return;
    producer_ms_.push_back(ms_between(started, done));
    const std::size_t n = *produced;
    const item_record item{n, n / layout_.ratio.in * layout_.ratio.out, done};
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ring_[k % n_] = item;
      produced_ = k + 1;
    }
    if (dedicated_issuer_ || issuer_from_) {
      changed_.notify_all();
    } else if (!issue_item(k, item)) {
      return;
    } else if (automatic_issuer_ && producer_set_the_pace(k)) {
      start_issuer(k + 1);
    }
    if (!consumer_started_) start_consumer();
  }
}

void feed_run::start_consumer() {
  consumer_started_ = true;
  try {
    res_.consumer->start([this] {
      keep_fine_timer_slack();  // its sleeps too are a few microseconds
      // The consumer's thread issues downloads too, on the caller's device;
      // if it cannot, the run is aborted and consume() returns at once.
      guarded(feed_part::device,
              [this] { check(cudaSetDevice(device_), "cudaSetDevice", "the feed's consuming thread"); });
      guarded(feed_part::consumer, [this] { consume(); });
      mark_done(consuming_done_);
    });
  } catch (...) {
    // No thread will consume: the run stops, and nothing waits for one.
    fail(0, feed_part::consumer, std::current_exception(), true);
    mark_done(consuming_done_);
  }
}

bool feed_run::producer_set_the_pace(std::size_t k) const {
  // Decided once, after the slots first filled and as many items again.
  // A producer the GPU keeps waiting gains nothing from a second thread
  // (its hand-off costs the GPU-bound run about half a percent); one that
  // never waits is the pace, and the ~20 us an item of issuing adds to it.
  // An eighth: one wait in the eight items watched, a slot freed late once.
  constexpr double most_waits_of_a_pace_setter = 1.0 / 8;
  if (k + 1 != std::size_t{n_} + feed_automatic_issuer_after) return false;
  return static_cast<double>(producer_waits_) <=
         most_waits_of_a_pace_setter * static_cast<double>(feed_automatic_issuer_after);
}

void feed_run::start_issuer(std::size_t first) {
  res_.issuer->start([this, first] {
    keep_fine_timer_slack();
    guarded(feed_part::device, [this, first] {
      // The current device is per thread: the stage runs on the caller's.
      check(cudaSetDevice(device_), "cudaSetDevice", "the feed's issuing thread");
      issue(first);
    });
    mark_done(issuing_done_);
  });
  issuer_from_ = first;  // once started: until then this thread issues, and ends the issuing
}

// Item k's upload on the uploads' stream (by stage) or its slot's, then
// "uploaded". `external`: inside a capture, where the record becomes a
// graph node that records the event at every replay (the host waits on it).
void feed_run::enqueue_upload(std::size_t k, const item_record& item, bool external) {
  feed_slot& slot = *res_.slots[k % n_];
  cudaStream_t s = slot.s.get();
  if (by_stage_) {
    s = res_.up.get();
    // Item k - n's stage must be done reading device_in.
    if (k >= n_) {
      check_item(cudaStreamWaitEvent(s, slot.computed.get(), 0), "cudaStreamWaitEvent", "before the H2D", k);
    }
  }
  check_item(cudaMemcpyAsync(slot.device_in.data(), slot.host_in.data(),
                             item.in_elements * layout_.input_element_bytes, cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync", "H2D", k);
  check_item(cudaEventRecordWithFlags(slot.uploaded.get(), s, external ? cudaEventRecordExternal : 0),
             "cudaEventRecordWithFlags", "after the H2D", k);
}

// Item k's stage on the stages' stream (by stage, then "computed") or its slot's.
void feed_run::enqueue_stage(std::size_t k, const item_record& item) {
  feed_slot& slot = *res_.slots[k % n_];
  if (by_stage_) {
    // After the item's upload, and after item k - n's download has read device_out.
    cudaStream_t s = res_.compute.get();
    check_item(cudaStreamWaitEvent(s, slot.uploaded.get(), 0), "cudaStreamWaitEvent", "before the stage", k);
    if (k >= n_) {
      check_item(cudaStreamWaitEvent(s, slot.ready.get(), 0), "cudaStreamWaitEvent", "before the stage", k);
    }
    stage_(slot.device_in.data(), item.in_elements, slot.device_out.data(), item.out_elements,
           res_.compute.view(), k);
    check_item(cudaGetLastError(), "kernel launch in the stage", "", k);
    check_item(cudaEventRecord(slot.computed.get(), s), "cudaEventRecord", "after the stage", k);
    return;
  }
  stage_(slot.device_in.data(), item.in_elements, slot.device_out.data(), item.out_elements, slot.s.view(),
         k);
  check_item(cudaGetLastError(), "kernel launch in the stage", "", k);
}

// Item k's download on the downloads' stream (by stage) or its slot's, then "ready".
void feed_run::enqueue_download(std::size_t k, const item_record& item, bool external) {
  feed_slot& slot = *res_.slots[k % n_];
  cudaStream_t s = slot.s.get();
  if (by_stage_) {
    s = res_.down.get();
    check_item(cudaStreamWaitEvent(s, slot.computed.get(), 0), "cudaStreamWaitEvent", "before the D2H", k);
  }
  if (item.out_elements > 0) {
    check_item(cudaMemcpyAsync(slot.host_out.data(), slot.device_out.data(),
                               item.out_elements * layout_.output_element_bytes, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync", "D2H", k);
  }
  check_item(cudaEventRecordWithFlags(slot.ready.get(), s, external ? cudaEventRecordExternal : 0),
             "cudaEventRecordWithFlags", "after the D2H", k);
}

// Runs `enqueue` inside a capture of stream `s` and returns the graph. A
// CUDA call that fails while capturing (the stage synchronized, or the
// capture was invalidated) is explained; what the stage itself throws goes
// through as it is.
template <typename Enqueue>
graph_exec feed_run::capture(std::size_t k, stream_view s, const char* what, Enqueue&& enqueue) {
  try {
    stream_capture capturing(s);
    enqueue();
    graph_exec g = capturing.end();
    ++graph_captures_;
    return g;
  } catch (const cuda_error&) {
    std::throw_with_nested(overlap::error(fmt::format(
        "feed_issue::graph_per_slot: item {}'s {} could not be captured into a CUDA graph (a stage that "
        "synchronizes, allocates or uses another stream without joining it back cannot be replayed; "
        "use feed_issue::direct)",
        k, what)));
  }
}

// Enqueues one part of item k on `s`: directly, or by replaying the slot's
// graph `g`, captured first when it was captured for another item size.
template <typename Enqueue>
void feed_run::enqueue_part(std::size_t k, stream_view s, const char* what, graph_exec& g,
                            std::optional<std::size_t>& captured_for, std::size_t elements,
                            Enqueue&& enqueue) {
  if (!graphs_) {
    enqueue(false);
    return;
  }
  if (captured_for != elements) {
    g = capture(k, s, what, [&] { enqueue(true); });
    captured_for = elements;
  }
  check_item(cudaGraphLaunch(g.get(), s.get()), "cudaGraphLaunch", what, k);
}

bool feed_run::issue_upload_and_stage(std::size_t k, const item_record& item) {
  {
    // Item k goes on the slot's stream after item k - n's download, which
    // must read device_out before item k's stage writes it: issued by now,
    // or about to be (see issue_downloads).
    std::unique_lock<std::mutex> lock(mutex_);
    wait_until(lock, [&] { return aborted_ || downloading_ + n_ > k; });
    if (aborted_) return false;
  }
  feed_slot& slot = *res_.slots[k % n_];
  slot_graphs& g = slot.graphs;
  feed_part part = feed_part::device;
  try {
    if (!graphs_) {
      enqueue_upload(k, item, false);
    } else {
      if (g.upload_elements != item.in_elements) {
        part = feed_part::stage;  // capturing: the stage's calls decide whether it works
        g.upload = capture(k, slot.s.view(), "upload and stage", [&] {
          enqueue_upload(k, item, true);
          enqueue_stage(k, item);
        });
        g.upload_elements = item.in_elements;
        part = feed_part::device;
      }
      check_item(cudaGraphLaunch(g.upload.get(), slot.s.get()), "cudaGraphLaunch", "upload and stage", k);
    }
  } catch (...) {
    fail(k, part, std::current_exception(), part == feed_part::device);
    return false;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    uploading_ = k + 1;
  }
  changed_.notify_all();
  if (graphs_) return true;
  try {
    enqueue_stage(k, item);
  } catch (...) {
    fail(k, feed_part::stage, std::current_exception(), false);
    return false;
  }
  return true;
}

bool feed_run::issue_download(std::size_t k, const item_record& item) {
  feed_slot& slot = *res_.slots[k % n_];
  try {
    enqueue_part(k, slot.s.view(), "download", slot.graphs.download, slot.graphs.download_elements,
                 item.out_elements, [&](bool external) { enqueue_download(k, item, external); });
  } catch (...) {
    fail(k, feed_part::device, std::current_exception(), true);
    return false;
  }
  return true;
}

bool feed_run::issue_item(std::size_t k, const item_record& item) {
  const auto started = clock_type::now();
  if (!issue_upload_and_stage(k, item)) return false;
  issue_ms_ += ms_between(started, clock_type::now());
  if (k < max_described_items) {
    described_.push_back(
        {item.in_elements * layout_.input_element_bytes, item.out_elements * layout_.output_element_bytes});
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    staged_items_[k % n_] = item;
    staged_ = k + 1;
    if (!consumer_waiting_) issue_downloads(lock);  // else the consumer's thread issues it
  }
  changed_.notify_all();
  return true;
}

void feed_run::issue_downloads(std::unique_lock<std::mutex>& lock) {
  if (issuing_downloads_) return;  // that thread sees what this one made possible
  issuing_downloads_ = true;
  bool issued = false;
  while (!aborted_ && downloading_ < staged_ && downloading_ < consumed_ + n_) {
    const std::size_t k = downloading_;
    const item_record item = staged_items_[k % n_];
    lock.unlock();
    const auto started = clock_type::now();
    const bool ok = issue_download(k, item);
    const double ms = ms_between(started, clock_type::now());
    lock.lock();
    if (!ok) break;  // fail() stopped the run
    download_issue_ms_ += ms;
    downloaded_items_[k % n_] = item;
    downloading_ = k + 1;
    issued = true;
  }
  issuing_downloads_ = false;
  if (issued) changed_.notify_all();  // the consumer waits for downloads
}

void feed_run::issue(std::size_t first) {
  for (std::size_t k = first;; ++k) {
    item_record item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wait_until(lock, [&] { return aborted_ || produced_ > k || producing_done_; });
      if (aborted_ || produced_ <= k) return;
      item = ring_[k % n_];
    }
    if (!issue_item(k, item)) return;
  }
}

void feed_run::consume() {
  for (std::size_t j = 0;; ++j) {
    item_record item;
    bool last_items = false;  // no item comes after those in flight
    {
      // Item j comes once its download is issued; none comes once the
      // issuer is done and item j's stage was never issued. Waiting for
      // item j's stage, this thread issues the download itself (the issuer
      // leaves it while consumer_waiting_ is set): when the producer paces
      // the run, that takes a third of the issuing off the producer's
      // thread, and the copy waits for the stage on the device anyway.
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        consumer_waiting_ = true;
        wait_until(lock, [&] {
          return aborted_ || downloading_ > j || (staged_ > j && !issuing_downloads_) ||
                 (issuing_done_ && staged_ <= j);
        });
        consumer_waiting_ = false;
        if (aborted_ || downloading_ > j || staged_ <= j) break;
        issue_downloads(lock);
      }
      if (aborted_ || downloading_ <= j) return;
      item = downloaded_items_[j % n_];
      last_items = producing_done_;
    }
    feed_slot& slot = *res_.slots[j % n_];
    const cudaError_t status = wait_for(slot.ready, options_.wait, last_items);
    if (status != cudaSuccess) {
      fail(j, feed_part::device,
           std::make_exception_ptr(cuda_error(status, "cudaEventSynchronize",
                                              fmt::format("item {} on the device (its copies or stage)", j))),
           true);
      return;
    }
    const auto started = clock_type::now();
    try {
      const nvtx_range range("Consume", j);
      consumer_(slot.host_out.data(), item.out_elements, j);
    } catch (...) {
      fail(j, feed_part::consumer, std::current_exception(), true);
      return;
    }
    const auto done = clock_type::now();
    latency_ms_.push_back(ms_between(item.produced, started));
    consumer_ms_.push_back(ms_between(started, done));
    input_bytes_ += item.in_elements * layout_.input_element_bytes;
    output_bytes_ += item.out_elements * layout_.output_element_bytes;
    last_consumed_ = done;
    {
      // Item j's output slot is free: item j + n's download may go now.
      std::unique_lock<std::mutex> lock(mutex_);
      consumed_ = j + 1;
      issue_downloads(lock);
    }
    changed_.notify_all();
  }
}

[[noreturn]] void feed_run::rethrow_failure() {
  const std::string consumed = consumed_ == 0
                                   ? std::string("no item was consumed")
                                   : fmt::format("items 0..{} were consumed, each once", consumed_ - 1);
  const std::string what =
      fmt::format("feed: the {} failed at item {}; {}", to_string(failed_part_), failed_item_, consumed);
  try {
    std::rethrow_exception(error_);
  } catch (...) {
    std::throw_with_nested(feed_error(what, failed_item_, failed_part_));
  }
}

feed_report feed_run::run() {
  // Graphs hold the previous run's stage: this run captures its own.
  for (const auto& slot : res_.slots) slot->graphs = slot_graphs{};
  const auto started = clock_type::now();
  last_consumed_ = started;
  check(cudaGetDevice(&device_), "cudaGetDevice", "starting a feed");
  {
    const fine_timer_slack slack;
    const bool issuer = dedicated_issuer_ || automatic_issuer_;
    if (issuer && !res_.issuer) res_.issuer = std::make_unique<parked_thread>();
    // Until both jobs have returned, this run's state must stay: waited for
    // below, and here too when something on the way throws (an issuer
    // never started has nothing to wait for).
    const waits_for_jobs jobs{res_.consumer.get(), issuer ? res_.issuer.get() : nullptr};
    if (dedicated_issuer_) start_issuer(0);
    guarded(feed_part::producer, [this] { produce(); });
    if (!consumer_started_) start_consumer();
    mark_done(producing_done_);
    if (!issuer_from_) mark_done(issuing_done_);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wait_until(
          lock, [&] { return consuming_done_ && issuing_done_; }, /*spin_first=*/true);
    }
    jobs.wait();  // every issued item is consumed, unless aborted
  }
  // Nothing may still be writing into the slots when run() returns or
  // throws. When the consumer saw every issued item's "ready" complete,
  // nothing is: each item's download came after its stage and its upload,
  // on the device, and nothing follows them on the feed's streams (three
  // stream synchronizes cost a GPU-bound run 7 us on an H200).
  cudaError_t drained = cudaSuccess;
  const auto drain = [&drained](const stream& s) {
    const cudaError_t status = cudaStreamSynchronize(s.get());
    if (drained == cudaSuccess) drained = status;
  };
  const bool every_item_seen_done = !error_ && consumed_ == uploading_ && consumed_ == downloading_;
  if (!every_item_seen_done) {
    if (by_stage_) {
      for (const stream* s : {&res_.up, &res_.compute, &res_.down}) drain(*s);
    } else {
      for (const auto& slot : res_.slots) drain(slot->s);
    }
  }
  if (error_) rethrow_failure();
  check(drained, "cudaStreamSynchronize", "draining the feed");

  feed_report r;
  r.items = consumed_;
  r.input_bytes = input_bytes_;
  r.output_bytes = output_bytes_;
  r.wall_ms = ms_between(started, last_consumed_);
  if (r.wall_ms > 0.0) {
    r.items_per_second = static_cast<double>(r.items) / (r.wall_ms / 1e3);
    r.gigabytes_per_second = static_cast<double>(r.input_bytes + r.output_bytes) / (r.wall_ms * 1e6);
  }
  r.latency = latency_of(latency_ms_);
  r.producer_ms = median_of(producer_ms_);
  r.consumer_ms = median_of(consumer_ms_);
  r.host_issue_ms = issue_ms_ + download_issue_ms_;
  r.graph_captures = graph_captures_.load();
  r.slots = n_;
  r.slot_elements = layout_.slot_elements;
  r.most_ahead = most_ahead_;
  r.stopped = stopped_;
  r.dedicated_issuer_from = issuer_from_;
  r.shape.slots = n_;
  r.shape.streams = by_stage_ ? feed_streams::by_stage : feed_streams::by_slot;
  described_.resize(std::min(described_.size(), r.items));
  r.shape.items = std::move(described_);
  r.shape.producer_time = r.producer_ms;
  r.shape.consumer_time = r.consumer_ms;
  r.shape.name = "cuda::Feed";
  return r;
}

}  // namespace

feed_engine::feed_engine() = default;
feed_engine::~feed_engine() = default;

feed_report feed_engine::run(const feed_layout& layout, const feed_options& options,
                             const erased_producer& producer, const erased_stage& stage,
                             const erased_consumer& consumer) {
  // A stop() asked for during this run ends this run only.
  struct clear_stop {
    std::atomic<bool>& flag;
    ~clear_stop() { flag.store(false, std::memory_order_relaxed); }
  } clear{stop_requested_};
  if (options.devices.size() > 1) return run_on_devices(layout, options, producer, stage, consumer);
  std::optional<device_scope> on;
  if (options.devices.size() == 1) {
    check_device_list(options.devices);
    on.emplace(options.devices.front());
  }
  int current = 0;
  check(cudaGetDevice(&current), "cudaGetDevice", "starting a Feed run");
  if (resources_ && resources_device_ != current)
    throw invalid_input(
        fmt::format("devices: this Feed's slots are on GPU {} (its first run's), not GPU {}: make "
                    "a Feed per GPU, or list the GPUs in feed_options::devices",
                    resources_device_, current));
  if (!resources_) {
    const std::size_t out_elements = check_feed_options(options, layout.input_element_bytes);
    const unsigned slots = options.slots.value_or(default_feed_slots(builtin_model_of_current_device()));
    auto res = std::make_unique<feed_resources>();
    res->wait = options.wait;
    for (unsigned s = 0; s < slots; ++s) {
      res->slots.push_back(std::make_unique<feed_slot>(layout.slot_elements * layout.input_element_bytes,
                                                       out_elements * layout.output_element_bytes,
                                                       options.wait));
    }
    // The device buffers were allocated in stream order.
    for (const auto& slot : res->slots) slot->s.synchronize();
    resources_ = std::move(res);
    resources_device_ = current;
  } else if (resources_->wait != options.wait) {
    for (const auto& slot : resources_->slots) {
      slot->uploaded = event(event_timing::disabled, events_for(options.wait));
      slot->ready = event(event_timing::disabled, events_for(options.wait));
    }
    resources_->wait = options.wait;
  }
  feed_run r(layout, options, *resources_, producer, stage, consumer, stop_requested_);
  return r.run();
}

}  // namespace overlap::cuda::detail
