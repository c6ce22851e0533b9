// overlap::FeedShape: a stream of items through N slots (ping-pong when N
// is 2) as a Program.
//
// Each item is produced on the host into its slot's pinned input, copied
// in, processed and copied out (on a stream per stage, events between, or
// on the slot's stream: feed_streams), and handed to a consumer in item
// order. Item k uses slot k mod N. A slot's input and
// output halves are freed separately: the host produces item k once item
// k - N's upload is done ("in_free_K"), and issues item k's download once
// the consumer is done with item k - N ("out_free_K"), so the producer of
// item k + N - 1 can run while the consumer of item k - 1 does. That is the
// feed's backpressure: the producer is never more than N items ahead of the
// consumer. The consumer runs on a host thread of its own, in item order:
// it is modelled as host functions on a stream of its own ("consumer") that
// waits for each item's download ("ready_K"). The whole feed is then one
// host thread's Program that overlap::sim can time and overlap::check can
// prove race-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/kernel_cost.hpp"
#include "overlap/core/program.hpp"

namespace overlap {

/// Which streams a feed's items go on.
enum class feed_streams : std::uint8_t {
  /// Every upload on one stream, every kernel on a second, every download
  /// on a third, events between: a slot's next upload need not wait for its
  /// download, only for its kernel, and each copy engine is fed from one
  /// stream. On an H100 this moved 4 MiB frames 1.5% faster than by_slot
  /// (bench/RESULTS.md, issue 38 part 4).
  by_stage,
  /// Each slot's upload, kernel and download in order on the slot's stream.
  by_slot,
};

/// One item of a feed.
struct FeedItem {
  std::uint64_t bytes_in = 0;   ///< copied to the device (> 0)
  std::uint64_t bytes_out = 0;  ///< copied back (0: no download)
};

/// A feed, described by its items and what each stage costs per item.
struct FeedShape {
  std::uint32_t slots = 2;      ///< >= 1; 2 is ping-pong
  std::vector<FeedItem> items;  ///< in production order, at least one
  double producer_time = 0.0;   ///< host time to produce one item (>= 0)
  double consumer_time = 0.0;   ///< host time to consume one item (>= 0)
  double kernel_time = 0.0;     ///< per item (>= 0), unless kernel_cost is set
  /// When set, item k's kernel takes kernel_cost->time(its input bytes).
  std::optional<KernelCost> kernel_cost;
  feed_streams streams = feed_streams::by_stage;  ///< where the items' copies and kernels go
  stream_kind kind = stream_kind::non_blocking;   ///< of every stream: the items' and the consumer's
  /// Declare what each op reads and writes (slot buffers in_K, d_in_K,
  /// d_out_K and out_K), for the checker.
  bool declare_accesses = true;
  std::string time_unit = "ms";  ///< unit of the times above, copied to the Program
  std::string name = "feed";     ///< the Program's name
};

/// The Program a feed issues: per item k on slot s, from item N on a wait
/// for in_free_s; the producer as host work; H2D and the slot's in_free_s;
/// the kernel; from item N on a wait for out_free_s; D2H and ready_s; the
/// consumer stream's wait for ready_s, the consumer as a host function and
/// out_free_s; then a final device synchronize. By stage, the H2D goes on
/// "Upload" after the wait for item k - N's kernel (computed_s), the kernel
/// on "Compute" after waits for the H2D (in_free_s) and for item k - N's
/// D2H (ready_s), then records computed_s, and the D2H on "Download" after
/// a wait for computed_s; by slot, all three go on the slot's stream. Throws overlap::invalid_input naming
/// the bad field (slots, items, items[k].bytes_in, producer_time, consumer_time, kernel_time, kernel_cost).
[[nodiscard]] Program make_feed_program(const FeedShape& shape);

/// Slots a feed needs to keep the copy engines busy on `model`: one item
/// per copy engine (one per direction, or one for both) and one the host
/// produces into: 3 on the h100 preset, 2 (ping-pong) with one copy engine.
/// On an H100, 3 slots moved 4 MiB frames faster than 2 or 4 (bench/RESULTS.md,
/// issue 12): more slots spread the copies over more memory without adding overlap.
[[nodiscard]] std::uint32_t default_feed_slots(const DeviceModel& model) noexcept;

}  // namespace overlap
