// overlap::cuda::Feed: a stream of items through N slots (2 = ping-pong).
//
// Pipeline moves one big buffer; a Feed serves items that arrive over time
// (frames, packets, batches). Each slot is a pinned input and output pair
// with its device buffers; the copies and stages go on a stream per stage
// (feed_options::streams). A producer fills the next slot's
// input on the host (on the thread that called run()), the stage launches
// the kernel (on the thread that issues the copies: the producer's while
// the GPU sets the pace, then one of the feed's own if the producer turns
// out to, so that issuing does not add to a slow producer; or always one
// of them: feed_issuing_thread), and a consumer receives each finished
// output, in item order, on a thread of its own (kept by the Feed between
// runs, as the dedicated issuer is), so the producer of item k + N - 1 runs
// while item k is on the GPU and the consumer of item k - 1 runs. When every slot is in flight the producer
// waits, asleep: the feed never runs more than N items ahead of its
// consumer. FeedShape (overlap/core/feed_shape.hpp) describes the same
// issue as a Program, to simulate, check and draw.
//
//   overlap::cuda::feed_options options;
//   options.slot_elements = 1 << 20;                         // the largest frame
//   overlap::cuda::Feed<float> feed(options);
//   auto report = feed.run(
//       [&](std::span<float> slot, std::size_t item) -> std::optional<std::size_t> {
//         if (item == frames) return std::nullopt;           // done
//         return camera.read_into(slot);                     // elements filled
//       },
//       [](std::span<const float> in, std::span<float> out, overlap::cuda::stream_view s, std::size_t) {
//         my_kernel<<<blocks, 256, 0, s.get()>>>(in.data(), out.data(), in.size());
//       },
//       [&](std::span<const float> result, std::size_t item) { sink.write(result); });
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/feed_shape.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::cuda {

/// How a Feed issues each item's copies and stage.
enum class feed_issue : std::uint8_t {
  /// Runtime calls for every item (about 5 an item); the stage is called
  /// for every item.
  direct,
  /// Each slot's upload and stage, and its download, are captured into two
  /// CUDA graphs on the slot's first item of a size and replayed with one
  /// cudaGraphLaunch each for its later items of that size: fewer host
  /// calls per item, which counts for small items. The stage is called
  /// only while capturing (once per slot and item size), so it must launch
  /// the same work for every item of a size: use `in`, `out` and their
  /// sizes, not the item index.
  graph_per_slot,
};

/// Which host thread issues each item's copies and stage.
enum class feed_issuing_thread : std::uint8_t {
  /// The producer's thread, right after each item is produced: the fewest
  /// thread hand-offs, the steadiest when the GPU sets the pace. Issuing
  /// the upload and stage (about 15-25 us an item) adds to each producer
  /// call; the download goes from the consumer's thread when that one is
  /// idle, waiting for the item.
  producer,
  /// A thread of the feed's own: the producer only produces, so a producer
  /// slower than the GPU sets the pace alone. One more hand-off per item.
  dedicated,
  /// The producer's thread while the GPU sets the pace; from early in the
  /// run on, a thread of the feed's own if the producer does: when the
  /// producer waited for a free slot on at most an eighth of the items after
  /// the first slots-full (feed_automatic_issuer_after), the items after them
  /// go to the dedicated issuer (feed_report::dedicated_issuer_from). A
  /// run over several GPUs issues on the producer's threads.
  automatic,
};

/// Items an automatic issuing thread watches, after the slots first fill,
/// before it decides: the producer must have waited for a slot on at most
/// an eighth of them to hand the issuing to a thread of the feed's own.
inline constexpr std::size_t feed_automatic_issuer_after = 8;

/// How a Feed's threads wait for the GPU (an item's upload, its download).
enum class feed_wait : std::uint8_t {
  /// Query the item's event, sleeping 10 us between queries for its first
  /// 2 ms and 200 us after: the thread wakes within microseconds of the
  /// copy, and a long wait costs a few wake-ups a millisecond. The waits
  /// between the feed's threads poll likewise. On the lent machine a
  /// blocking wait woke up to 300 us late, enough to slow a GPU-bound feed
  /// of 4 MiB frames by a third in some runs, and merely recording
  /// blocking-sync events slowed it by 3% (bench/RESULTS.md, issue 12
  /// parts 3 and 4), so these events are plain ones.
  poll,
  /// Block at once: in the driver on blocking-sync events, and on a
  /// condition variable between the feed's threads. The fewest wake-ups,
  /// for feeds whose producer and consumer keep every core busy (a staged
  /// Pipeline's host copy threads), where 10 us wake-ups take turns from
  /// them.
  block,
};

/// How a Feed is laid out. Checked when the Feed is made (no CUDA call).
struct feed_options {
  /// Input elements one slot holds: the largest item (> 0). Required.
  std::size_t slot_elements = 0;
  /// Slots (>= 1; 2 is ping-pong). Automatic: enough to keep every engine
  /// of the GPU busy (default_feed_slots of its built-in model: 3 on an H100).
  std::optional<unsigned> slots;
  /// Output elements per input elements, for every item.
  output_ratio ratio;
  /// Runtime calls per item, or graphs replayed per slot.
  feed_issue issue = feed_issue::direct;
  /// The producer's thread issues, a thread of the feed's own, or the
  /// second from early in the run if the producer sets the pace.
  feed_issuing_thread issuing_thread = feed_issuing_thread::automatic;
  /// How the threads wait for uploads and downloads.
  feed_wait wait = feed_wait::poll;
  /// A stream per stage (uploads, stages, downloads; the stage is called
  /// with the stages' stream), or a stream per slot. feed_issue::graph_per_slot
  /// replays each slot's work on the slot's stream, whatever this says.
  feed_streams streams = feed_streams::by_stage;
  /// GPUs to spread the items over, item k to devices[k mod N] (all_devices()
  /// names every visible one); each GPU has its own slots, streams and
  /// threads, the producer is called in item order and the consumer
  /// receives the items in item order, one call at a time, from the GPUs'
  /// threads. Empty: the current GPU alone. A Feed keeps its slots on the
  /// GPUs of its first run.
  std::vector<int> devices;
};

/// Milliseconds from an item's production (the producer's return) to its
/// consumption (the consumer's call): its copies, kernel and waits.
struct feed_latency {
  double median_ms = 0.0;  ///< median over the consumed items (0 when none)
  double p95_ms = 0.0;     ///< 95th percentile
  double max_ms = 0.0;     ///< the slowest item
};

struct feed_report;

/// One GPU's share of a Feed run over several (feed_options::devices).
struct feed_device_part {
  int device = 0;  ///< CUDA ordinal
  std::shared_ptr<const feed_report>
      report;  ///< its items (numbered on that GPU: its i-th is item i*N + its index)
};

/// What a run of a Feed did.
struct feed_report {
  std::size_t items = 0;          ///< items consumed
  std::size_t input_bytes = 0;    ///< bytes of every consumed item's input
  std::size_t output_bytes = 0;   ///< bytes of every consumed item's output
  double wall_ms = 0.0;           ///< from run()'s start to the last consumer's return
  double items_per_second = 0.0;  ///< items over wall_ms (0 when wall_ms is 0)
  /// Input plus output bytes per second over wall_ms (1 GB = 1e9 bytes).
  double gigabytes_per_second = 0.0;
  feed_latency latency;        ///< production-to-consumption time per item
  double producer_ms = 0.0;    ///< median host time of one producer call
  double consumer_ms = 0.0;    ///< median host time of one consumer call
  double host_issue_ms = 0.0;  ///< host time spent issuing copies, stages and events, in all
  /// CUDA graphs captured (feed_issue::graph_per_slot): two per slot and item size.
  std::size_t graph_captures = 0;
  unsigned slots = 0;             ///< slots used (the resolved feed_options::slots)
  std::size_t slot_elements = 0;  ///< input elements one slot holds
  /// The most items produced and not yet consumed at once (<= slots).
  std::size_t most_ahead = 0;
  bool stopped = false;  ///< stop() ended the run before the producer said it was done
  /// The first item a thread of the feed's own issued: 0 with
  /// feed_issuing_thread::dedicated; with automatic, the item after those
  /// it watched when the producer set the pace; empty when the producer's
  /// thread issued every item.
  std::optional<std::size_t> dedicated_issuer_from;
  /// The run as a FeedShape (its first max_described_items items, and the
  /// producer's and consumer's median times): make_feed_program(shape)
  /// simulates, checks or draws it. Over several GPUs, the first GPU's part.
  FeedShape shape;
  /// Over several GPUs, one per GPU; the fields above are the whole run's
  /// (latency: the slowest GPU's median, 95th percentile and maximum;
  /// slots: per GPU; most_ahead: summed). Empty on one GPU.
  std::vector<feed_device_part> parts;
};

/// Items a feed_report's shape keeps: enough for the steady state.
inline constexpr std::size_t max_described_items = 4096;

/// Which part of a feed failed.
enum class feed_part { producer, stage, consumer, device };
/// "producer", "stage", "consumer", "device".
[[nodiscard]] std::string_view to_string(feed_part part) noexcept;

/// A feed stopped on a failure: the item, and which part failed. Every item
/// before it was consumed exactly once (the consumer saw items 0..item-1,
/// and for a consumer failure also `item`, on which it threw); none after
/// it was. The original exception is nested.
class feed_error : public error {
 public:
  /// `what` is the message; `item` the failed item's index, `part` what failed on it.
  feed_error(const std::string& what, std::size_t item, feed_part part)
      : error(what), item_(item), part_(part) {}
  /// Index of the item the failure stopped at.
  [[nodiscard]] std::size_t item() const noexcept { return item_; }
  /// Which part failed.
  [[nodiscard]] feed_part part() const noexcept { return part_; }

 private:
  std::size_t item_;
  feed_part part_;
};

namespace detail {

/// The element-type-free layout of a Feed.
struct feed_layout {
  std::size_t slot_elements = 0;
  std::size_t input_element_bytes = 1;
  std::size_t output_element_bytes = 1;
  output_ratio ratio;
};

/// Fills the slot (pointer, capacity in elements) for an item; the elements
/// filled, or nullopt when there are no more items.
using erased_producer = std::function<std::optional<std::size_t>(void*, std::size_t, std::size_t)>;
/// Receives an item's output (pointer, elements) on the host.
using erased_consumer = std::function<void(const void*, std::size_t, std::size_t)>;

/// Checks the options (throws invalid_input naming the field) and returns
/// the output elements of a full slot. No CUDA call.
std::size_t check_feed_options(const feed_options& options, std::size_t input_element_bytes);

/// Checks a produced item's size: within the slot, and whole outputs at the
/// ratio. Throws invalid_input naming the producer and the item. No CUDA call.
void check_item_size(std::size_t elements, std::size_t item, const feed_options& options);

struct feed_resources;

/// Slots, threads and the stop flag behind a Feed.
class feed_engine {
 public:
  feed_engine();
  ~feed_engine();
  feed_engine(const feed_engine&) = delete;
  feed_engine& operator=(const feed_engine&) = delete;
  feed_engine(feed_engine&&) = delete;
  feed_engine& operator=(feed_engine&&) = delete;

  feed_report run(const feed_layout& layout, const feed_options& options, const erased_producer& producer,
                  const erased_stage& stage, const erased_consumer& consumer);
  void stop() noexcept { stop_requested_.store(true, std::memory_order_relaxed); }

 private:
  /// A run over several GPUs (src/cuda/feed_devices.cpp).
  feed_report run_on_devices(const feed_layout& layout, const feed_options& options,
                             const erased_producer& producer, const erased_stage& stage,
                             const erased_consumer& consumer);

  std::unique_ptr<feed_resources> resources_;
  int resources_device_ = -1;  // the GPU resources_ were made on
  std::atomic<bool> stop_requested_{false};
  /// Runs over several GPUs: an engine per GPU, by its ordinal.
  std::vector<std::pair<int, std::unique_ptr<feed_engine>>> per_device_;
};

}  // namespace detail

/// A stream of items through N slots: produced on the host, copied in,
/// processed by the stage, copied out and consumed on the host, all
/// overlapped. Reuse one Feed for many runs: its slots are kept. Not
/// copyable or movable (stop() may be called from another thread).
template <typename In, typename Out = In>
class Feed {
 public:
  /// Fills `slot` (pinned host memory, slot_elements long) with item
  /// `item` and returns the elements filled (> 0), or std::nullopt when
  /// there are no more items.
  using producer_function = std::function<std::optional<std::size_t>(std::span<In> slot, std::size_t item)>;
  /// Launches the kernel for one item on `stream`: `in` and `out` are device
  /// memory. Called on the thread that issues (options().issuing_thread),
  /// with the caller's device current, one item at a time, in item order.
  /// By default (automatic) that thread can change early in a run, from
  /// the producer's to the feed's own, after which the stage runs beside
  /// the producer: state they share needs a lock or an atomic, or set
  /// feed_issuing_thread::producer.
  using stage_function =
      std::function<void(std::span<const In> in, std::span<Out> out, stream_view stream, std::size_t item)>;
  /// Receives item `item`'s output (pinned host memory, valid during the
  /// call), on the feed's consuming thread.
  using consumer_function = std::function<void(std::span<const Out> result, std::size_t item)>;

  /// Throws invalid_input naming the field (slot_elements, slots, ratio); no CUDA call.
  explicit Feed(feed_options options) : options_(std::move(options)) {
    (void)detail::check_feed_options(options_, sizeof(In));
  }

  /// Runs items until the producer returns std::nullopt or stop() is
  /// called, and returns when every produced item has been consumed.
  /// Throws feed_error naming the item and the part when the producer, the
  /// stage, the consumer or the device fails, after draining what was in
  /// flight; an item larger than the slot is a producer failure.
  feed_report run(const producer_function& producer, const stage_function& stage,
                  const consumer_function& consumer) {
    return engine_.run(
        {options_.slot_elements, sizeof(In), sizeof(Out), options_.ratio}, options_,
        [&producer](void* slot, std::size_t capacity, std::size_t item) {
          return producer(std::span<In>(static_cast<In*>(slot), capacity), item);
        },
        [&stage](const void* in, std::size_t in_count, void* out, std::size_t out_count, stream_view s,
                 std::size_t item) {
          stage(std::span<const In>(static_cast<const In*>(in), in_count),
                std::span<Out>(static_cast<Out*>(out), out_count), s, item);
        },
        [&consumer](const void* out, std::size_t count, std::size_t item) {
          consumer(std::span<const Out>(static_cast<const Out*>(out), count), item);
        });
  }

  /// Asks a run to end: the producer is not called again, and run()
  /// returns once the items in flight are consumed (feed_report::stopped).
  /// Thread-safe; callable from the producer, the consumer or another thread.
  /// A stop() while no run is under way ends the next run before its first item.
  void stop() noexcept { engine_.stop(); }

  /// The options the Feed was made with (as given; automatic slots unresolved).
  [[nodiscard]] const feed_options& options() const noexcept { return options_; }

 private:
  feed_options options_;
  detail::feed_engine engine_;
};

}  // namespace overlap::cuda
