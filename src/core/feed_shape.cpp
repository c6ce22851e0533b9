#include "overlap/core/feed_shape.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

#include "overlap/core/error.hpp"

namespace overlap {

namespace {

void require_time(double value, const char* field) {
  if (!std::isfinite(value) || value < 0.0)
    throw invalid_input(fmt::format("{}: {} is out of range (expected a finite time >= 0)", field, value));
}

void validate(const FeedShape& shape) {
  if (shape.slots == 0) throw invalid_input("slots: 0 is out of range (expected >= 1; 2 is ping-pong)");
  if (shape.items.empty()) throw invalid_input("items: a feed needs at least one item");
  for (std::size_t k = 0; k < shape.items.size(); ++k) {
    if (shape.items[k].bytes_in == 0)
      throw invalid_input(fmt::format("items[{}].bytes_in: 0 is out of range (expected > 0)", k));
  }
  require_time(shape.producer_time, "producer_time");
  require_time(shape.consumer_time, "consumer_time");
  if (shape.kernel_cost) {
    shape.kernel_cost->validate("kernel_cost");
  } else {
    require_time(shape.kernel_time, "kernel_time");
  }
}

Access access(std::string buffer, std::uint64_t bytes, access_mode mode) {
  return Access{std::move(buffer), 0, bytes > 0 ? std::optional<std::uint64_t>(bytes) : std::nullopt, mode};
}

// Labels an op with its item and, for the checker, what it touches.
void describe(Op& op, std::size_t item, std::vector<Access> accesses, bool declare) {
  op.item = std::to_string(item);
  op.chunk = static_cast<std::int64_t>(item);
  if (declare) op.accesses = std::move(accesses);
}

// The events of one slot.
struct slot_events {
  event_id in_free;   // the slot's upload is done: the host may produce into it
  event_id ready;     // the slot's download is done: the consumer may read it
  event_id out_free;  // the consumer is done with the slot's output
  event_id computed;  // by stage: the slot's kernel is done with its device buffers
};

// Where one stage of every item goes, by stage or by slot.
struct item_streams {
  stream_id upload;
  stream_id compute;
  stream_id download;
};

}  // namespace

Program make_feed_program(const FeedShape& shape) {
  validate(shape);
  Program p;
  p.name = shape.name;
  p.time_unit = shape.time_unit;
  const bool by_stage = shape.streams == feed_streams::by_stage;
  std::vector<item_streams> streams;
  std::vector<slot_events> events;
  if (by_stage) {
    streams.push_back({p.add_stream("Upload", shape.kind), p.add_stream("Compute", shape.kind),
                       p.add_stream("Download", shape.kind)});
  }
  for (std::uint32_t s = 0; s < shape.slots; ++s) {
    if (!by_stage) {
      const stream_id own = p.add_stream(fmt::format("Slot{}", s), shape.kind);
      streams.push_back({own, own, own});
    }
    events.push_back({p.add_event(fmt::format("in_free_{}", s)), p.add_event(fmt::format("ready_{}", s)),
                      p.add_event(fmt::format("out_free_{}", s)),
                      by_stage ? p.add_event(fmt::format("computed_{}", s)) : event_id{}});
  }
  const stream_id consumer = p.add_stream("consumer", shape.kind);
  const bool declare = shape.declare_accesses;
  for (std::size_t k = 0; k < shape.items.size(); ++k) {
    const auto s = static_cast<std::uint32_t>(k % shape.slots);
    const FeedItem& item = shape.items[k];
    const item_streams& on = streams[by_stage ? 0 : s];
    const slot_events& e = events[s];
    const std::string in = fmt::format("in_{}", s);
    const std::string d_in = fmt::format("d_in_{}", s);
    const std::string d_out = fmt::format("d_out_{}", s);
    const std::string out = fmt::format("out_{}", s);
    const bool reused = k >= shape.slots;

    if (reused) p.synchronize_event(e.in_free);
    p.host_work(shape.producer_time);
    p.last().label = "Produce";
    describe(p.last(), k, {access(in, item.bytes_in, access_mode::write)}, declare);

    if (by_stage && reused) p.wait(on.upload, e.computed);
    p.copy(on.upload, copy_direction::h2d, item.bytes_in);
    p.last().label = "H2D";
    describe(p.last(), k,
             {access(in, item.bytes_in, access_mode::read), access(d_in, item.bytes_in, access_mode::write)},
             declare);
    p.record(e.in_free, on.upload);

    if (by_stage) {
      p.wait(on.compute, e.in_free);
      if (reused) p.wait(on.compute, e.ready);
    }
    p.kernel(on.compute, shape.kernel_cost ? shape.kernel_cost->time(item.bytes_in) : shape.kernel_time);
    p.last().label = "Kernel";
    describe(
        p.last(), k,
        {access(d_in, item.bytes_in, access_mode::read), access(d_out, item.bytes_out, access_mode::write)},
        declare);
    if (by_stage) {
      p.record(e.computed, on.compute);
      p.wait(on.download, e.computed);
    }

    if (reused) p.synchronize_event(e.out_free);
    if (item.bytes_out > 0) {
      p.copy(on.download, copy_direction::d2h, item.bytes_out);
      p.last().label = "D2H";
      describe(
          p.last(), k,
          {access(d_out, item.bytes_out, access_mode::read), access(out, item.bytes_out, access_mode::write)},
          declare);
    }
    p.record(e.ready, on.download);

    p.wait(consumer, e.ready);
    p.host_function(consumer, shape.consumer_time);
    p.last().label = "Consume";
    describe(p.last(), k, {access(out, item.bytes_out, access_mode::read)}, declare);
    p.record(e.out_free, consumer);
  }
  p.synchronize_device();
  return p;
}

std::uint32_t default_feed_slots(const DeviceModel& model) noexcept {
  const std::uint32_t copy_engines = model.copy_engine_per_direction ? 2 : 1;
  return copy_engines + 1;
}

}  // namespace overlap
