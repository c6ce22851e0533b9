// A Feed run over several GPUs (feed_options::devices): item k goes to GPU
// k mod N. Each GPU has an engine of its own (slots, streams, consuming
// thread) run on a thread of its own with that GPU current; the engines
// number their items locally (GPU i's j-th item is item j*N + i), and take
// turns so that the producer is called in item order and the consumer
// receives the items in item order, one call at a time.
//
// Why the turns cannot deadlock: each engine produces on its run thread and
// consumes on a thread of its own, so an engine waiting for its turn to
// produce never holds back its consumer. The earliest unconsumed item can
// always be produced (the items before it were, and the slot it needs was
// freed by an item N*slots earlier, consumed already) and then consumed.
//
// A failure at item k (the producer's, the stage's, the consumer's, or the
// device's, which surfaces only when that GPU's engine returns) ends
// production at k; every item before k is still consumed, none after it.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "overlap/cuda/device_scope.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/feed.hpp"

namespace overlap::cuda::detail {

namespace {

constexpr std::size_t no_item = std::numeric_limits<std::size_t>::max();

/// The turns the GPUs' engines take, and where a run ends.
class item_turns {
 public:
  /// Waits for item k's turn to be produced; false when the run produces no
  /// more items from k on (the producer said it was done, stop(), a failure).
  bool wait_to_produce(std::size_t k) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return next_produce_ == k || k >= end_; });
    return k < end_;
  }
  /// Item k was produced (`more`), or the producer said there are no more.
  void produced(std::size_t k, bool more) {
    {
      const std::lock_guard lock(mutex_);
      if (more) {
        next_produce_ = k + 1;
      } else {
        end_ = std::min(end_, k);
      }
    }
    changed_.notify_all();
  }
  /// Waits for item k's turn to be consumed; false when it is not to be
  /// consumed (a failure at an earlier or the same item).
  bool wait_to_consume(std::size_t k) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return next_consume_ == k || k >= failed_at_; });
    return k < failed_at_;
  }
  void consumed(std::size_t k) {
    {
      const std::lock_guard lock(mutex_);
      next_consume_ = k + 1;
    }
    changed_.notify_all();
  }
  /// No item from k on is produced (stop()).
  void end_at(std::size_t k) {
    {
      const std::lock_guard lock(mutex_);
      end_ = std::min(end_, k);
    }
    changed_.notify_all();
  }
  /// Item k failed: nothing from k on is produced, nothing after it consumed.
  void fail_at(std::size_t k) {
    {
      const std::lock_guard lock(mutex_);
      end_ = std::min(end_, k);
      failed_at_ = std::min(failed_at_, k);
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t next_produce_ = 0;
  std::size_t next_consume_ = 0;
  std::size_t end_ = no_item;
  std::size_t failed_at_ = no_item;
};

/// The first failure in item order, with the GPU it happened on.
class first_failure {
 public:
  void note(std::size_t item, feed_part part, int device, std::exception_ptr error) {
    const std::lock_guard lock(mutex_);
    if (item >= item_) return;
    item_ = item;
    part_ = part;
    device_ = device;
    error_ = std::move(error);
  }
  /// Throws feed_error naming the global item, the part and the GPU, the
  /// original exception nested; nothing when no failure was noted.
  void rethrow() const {
    if (!error_) return;
    const std::string consumed = item_ == 0 ? std::string("no item was consumed")
                                            : fmt::format("items 0..{} were consumed, each once", item_ - 1);
    const std::string what = fmt::format("feed: the {} failed at item {} on GPU {}; {}", to_string(part_),
                                         item_, device_, consumed);
    try {
      std::rethrow_exception(error_);
    } catch (...) {
      std::throw_with_nested(feed_error(what, item_, part_));
    }
  }

 private:
  mutable std::mutex mutex_;
  std::size_t item_ = no_item;
  feed_part part_ = feed_part::device;
  int device_ = 0;
  std::exception_ptr error_;
};

// The whole run's figures from the GPUs' (feed_report::parts says how).
feed_report joined_report(const std::vector<feed_device_part>& parts, double wall_ms, bool stopped) {
  feed_report r;
  for (const feed_device_part& p : parts) {
    const feed_report& g = *p.report;
    r.items += g.items;
    r.input_bytes += g.input_bytes;
    r.output_bytes += g.output_bytes;
    r.host_issue_ms += g.host_issue_ms;
    r.graph_captures += g.graph_captures;
    r.most_ahead += g.most_ahead;
    r.latency.median_ms = std::max(r.latency.median_ms, g.latency.median_ms);
    r.latency.p95_ms = std::max(r.latency.p95_ms, g.latency.p95_ms);
    r.latency.max_ms = std::max(r.latency.max_ms, g.latency.max_ms);
    r.producer_ms = std::max(r.producer_ms, g.producer_ms);
    r.consumer_ms = std::max(r.consumer_ms, g.consumer_ms);
    r.slots = g.slots;
    r.slot_elements = g.slot_elements;
  }
  if (!parts.empty()) r.shape = parts.front().report->shape;
  r.wall_ms = wall_ms;
  if (wall_ms > 0.0) {
    r.items_per_second = static_cast<double>(r.items) / (wall_ms / 1e3);
    r.gigabytes_per_second = static_cast<double>(r.input_bytes + r.output_bytes) / (wall_ms * 1e6);
  }
  r.stopped = stopped;
  r.parts = parts;
  return r;
}

}  // namespace

feed_report feed_engine::run_on_devices(const feed_layout& layout, const feed_options& options,
                                        const erased_producer& producer, const erased_stage& stage,
                                        const erased_consumer& consumer) {
  check_device_list(options.devices);
  const std::vector<int>& devices = options.devices;
  const std::size_t n = devices.size();
  // An engine per GPU, kept between runs over the same GPUs.
  bool same = per_device_.size() == n;
  for (std::size_t i = 0; same && i < n; ++i) same = per_device_[i].first == devices[i];
  if (!same) {
    per_device_.clear();
    for (const int d : devices) per_device_.emplace_back(d, std::make_unique<feed_engine>());
  }
  feed_options one = options;
  one.devices.clear();
  // Each GPU's producer call waits for its item's turn, which would read as
  // a producer that sets the pace: the producers' threads issue.
  if (one.issuing_thread == feed_issuing_thread::automatic)
    one.issuing_thread = feed_issuing_thread::producer;

  item_turns turns;
  first_failure failure;
  std::atomic<bool> stopped{false};
  std::vector<feed_report> reports(n);
  const auto started = std::chrono::steady_clock::now();
  const auto run_gpu = [&](std::size_t i) {
    const int device = devices[i];
    const auto global = [&](std::size_t j) { return j * n + i; };
    const erased_producer produce = [&, i](void* slot, std::size_t capacity,
                                           std::size_t j) -> std::optional<std::size_t> {
      const std::size_t k = global(j);
      if (!turns.wait_to_produce(k)) return std::nullopt;
      if (stop_requested_.load(std::memory_order_relaxed)) {
        stopped.store(true, std::memory_order_relaxed);
        turns.end_at(k);
        return std::nullopt;
      }
      std::optional<std::size_t> filled;
      try {
        filled = producer(slot, capacity, k);
      } catch (...) {
        failure.note(k, feed_part::producer, devices[i], std::current_exception());
        turns.fail_at(k);
        throw;
      }
      turns.produced(k, filled.has_value());
      return filled;
    };
    const erased_stage launch = [&, i](const void* in, std::size_t in_count, void* out, std::size_t out_count,
                                       stream_view s, std::size_t j) {
      try {
        stage(in, in_count, out, out_count, s, global(j));
      } catch (...) {
        failure.note(global(j), feed_part::stage, devices[i], std::current_exception());
        turns.fail_at(global(j));
        throw;
      }
    };
    const erased_consumer consume = [&, i](const void* out, std::size_t count, std::size_t j) {
      const std::size_t k = global(j);
      if (!turns.wait_to_consume(k)) return;  // after a failure at an earlier item: not consumed
      try {
        consumer(out, count, k);
      } catch (...) {
        failure.note(k, feed_part::consumer, devices[i], std::current_exception());
        turns.fail_at(k);
        throw;
      }
      turns.consumed(k);
    };
    try {
      const device_scope on(device);
      reports[i] = per_device_[i].second->run(layout, one, produce, launch, consume);
    } catch (const feed_error& e) {
      // A producer, stage or consumer failure was noted above with its
      // cause; a device failure is seen only here.
      failure.note(global(e.item()), e.part(), device, std::current_exception());
      turns.fail_at(global(e.item()));
    } catch (...) {
      // The GPU's slots could not be made: nothing of its items ran.
      failure.note(i, feed_part::device, device, std::current_exception());
      turns.fail_at(i);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(n);
  try {
    for (std::size_t i = 0; i < n; ++i) threads.emplace_back(run_gpu, i);
  } catch (...) {
    turns.fail_at(0);  // the GPUs started stop at once
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  failure.rethrow();
  std::vector<feed_device_part> parts;
  parts.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    parts.push_back({devices[i], std::make_shared<const feed_report>(std::move(reports[i]))});
  return joined_report(parts, wall_ms, stopped.load(std::memory_order_relaxed));
}

}  // namespace overlap::cuda::detail
