// Feed on a GPU: every item's every element against a host reference, in
// order, exactly once (random sizes up to the slot, random data); the
// backpressure bound and no busy waiting; a failure in each callable at item
// k; stop() with items in flight; the run described as a race-free Program.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/check/races.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/feed.hpp"
#include "overlap/sim/simulator.hpp"
#include "test_kernels.hpp"

namespace {

using overlap::cuda::Feed;
using overlap::cuda::feed_error;
using overlap::cuda::feed_issue;
using overlap::cuda::feed_issuing_thread;
using overlap::cuda::feed_options;
using overlap::cuda::feed_part;
using overlap::cuda::feed_wait;
using overlap::cuda::stream_view;

#define SKIP_WITHOUT_GPU() \
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device"

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Item k: 1..slot elements, each a random float in [-1000, 1000).
std::size_t item_size(std::size_t item, std::size_t slot) {
  return 1 + mix(item * 7919 + 1) % slot;
}
float item_value(std::size_t item, std::size_t i) {
  const auto bits = static_cast<std::uint32_t>(mix((item << 32) ^ i) >> 40);  // 24 random bits
  return static_cast<float>(bits) / static_cast<float>(1 << 24) * 2000.0F - 1000.0F;
}

feed_options with(std::size_t slot_elements, std::optional<unsigned> slots) {
  feed_options o;
  o.slot_elements = slot_elements;
  o.slots = slots;
  return o;
}

// Fills the slot with item k of `items`, then says done.
auto producer_of(std::size_t items, std::size_t slot) {
  return [items, slot](std::span<float> s, std::size_t k) -> std::optional<std::size_t> {
    if (k == items) return std::nullopt;
    const std::size_t n = item_size(k, slot);
    for (std::size_t i = 0; i < n; ++i) s[i] = item_value(k, i);
    return n;
  };
}

void axpb_stage(std::span<const float> in, std::span<float> out, stream_view s, std::size_t /*unused*/) {
  overlap_test::launch_axpb(in, out, s);
}

// Checks each consumed item against y = 2x + 1 of what was produced, and its order.
struct checking_consumer {
  std::size_t slot;
  std::size_t next = 0;
  std::size_t bad_elements = 0;
  std::size_t out_of_order = 0;
  std::size_t wrong_size = 0;
  void operator()(std::span<const float> out, std::size_t k) {
    if (k != next) ++out_of_order;
    next = k + 1;
    if (out.size() != item_size(k, slot)) ++wrong_size;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i] != 2.0F * item_value(k, i) + 1.0F) ++bad_elements;
    }
  }
};

// Every item arrived once, in order, of its size, each element right.
void expect_every_item(const checking_consumer& check, std::size_t items) {
  EXPECT_EQ(check.next, items);
  EXPECT_EQ(check.out_of_order, 0U);
  EXPECT_EQ(check.wrong_size, 0U);
  EXPECT_EQ(check.bad_elements, 0U);
}

// producer_of, pausing `pause` before each item: a producer slower than the GPU.
auto paced_producer_of(std::size_t items, std::size_t slot, std::chrono::microseconds pause) {
  return [produce = producer_of(items, slot), pause](std::span<float> s, std::size_t k) {
    std::this_thread::sleep_for(pause);
    return produce(s, k);
  };
}

// How the items are issued: directly on a stream per stage or per slot,
// or as each slot's graphs (which replay on the slot's stream).
struct feed_issue_way {
  feed_issue issue;
  overlap::feed_streams streams;
  const char* name;
};
constexpr feed_issue_way issue_ways[] = {
    {feed_issue::direct, overlap::feed_streams::by_stage, "by_stage"},
    {feed_issue::direct, overlap::feed_streams::by_slot, "by_slot"},
    {feed_issue::graph_per_slot, overlap::feed_streams::by_slot, "graphs"},
};

// Slots, how the items are issued, and from which thread.
class FeedIntegrity
    : public ::testing::TestWithParam<std::tuple<unsigned, feed_issue_way, feed_issuing_thread>> {};

TEST_P(FeedIntegrity, EveryItemArrivesOnceInOrderAndExact) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t slot = 10'007;  // prime: items of every remainder
  constexpr std::size_t items = 300;
  const auto [slots, way, thread] = GetParam();
  const feed_issue issue = way.issue;
  feed_options options = with(slot, slots);
  options.issue = issue;
  options.streams = way.streams;
  options.issuing_thread = thread;
  Feed<float> feed(options);
  for (int run = 0; run < 2; ++run) {  // the slots are kept between runs
    checking_consumer check{slot};
    const auto report = feed.run(producer_of(items, slot), axpb_stage,
                                 [&](std::span<const float> out, std::size_t k) { check(out, k); });
    EXPECT_EQ(check.next, items);
    EXPECT_EQ(check.out_of_order, 0U);
    EXPECT_EQ(check.wrong_size, 0U);
    EXPECT_EQ(check.bad_elements, 0U);
    EXPECT_EQ(report.items, items);
    std::size_t bytes = 0;
    for (std::size_t k = 0; k < items; ++k) bytes += item_size(k, slot) * sizeof(float);
    EXPECT_EQ(report.input_bytes, bytes);
    EXPECT_EQ(report.output_bytes, bytes);
    EXPECT_EQ(report.slots, slots);
    EXPECT_EQ(report.shape.streams,
              issue == feed_issue::direct ? way.streams : overlap::feed_streams::by_slot);
    EXPECT_FALSE(report.stopped);
    EXPECT_LE(report.most_ahead, slots);
    if (issue == feed_issue::direct) {
      EXPECT_EQ(report.graph_captures, 0U);
    } else {
      // Random sizes: a capture for nearly every item's upload and download.
      EXPECT_GE(report.graph_captures, items);
    }
    EXPECT_GT(report.items_per_second, 0.0);
    EXPECT_GT(report.latency.median_ms, 0.0);
    EXPECT_LE(report.latency.median_ms, report.latency.p95_ms);
    EXPECT_LE(report.latency.p95_ms, report.latency.max_ms);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Slots, FeedIntegrity,
    ::testing::Combine(::testing::Values(1U, 2U, 3U, 4U, 7U), ::testing::ValuesIn(issue_ways),
                       ::testing::Values(feed_issuing_thread::producer, feed_issuing_thread::dedicated,
                                         feed_issuing_thread::automatic)),
    [](const auto& param_info) {
      const feed_issuing_thread thread = std::get<2>(param_info.param);
      return std::to_string(std::get<0>(param_info.param)) + "_slots_" + std::get<1>(param_info.param).name +
             (thread == feed_issuing_thread::producer    ? "_on_producer"
              : thread == feed_issuing_thread::dedicated ? "_dedicated"
                                                         : "_automatic");
    });

// feed_issuing_thread::automatic: a producer slower than the GPU (1 ms an
// item, the GPU's work some microseconds) never waits for a slot, and the
// issuing goes to the feed's thread after the slots first fill and eight
// items more; every item still arrives once, in order, exact.
TEST(FeedAutomaticIssuer, AProducerThatSetsThePaceHandsTheIssuingOver) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t slot = 4099;
  constexpr unsigned slots = 3;
  constexpr std::size_t items = 40;
  const feed_options options = with(slot, slots);
  EXPECT_EQ(options.issuing_thread, feed_issuing_thread::automatic);  // the default
  Feed<float> feed(options);
  for (int run = 0; run < 2; ++run) {  // each run decides afresh
    checking_consumer check{slot};
    const auto report = feed.run(paced_producer_of(items, slot, std::chrono::milliseconds(1)), axpb_stage,
                                 [&](std::span<const float> out, std::size_t k) { check(out, k); });
    EXPECT_EQ(report.items, items);
    expect_every_item(check, items);
    ASSERT_TRUE(report.dedicated_issuer_from.has_value());
    EXPECT_EQ(*report.dedicated_issuer_from, slots + overlap::cuda::feed_automatic_issuer_after);
  }
}

// A producer the GPU keeps waiting (each stage 300 us, the producer quick)
// keeps the issuing on its own thread, as do the explicit choices; a
// dedicated issuer issues from item 0.
TEST(FeedAutomaticIssuer, AProducerTheGpuKeepsWaitingIssuesEveryItemItself) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t slot = 4099;
  constexpr std::size_t items = 30;
  const auto slow_stage = [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
    overlap_test::launch_slow_axpb(in.data(), out.data(), in.size(), 300, 8, 256, s);
  };
  for (const feed_issuing_thread thread :
       {feed_issuing_thread::automatic, feed_issuing_thread::producer, feed_issuing_thread::dedicated}) {
    feed_options options = with(slot, 3U);
    options.issuing_thread = thread;
    Feed<float> feed(options);
    checking_consumer check{slot};
    const auto report = feed.run(producer_of(items, slot), slow_stage,
                                 [&](std::span<const float> out, std::size_t k) { check(out, k); });
    EXPECT_EQ(report.items, items);
    EXPECT_EQ(check.next, items);
    EXPECT_EQ(check.bad_elements, 0U);
    if (thread == feed_issuing_thread::dedicated) {
      EXPECT_EQ(report.dedicated_issuer_from, std::optional<std::size_t>(0));
    } else {
      EXPECT_FALSE(report.dedicated_issuer_from.has_value()) << *report.dedicated_issuer_from;
    }
  }
}

// Both ways of waiting, with items far shorter than the polling window and
// items longer than it (3 ms: the poll gives way to a blocking wait).
TEST(FeedWait, PollingAndBlockingDeliverEveryItemOnceInOrder) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t slot = 4099;
  for (const feed_wait wait : {feed_wait::poll, feed_wait::block}) {
    for (const long long stage_us : {0LL, 3000LL}) {
      SCOPED_TRACE(std::string(wait == feed_wait::poll ? "polling" : "blocking") + " wait, stage " +
                   std::to_string(stage_us) + " us");
      feed_options options = with(slot, 3U);
      options.wait = wait;
      Feed<float> feed(options);
      const std::size_t items = stage_us > 0 ? 8 : 200;
      checking_consumer check{slot};
      const auto report = feed.run(
          producer_of(items, slot),
          [stage_us](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
            overlap_test::launch_slow_axpb(in.data(), out.data(), in.size(), stage_us, 64, 256, s);
          },
          [&](std::span<const float> out, std::size_t k) { check(out, k); });
      EXPECT_EQ(report.items, items);
      EXPECT_EQ(check.next, items);
      EXPECT_EQ(check.out_of_order, 0U);
      EXPECT_EQ(check.wrong_size, 0U);
      EXPECT_EQ(check.bad_elements, 0U);
      // Every item took 3 ms on the GPU: the waits outlasted the polling window.
      if (stage_us > 0) {
        EXPECT_GE(report.wall_ms, 3.0);
      }
    }
  }
}

// A producer slower than the GPU: the consumer's thread, kept between runs,
// waits for each item and issues its download itself (feed_engine.cpp).
// Every way of issuing and waiting, three runs of one Feed, items exact.
TEST(FeedSlowProducer, EveryItemArrivesOnceInOrderAndExactOverRuns) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t slot = 4099;
  constexpr std::size_t items = 40;
  for (const feed_issue_way& way : issue_ways) {
    for (const feed_wait wait : {feed_wait::poll, feed_wait::block}) {
      SCOPED_TRACE(std::string(way.name) + (wait == feed_wait::poll ? ", polling" : ", blocking"));
      feed_options options = with(slot, 3U);
      options.issue = way.issue;
      options.streams = way.streams;
      options.wait = wait;
      Feed<float> feed(options);
      for (int run = 0; run < 3; ++run) {
        checking_consumer check{slot};
        const auto report =
            feed.run(paced_producer_of(items, slot, std::chrono::microseconds(300)), axpb_stage,
                     [&](std::span<const float> out, std::size_t k) { check(out, k); });
        EXPECT_EQ(report.items, items);
        expect_every_item(check, items);
        // The producer set the pace: 40 sleeps of 300 us.
        EXPECT_GE(report.wall_ms, 0.3 * items);
      }
    }
  }
}

TEST(FeedGraphs, EachSlotCapturesOncePerItemSizeAndReplaysTheRest) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t slot = 4099;
  constexpr std::size_t items = 60;
  feed_options options = with(slot, 3U);
  options.issue = feed_issue::graph_per_slot;
  Feed<float> feed(options);
  std::size_t stage_calls = 0;
  const auto stage = [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
    ++stage_calls;
    overlap_test::launch_axpb(in, out, s);
  };
  // Every item full, but items 30.. one element shorter: a second size.
  const auto sized = [](std::size_t k) { return k < 30 ? slot : slot - 1; };
  for (int run = 0; run < 2; ++run) {  // each run captures its own stage
    stage_calls = 0;
    std::size_t bad = 0;
    std::size_t next = 0;
    const auto report = feed.run(
        [&](std::span<float> s, std::size_t k) -> std::optional<std::size_t> {
          if (k == items) return std::nullopt;
          for (std::size_t i = 0; i < sized(k); ++i) s[i] = item_value(k, i);
          return sized(k);
        },
        stage,
        [&](std::span<const float> out, std::size_t k) {
          EXPECT_EQ(k, next++);
          EXPECT_EQ(out.size(), sized(k));
          for (std::size_t i = 0; i < out.size(); ++i) bad += out[i] != 2.0F * item_value(k, i) + 1.0F;
        });
    EXPECT_EQ(report.items, items);
    EXPECT_EQ(bad, 0U);
    EXPECT_EQ(stage_calls, 2U * 3U) << "one capture per slot and size";
    EXPECT_EQ(report.graph_captures, 2U * 2U * 3U) << "upload and download, per slot and size";
  }
}

TEST(FeedGraphs, AStageThatCannotBeCapturedIsAStageErrorThatSaysWhy) {
  SKIP_WITHOUT_GPU();
  feed_options options = with(1000, 2U);
  options.issue = feed_issue::graph_per_slot;
  Feed<float> feed(options);
  std::size_t consumed = 0;
  try {
    (void)feed.run(
        producer_of(10, 1000),
        [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
          overlap_test::launch_axpb(in, out, s);
          (void)cudaStreamSynchronize(s.get());  // not capturable: invalidates the capture
        },
        [&](std::span<const float>, std::size_t) { ++consumed; });
    ADD_FAILURE() << "no feed_error";
  } catch (const feed_error& e) {
    EXPECT_EQ(e.item(), 0U);
    EXPECT_EQ(e.part(), feed_part::stage);
    try {
      std::rethrow_if_nested(e);
      ADD_FAILURE() << "nothing nested";
    } catch (const overlap::error& inner) {
      EXPECT_NE(
          std::string(inner.what()).find("graph_per_slot: item 0's upload and stage could not be captured"),
          std::string::npos)
          << inner.what();
    }
  }
  EXPECT_EQ(consumed, 0U);
  // The feed is usable afterwards, with a stage that can be captured.
  checking_consumer check{1000};
  const auto report = feed.run(producer_of(12, 1000), axpb_stage,
                               [&](std::span<const float> out, std::size_t k) { check(out, k); });
  EXPECT_EQ(report.items, 12U);
  EXPECT_EQ(check.bad_elements, 0U);
  EXPECT_EQ(check.wrong_size, 0U);
}

TEST(FeedRatio, AFourToOneReductionPerItem) {
  SKIP_WITHOUT_GPU();
  feed_options o;
  o.slot_elements = std::size_t{4} * 5003;
  o.ratio = {1, 4};
  Feed<std::uint32_t> feed(o);
  std::size_t bad = 0;
  std::size_t consumed = 0;
  const auto value = [](std::size_t k, std::size_t i) {
    return static_cast<std::uint32_t>(mix(k * 1'000'003 + i));
  };
  const auto report = feed.run(
      [&](std::span<std::uint32_t> s, std::size_t k) -> std::optional<std::size_t> {
        if (k == 64) return std::nullopt;
        const std::size_t n = 4 * (1 + mix(k) % 5003);
        for (std::size_t i = 0; i < n; ++i) s[i] = value(k, i);
        return n;
      },
      [](std::span<const std::uint32_t> in, std::span<std::uint32_t> out, stream_view s, std::size_t) {
        overlap_test::launch_sum_of_four(in, out, s);
      },
      [&](std::span<const std::uint32_t> out, std::size_t k) {
        ++consumed;
        if (out.size() != 1 + mix(k) % 5003) ++bad;
        for (std::size_t i = 0; i < out.size(); ++i) {
          const std::uint32_t expected =
              value(k, 4 * i) + value(k, 4 * i + 1) + value(k, 4 * i + 2) + value(k, 4 * i + 3);
          if (out[i] != expected) ++bad;
        }
      });
  EXPECT_EQ(consumed, 64U);
  EXPECT_EQ(bad, 0U);
  EXPECT_EQ(report.output_bytes * 4, report.input_bytes);
}

// A slow consumer: the producer fills every slot, and never more.
void expect_backpressure(feed_issuing_thread thread) {
  constexpr unsigned slots = 3;
  feed_options options = with(4096, slots);
  options.issuing_thread = thread;
  Feed<float> feed(options);
  std::atomic<std::size_t> consumed{0};
  std::size_t most_ahead = 0;
  const auto produce = producer_of(40, 4096);
  const auto report = feed.run(
      [&](std::span<float> s, std::size_t k) {
        most_ahead = std::max(most_ahead, k - consumed.load());
        return produce(s, k);
      },
      axpb_stage,
      [&](std::span<const float>, std::size_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a slow consumer
        consumed.fetch_add(1);
      });
  EXPECT_EQ(report.items, 40U);
  EXPECT_LE(most_ahead, slots);
  EXPECT_EQ(most_ahead, slots) << "a slow consumer should let the producer fill every slot";
  EXPECT_EQ(report.most_ahead, slots);
}

TEST(FeedBackpressure, TheProducerIsNeverMoreThanSlotsItemsAheadAndReachesIt) {
  SKIP_WITHOUT_GPU();
  for (const feed_issuing_thread thread :
       {feed_issuing_thread::producer, feed_issuing_thread::dedicated, feed_issuing_thread::automatic}) {
    SCOPED_TRACE(static_cast<int>(thread));
    expect_backpressure(thread);
  }
}

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

TEST(FeedBackpressure, WaitingForASlowConsumerDoesNotSpin) {
  SKIP_WITHOUT_GPU();
  Feed<float> feed(with(1 << 16, 2U));
  const auto slow = [](std::span<const float>, std::size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  (void)feed.run(producer_of(4, 1 << 16), axpb_stage, slow);  // allocation and warm-up
  const double cpu_before = process_cpu_ms();
  const auto report = feed.run(producer_of(40, 1 << 16), axpb_stage, slow);
  const double cpu_ms = process_cpu_ms() - cpu_before;
  EXPECT_GE(report.wall_ms, 40 * 5.0);
  // A thread spinning while the consumer sleeps would burn a core (>= 100% of the wall time).
  EXPECT_LT(cpu_ms, 0.5 * report.wall_ms) << cpu_ms << " ms of CPU in " << report.wall_ms << " ms";
}

// Runs a feed of `options` whose `part` throws at item `bad`, checks the
// error (its message saying "<part> failed at item <bad><where>") and the
// items the consumer saw, then a clean run on the same Feed.
void expect_failure_on(const feed_options& options, feed_part part, std::size_t bad, const std::string& where,
                       std::chrono::microseconds producer_pause = std::chrono::microseconds(0)) {
  const std::size_t slot = options.slot_elements;
  Feed<float> feed(options);
  std::vector<std::size_t> seen;
  const auto produce = producer_of(50, slot);
  try {
    (void)feed.run(
        [&](std::span<float> s, std::size_t k) {
          if (part == feed_part::producer && k == bad) throw std::runtime_error("camera unplugged");
          if (producer_pause.count() > 0) std::this_thread::sleep_for(producer_pause);
          return produce(s, k);
        },
        [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t k) {
          if (part == feed_part::stage && k == bad) throw std::runtime_error("no kernel for this item");
          overlap_test::launch_axpb(in, out, s);
        },
        [&](std::span<const float>, std::size_t k) {
          seen.push_back(k);
          if (part == feed_part::consumer && k == bad) throw std::runtime_error("disk full");
        });
    ADD_FAILURE() << "no feed_error";
  } catch (const feed_error& e) {
    EXPECT_EQ(e.item(), bad);
    EXPECT_EQ(e.part(), part);
    EXPECT_NE(std::string(e.what()).find(std::string(overlap::cuda::to_string(part)) + " failed at item " +
                                         std::to_string(bad) + where),
              std::string::npos)
        << e.what();
    try {
      std::rethrow_if_nested(e);
      ADD_FAILURE() << "nothing nested";
    } catch (const std::runtime_error& inner) {
      EXPECT_FALSE(std::string(inner.what()).empty());
    }
  }
  // Exactly the items before the failing one (and, for the consumer, the one it threw on).
  const std::size_t expected = part == feed_part::consumer ? bad + 1 : bad;
  ASSERT_EQ(seen.size(), expected);
  for (std::size_t k = 0; k < seen.size(); ++k) EXPECT_EQ(seen[k], k);

  checking_consumer check{slot};
  const auto report = feed.run(producer_of(20, slot), axpb_stage,
                               [&](std::span<const float> out, std::size_t k) { check(out, k); });
  EXPECT_EQ(report.items, 20U);
  EXPECT_EQ(check.bad_elements, 0U);
}

// expect_failure_on, on one GPU with 3 slots issued as given.
void expect_failure_at(feed_part part, std::size_t bad, feed_issue issue = feed_issue::direct,
                       feed_issuing_thread thread = feed_issuing_thread::producer) {
  feed_options options = with(3001, 3U);
  options.issue = issue;
  options.issuing_thread = thread;
  expect_failure_on(options, part, bad, "");
}

TEST(FeedFailure, AProducerThatThrowsStopsTheFeedAfterTheItemsBeforeIt) {
  SKIP_WITHOUT_GPU();
  expect_failure_at(feed_part::producer, 0);
  expect_failure_at(feed_part::producer, 7);
  expect_failure_at(feed_part::producer, 7, feed_issue::direct, feed_issuing_thread::dedicated);
}

TEST(FeedFailure, AStageThatThrowsStopsTheFeedAfterTheItemsBeforeIt) {
  SKIP_WITHOUT_GPU();
  expect_failure_at(feed_part::stage, 0);
  expect_failure_at(feed_part::stage, 11);
  // Captured: the stage runs (and throws) while item 11's graph is captured.
  expect_failure_at(feed_part::stage, 11, feed_issue::graph_per_slot);
  expect_failure_at(feed_part::stage, 11, feed_issue::direct, feed_issuing_thread::dedicated);
  expect_failure_at(feed_part::stage, 11, feed_issue::graph_per_slot, feed_issuing_thread::dedicated);
}

TEST(FeedFailure, AConsumerThatThrowsStopsTheFeedAtItsItem) {
  SKIP_WITHOUT_GPU();
  expect_failure_at(feed_part::consumer, 0);
  expect_failure_at(feed_part::consumer, 13);
  expect_failure_at(feed_part::consumer, 13, feed_issue::graph_per_slot);
  expect_failure_at(feed_part::producer, 7, feed_issue::graph_per_slot);
}

// A failure after the hand-over (item 20; the issuing moved at item 11):
// the items before it arrive, none after, and the feed runs again.
TEST(FeedAutomaticIssuer, AFailureAfterTheHandOverStopsTheFeedAfterTheItemsBeforeIt) {
  SKIP_WITHOUT_GPU();
  for (const feed_part part : {feed_part::producer, feed_part::stage, feed_part::consumer}) {
    SCOPED_TRACE(std::string(overlap::cuda::to_string(part)));
    expect_failure_on(with(3001, 3U), part, 20, "", std::chrono::microseconds(1000));
  }
}

TEST(FeedFailure, AnItemLargerThanTheSlotIsAProducerError) {
  SKIP_WITHOUT_GPU();
  Feed<float> feed(with(100, 2U));
  std::size_t consumed = 0;
  try {
    (void)feed.run(
        [](std::span<float> s, std::size_t k) -> std::optional<std::size_t> {
          for (float& x : s) x = 1.0F;
          return k == 4 ? 101 : 100;
        },
        axpb_stage, [&](std::span<const float>, std::size_t) { ++consumed; });
    ADD_FAILURE() << "no feed_error";
  } catch (const feed_error& e) {
    EXPECT_EQ(e.item(), 4U);
    EXPECT_EQ(e.part(), feed_part::producer);
    try {
      std::rethrow_if_nested(e);
    } catch (const overlap::invalid_input& inner) {
      EXPECT_NE(std::string(inner.what()).find("item 4 has 101 elements, more than a slot holds (100"),
                std::string::npos);
    }
  }
  EXPECT_EQ(consumed, 4U);
}

TEST(FeedFailure, ABadLaunchInTheStageNamesTheStageAndTheCudaError) {
  SKIP_WITHOUT_GPU();
  Feed<float> feed(with(1000, 2U));
  try {
    (void)feed.run(
        producer_of(10, 1000),
        [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t k) {
          overlap_test::launch_axpb_unchecked(in, out, s, 1, k == 5 ? 4096 : 256);  // 4096 threads: invalid
        },
        [](std::span<const float>, std::size_t) {});
    ADD_FAILURE() << "no feed_error";
  } catch (const feed_error& e) {
    EXPECT_EQ(e.item(), 5U);
    EXPECT_EQ(e.part(), feed_part::stage);
    try {
      std::rethrow_if_nested(e);
    } catch (const overlap::cuda_error& inner) {
      // Older runtimes say invalid configuration; CUDA 13 on an H100 says invalid value.
      EXPECT_TRUE(inner.status() == cudaErrorInvalidConfiguration || inner.status() == cudaErrorInvalidValue)
          << cudaGetErrorName(inner.status());
    }
  }
}

void expect_stop_from_the_consumer(feed_issuing_thread thread) {
  feed_options options = with(2048, 4U);
  options.issuing_thread = thread;
  Feed<float> feed(options);
  std::size_t produced = 0;
  checking_consumer check{2048};
  const auto produce = producer_of(1'000'000, 2048);
  const auto report = feed.run(
      [&](std::span<float> s, std::size_t k) {
        ++produced;
        return produce(s, k);
      },
      axpb_stage,
      [&](std::span<const float> out, std::size_t k) {
        check(out, k);
        if (k == 10) feed.stop();
      });
  EXPECT_TRUE(report.stopped);
  EXPECT_EQ(report.items, produced) << "every produced item is consumed";
  EXPECT_GE(report.items, 11U);
  EXPECT_LE(report.items, 11U + 4U);
  EXPECT_EQ(check.next, report.items);
  EXPECT_EQ(check.bad_elements, 0U);
  EXPECT_EQ(check.out_of_order, 0U);
  // The stop ended that run only.
  const auto next = feed.run(producer_of(5, 2048), axpb_stage, [](std::span<const float>, std::size_t) {});
  EXPECT_FALSE(next.stopped);
  EXPECT_EQ(next.items, 5U);
}

TEST(FeedStop, StopFromTheConsumerDrainsWhatIsInFlight) {
  SKIP_WITHOUT_GPU();
  // Many times: a producer waiting for a slot when stop() comes must not
  // produce once more after it.
  for (int run = 0; run < 20; ++run) {
    expect_stop_from_the_consumer(feed_issuing_thread::producer);
    expect_stop_from_the_consumer(feed_issuing_thread::dedicated);
  }
}

TEST(FeedStop, StopFromAnotherThreadEndsAnEndlessFeed) {
  SKIP_WITHOUT_GPU();
  Feed<float> feed(with(1 << 14, 3U));
  std::atomic<std::size_t> consumed{0};
  std::jthread stopper([&feed] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    feed.stop();
  });
  const auto report = feed.run(
      [](std::span<float> s, std::size_t) -> std::optional<std::size_t> {
        for (float& x : s) x = 3.0F;
        return s.size();
      },
      axpb_stage,
      [&](std::span<const float> out, std::size_t) {
        if (out[0] == 7.0F && out[out.size() - 1] == 7.0F) consumed.fetch_add(1);
      });
  EXPECT_TRUE(report.stopped);
  EXPECT_GT(report.items, 0U);
  EXPECT_EQ(consumed.load(), report.items);
}

TEST(FeedStop, AStopBeforeARunEndsThatRunBeforeItsFirstItem) {
  SKIP_WITHOUT_GPU();
  Feed<float> feed(with(64, 2U));
  feed.stop();
  std::size_t produced = 0;
  const auto report = feed.run(
      [&](std::span<float>, std::size_t) -> std::optional<std::size_t> {
        ++produced;
        return std::nullopt;
      },
      axpb_stage, [](std::span<const float>, std::size_t) {});
  EXPECT_TRUE(report.stopped);
  EXPECT_EQ(report.items, 0U);
  EXPECT_EQ(produced, 0U);
}

TEST(FeedProgram, TheRunIsDescribedAsARaceFreeProgram) {
  SKIP_WITHOUT_GPU();
  Feed<float> feed(with(1 << 12, 3U));
  const auto report =
      feed.run(producer_of(25, 1 << 12), axpb_stage, [](std::span<const float>, std::size_t) {});
  ASSERT_EQ(report.shape.items.size(), 25U);
  EXPECT_EQ(report.shape.slots, 3U);
  EXPECT_EQ(report.shape.streams, overlap::feed_streams::by_stage);  // the default
  for (std::size_t k = 0; k < 25; ++k) {
    EXPECT_EQ(report.shape.items[k].bytes_in, item_size(k, 1 << 12) * sizeof(float));
    EXPECT_EQ(report.shape.items[k].bytes_out, item_size(k, 1 << 12) * sizeof(float));
  }
  const overlap::Program p = overlap::make_feed_program(report.shape);
  EXPECT_NO_THROW(overlap::check::require_race_free(p));
  const overlap::Timeline t = overlap::sim::simulate(p, overlap::DeviceModel::preset("h100"));
  EXPECT_GT(t.total(), 0.0);
}

TEST(FeedDefaults, TheSlotCountComesFromTheGpusModel) {
  SKIP_WITHOUT_GPU();
  Feed<float> feed(with(256, std::nullopt));
  const auto report = feed.run(producer_of(9, 256), axpb_stage, [](std::span<const float>, std::size_t) {});
  EXPECT_EQ(report.slots, overlap::default_feed_slots(overlap::cuda::builtin_model_of_current_device()));
  EXPECT_EQ(report.items, 9U);
}

// --- several GPUs: item k on GPU k mod N, produced and consumed in item order ---

#define NEED_TWO_GPUS()                                                              \
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device"; \
  if (overlap::cuda::device_count() < 2) GTEST_SKIP() << "skipped: needs 2 GPUs"

feed_options on_two_gpus(std::size_t slot_elements, unsigned slots) {
  feed_options o = with(slot_elements, slots);
  o.devices = {0, 1};
  return o;
}

TEST(MultiGpuFeed, ItemsGoToTheGpusInTurnAndArriveInOrderAndExact) {
  NEED_TWO_GPUS();
  for (const feed_issuing_thread thread : {feed_issuing_thread::producer, feed_issuing_thread::dedicated}) {
    constexpr std::size_t slot = 40'009;  // odd sizes: each item 1..slot elements
    feed_options options = on_two_gpus(slot, 3);
    options.issuing_thread = thread;
    Feed<float> feed(options);
    std::vector<int> stage_device(37, -1);
    std::vector<std::size_t> produced;
    checking_consumer check{slot};
    const auto produce = producer_of(37, slot);
    const auto report = feed.run(
        [&](std::span<float> s, std::size_t k) {
          produced.push_back(k);  // one call at a time, in item order
          return produce(s, k);
        },
        [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t k) {
          int device = -1;
          overlap::cuda::check(cudaGetDevice(&device), "cudaGetDevice");
          stage_device.at(k) = device;
          overlap_test::launch_axpb(in, out, s);
        },
        [&](std::span<const float> out, std::size_t k) { check(out, k); });
    EXPECT_EQ(report.items, 37U);
    EXPECT_EQ(check.next, 37U);
    EXPECT_EQ(check.out_of_order, 0U);
    EXPECT_EQ(check.wrong_size, 0U);
    EXPECT_EQ(check.bad_elements, 0U);
    for (std::size_t k = 0; k < produced.size(); ++k) ASSERT_EQ(produced[k], k);
    for (std::size_t k = 0; k < 37; ++k) EXPECT_EQ(stage_device[k], static_cast<int>(k % 2)) << "item " << k;
    ASSERT_EQ(report.parts.size(), 2U);
    EXPECT_EQ(report.parts[0].device, 0);
    EXPECT_EQ(report.parts[0].report->items, 19U);
    EXPECT_EQ(report.parts[1].report->items, 18U);
    EXPECT_GT(report.items_per_second, 0.0);
    // The same Feed again: the GPUs' slots are reused.
    checking_consumer again{slot};
    EXPECT_EQ(feed.run(producer_of(5, slot), axpb_stage,
                       [&](std::span<const float> out, std::size_t k) { again(out, k); })
                  .items,
              5U);
    EXPECT_EQ(again.bad_elements, 0U);
  }
}

TEST(MultiGpuFeed, AFailureOnEitherGpuStopsAtItsItemAfterTheItemsBeforeIt) {
  NEED_TWO_GPUS();
  for (const feed_part part : {feed_part::producer, feed_part::stage, feed_part::consumer}) {
    for (const std::size_t bad : {std::size_t{0}, std::size_t{11}, std::size_t{12}})
      expect_failure_on(on_two_gpus(3001, 2), part, bad, " on GPU " + std::to_string(bad % 2));
  }
}

TEST(MultiGpuFeed, StopEndsBothGpusAfterTheItemsInFlight) {
  NEED_TWO_GPUS();
  Feed<float> feed(on_two_gpus(1024, 2));
  std::vector<std::size_t> seen;
  const auto report =
      feed.run(producer_of(1000, 1024), axpb_stage, [&](std::span<const float>, std::size_t k) {
        seen.push_back(k);
        if (k == 9) feed.stop();
      });
  EXPECT_TRUE(report.stopped);
  EXPECT_GE(report.items, 10U);
  EXPECT_LT(report.items, 1000U);
  ASSERT_EQ(seen.size(), report.items);
  for (std::size_t k = 0; k < seen.size(); ++k) EXPECT_EQ(seen[k], k);
}

TEST(MultiGpuFeed, ABadDeviceListIsRefusedByName) {
  SKIP_WITHOUT_GPU();
  feed_options options = with(256, 2U);
  options.devices = {0, 0};
  Feed<float> feed(options);
  try {
    (void)feed.run(producer_of(3, 256), axpb_stage, [](std::span<const float>, std::size_t) {});
    ADD_FAILURE() << "no error";
  } catch (const overlap::invalid_input& e) {
    EXPECT_STREQ(e.what(), "devices[1]: GPU 0 is listed twice");
  }
  options.devices = {0, 999};
  Feed<float> far(options);
  EXPECT_THROW((void)far.run(producer_of(3, 256), axpb_stage, [](std::span<const float>, std::size_t) {}),
               overlap::invalid_input);
}

}  // namespace
