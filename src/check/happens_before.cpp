#include "overlap/check/happens_before.hpp"

#include <algorithm>

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

}  // namespace

void VectorClock::join(const VectorClock& other) noexcept {
  for (std::size_t i = 0; i < components_.size(); ++i)
    components_[i] = std::max(components_[i], other.components_[i]);
}

ClockWalker::ClockWalker(const Program& program)
    : program_(program),
      clock_(program.streams().size() + 1),
      host_known_(program.streams().size() + 1),
      stream_clocks_(program.streams().size(), VectorClock(program.streams().size() + 1)),
      issued_(program.streams().size(), 0),
      all_issued_(program.streams().size() + 1),
      blocking_issued_(program.streams().size() + 1),
      record_clocks_(program.events().size()),
      records_(program.events().size()) {
  for (std::size_t i = 0; i < program.streams().size(); ++i) {
    if (program.streams()[i].kind == stream_kind::legacy_default) legacy_ = static_cast<stream_id>(i);
  }
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
  const stream_kind kind = program_.streams()[stream].kind;
  // Stream order, and everything the host did before issuing it.
  clock_ = stream_clocks_[stream];
  clock_.join(host_known_);
  // The legacy default stream barrier, in both directions.
  if (kind == stream_kind::legacy_default) {
    clock_.join(blocking_issued_);
  } else if (is_blocking(kind) && legacy_) {
    clock_.join(stream_clocks_[*legacy_]);
  }
  // A wait binds to the most recent record issued before it; none: no-op.
  if (op.kind == op_kind::stream_wait_event && record_clocks_[*op.event]) {
    clock_.join(*record_clocks_[*op.event]);
  }
  epoch_ = Epoch{stream, ++issued_[stream]};
  clock_.place(epoch_);

  stream_clocks_[stream] = clock_;
  all_issued_.join(clock_);
  if (is_blocking(kind)) blocking_issued_.join(clock_);
  if (op.kind == op_kind::event_record) {
    record_clocks_[*op.event] = clock_;
    records_[*op.event] = id;
  }
  if (blocks_host(op)) host_known_.join(clock_);
}

void ClockWalker::step_host_op(const Op& op) {
  clock_ = host_known_;
  switch (op.kind) {
    case op_kind::stream_synchronize: clock_.join(stream_clocks_[*op.stream]); break;
    case op_kind::event_synchronize:
      if (record_clocks_[*op.event]) clock_.join(*record_clocks_[*op.event]);
      break;
    case op_kind::host_work: break;
    default:  // cudaDeviceSynchronize, allocation and free drain the device
      clock_.join(all_issued_);
      break;
  }
  epoch_ = Epoch{host_timeline(), ++host_calls_};
  clock_.place(epoch_);
  host_known_ = clock_;
}

HappensBefore::HappensBefore(const Program& program) {
  clocks_.reserve(program.ops().size());
  epochs_.reserve(program.ops().size());
  ClockWalker walker(program);
  while (!walker.done()) {
    clocks_.push_back(walker.step());
    epochs_.push_back(walker.epoch());
  }
}

bool HappensBefore::ordered(op_id before, op_id after) const noexcept {
  return before != after && clocks_[after].covers(epochs_[before]);
}

}  // namespace overlap::check
