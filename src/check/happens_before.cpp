#include "overlap/check/happens_before.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "overlap/core/error.hpp"

namespace overlap::check {

namespace {

bool is_blocking(stream_kind kind) {
  return kind == stream_kind::blocking || kind == stream_kind::per_thread_default;
}

// A copy the host waits for: cudaMemcpy, or cudaMemcpyAsync from pageable
// memory (staged by the driver while the host waits, as the simulator has it).
bool blocks_host(const Op& op) {
  return op.kind == op_kind::copy &&
         (op.mode == call_mode::synchronous || op.memory == host_memory::pageable);
}

// The walker's own clocks besides the per-stream and per-event ones:
// clock_, host_known_ and zero_, and per device all_issued_ and blocking_issued_.
constexpr std::uint64_t walker_fixed_clocks = 3;
constexpr std::uint64_t walker_clocks_per_device = 2;

// "37 GiB", "1.5 TiB": sizes the refusal message names, roughly.
std::string show_bytes(double bytes) {
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  const bool tebi = bytes >= 1024.0 * gib;
  const double value = bytes / (tebi ? 1024.0 * gib : gib);
  const char* unit = tebi ? "TiB" : "GiB";
  return value < 10.0 ? fmt::format("{:.1f} {}", value, unit) : fmt::format("{:.0f} {}", value, unit);
}

}  // namespace

Timelines::Timelines(const Program& program) : of_stream_(program.streams().size(), none) {
  // Mark the streams that issue work, then number them in stream-id order.
  // The scan stops once every stream is marked: a program whose streams all
  // start early (most of them) costs a few ops, not a pass over millions.
  constexpr timeline_id marked = 0;
  std::size_t unmarked = of_stream_.size();
  for (auto op = program.ops().begin(); unmarked > 0 && op != program.ops().end(); ++op) {
    if (!is_stream_op(op->kind) || of_stream_[*op->stream] == marked) continue;
    of_stream_[*op->stream] = marked;
    --unmarked;
  }
  for (std::size_t s = 0; s < of_stream_.size(); ++s) {
    if (of_stream_[s] == none) continue;
    of_stream_[s] = static_cast<timeline_id>(streams_.size());
    streams_.push_back(static_cast<stream_id>(s));
  }
}

std::uint64_t clock_bytes(std::uint64_t clocks, std::uint64_t timelines) noexcept {
  constexpr std::uint64_t component = sizeof(std::uint32_t);
  constexpr std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
  if (clocks == 0 || timelines == 0) return 0;
  if (clocks > most / component / timelines) return most;
  return clocks * timelines * component;
}

void require_clock_budget(std::uint64_t clocks, const Timelines& timelines) {
  if (clock_bytes(clocks, timelines.size()) <= clock_budget_bytes) return;
  const std::size_t streams = timelines.streams_with_work().size();
  // Shown in floating point: the exact product may not fit in 64 bits.
  const double needed =
      static_cast<double>(clocks) * static_cast<double>(timelines.size()) * sizeof(std::uint32_t);
  throw invalid_input(fmt::format(
      "check: {} stream{} with work would need about {} of vector clocks ({} clocks x {} timelines x 4 "
      "bytes), over the checker's {} GiB limit; check fewer streams or fewer chunks",
      streams, streams == 1 ? "" : "s", show_bytes(needed), clocks, timelines.size(),
      clock_budget_bytes >> 30));
}

void VectorClock::join(const VectorClock& other) noexcept {
  for (std::size_t i = 0; i < components_.size(); ++i)
    components_[i] = std::max(components_[i], other.components_[i]);
}

ClockWalker::ClockWalker(const Program& program) : ClockWalker(program, Timelines(program)) {}

ClockWalker::ClockWalker(const Program& program, Timelines timelines)
    : program_(program), timelines_(std::move(timelines)) {
  require_clock_budget(clocks_needed(program, timelines_), timelines_);
  const std::size_t width = timelines_.size();
  const std::size_t streams = timelines_.streams_with_work().size();
  clock_ = VectorClock(width);
  host_known_ = VectorClock(width);
  zero_ = VectorClock(width);
  stream_clocks_.assign(streams, VectorClock(width));
  issued_.assign(streams, 0);
  all_issued_.assign(program.device_count(), VectorClock(width));
  blocking_issued_.assign(program.device_count(), VectorClock(width));
  legacy_.assign(program.device_count(), std::nullopt);
  record_clocks_.resize(program.events().size());
  records_.resize(program.events().size());
  // A legacy default stream with no ops barriers nothing: joining its clock
  // (all zero) would add nothing, so it needs no timeline.
  for (const stream_id s : timelines_.streams_with_work()) {
    const Stream& stream = program.streams()[s];
    if (stream.kind == stream_kind::legacy_default) legacy_[stream.device] = timelines_.of(s);
  }
}

std::uint64_t ClockWalker::clocks_needed(const Program& program, const Timelines& timelines) noexcept {
  return std::uint64_t{timelines.streams_with_work().size()} + program.events().size() + walker_fixed_clocks +
         walker_clocks_per_device * program.device_count();
}

std::optional<op_id> ClockWalker::last_record(event_id event) const noexcept {
  return records_[event];
}

const VectorClock& ClockWalker::step() {
  const auto id = static_cast<op_id>(next_++);
  const Op& op = program_.ops()[id];
  if (is_stream_op(op.kind)) {
    step_stream_op(op, id);
  } else {
    step_host_op(op);
  }
  return clock_;
}

void ClockWalker::step_stream_op(const Op& op, op_id id) {
  const stream_id stream = *op.stream;
  const timeline_id timeline = *timelines_.of(stream);  // it issues this op, so it has one
  const stream_kind kind = program_.streams()[stream].kind;
  const device_id device = program_.streams()[stream].device;
  // Stream order, and everything the host did before issuing it.
  clock_ = stream_clocks_[timeline];
  clock_.join(host_known_);
  // The legacy default stream barrier of the stream's device, in both directions.
  if (kind == stream_kind::legacy_default) {
    clock_.join(blocking_issued_[device]);
  } else if (is_blocking(kind) && legacy_[device]) {
    clock_.join(stream_clocks_[*legacy_[device]]);
  }
  // A wait binds to the most recent record issued before it; none: no-op.
  if (op.kind == op_kind::stream_wait_event && record_clocks_[*op.event]) {
    clock_.join(*record_clocks_[*op.event]);
  }
  epoch_ = Epoch{timeline, ++issued_[timeline]};
  clock_.place(epoch_);

  stream_clocks_[timeline] = clock_;
  all_issued_[device].join(clock_);
  if (is_blocking(kind)) blocking_issued_[device].join(clock_);
  if (op.kind == op_kind::event_record) {
    record_clocks_[*op.event] = clock_;
    records_[*op.event] = id;
  }
  if (blocks_host(op)) host_known_.join(clock_);
}

void ClockWalker::step_host_op(const Op& op) {
  clock_ = host_known_;
  switch (op.kind) {
    case op_kind::stream_synchronize:
      // A stream that never issues work has nothing to wait for.
      if (const auto timeline = timelines_.of(*op.stream)) clock_.join(stream_clocks_[*timeline]);
      break;
    case op_kind::event_synchronize:
      if (record_clocks_[*op.event]) clock_.join(*record_clocks_[*op.event]);
      break;
    case op_kind::host_work: break;
    default:  // cudaDeviceSynchronize, allocation and free drain their device
      clock_.join(all_issued_[op.device]);
      break;
  }
  epoch_ = Epoch{host_timeline(), ++host_calls_};
  clock_.place(epoch_);
  host_known_ = clock_;
}

HappensBefore::HappensBefore(const Program& program) {
  // Every op's clock lives alongside the walker's own while it runs.
  Timelines timelines(program);
  require_clock_budget(std::uint64_t{program.ops().size()} + ClockWalker::clocks_needed(program, timelines),
                       timelines);
  clocks_.reserve(program.ops().size());
  epochs_.reserve(program.ops().size());
  ClockWalker walker(program, std::move(timelines));
  while (!walker.done()) {
    clocks_.push_back(walker.step());
    epochs_.push_back(walker.epoch());
  }
}

bool HappensBefore::ordered(op_id before, op_id after) const noexcept {
  return before != after && clocks_[after].covers(epochs_[before]);
}

}  // namespace overlap::check
