#include "overlap/cuda/event.hpp"

#include <utility>

#include "overlap/cuda/error.hpp"

namespace overlap::cuda {

event::event(event_timing timing, event_wait wait) {
  unsigned flags = timing == event_timing::enabled ? cudaEventDefault : cudaEventDisableTiming;
  if (wait == event_wait::block) flags |= cudaEventBlockingSync;
  check(cudaEventCreateWithFlags(&handle_, flags), "cudaEventCreateWithFlags");
}

event::~event() {
  if (handle_ != nullptr) (void)cudaEventDestroy(handle_);
}

event::event(event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

event& event::operator=(event&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

void event::record(stream_view stream) {
  check(cudaEventRecord(handle_, stream.get()), "cudaEventRecord");
}

void event::wait_on(stream_view stream) const {
  check(cudaStreamWaitEvent(stream.get(), handle_, 0), "cudaStreamWaitEvent");
}

void event::synchronize() const {
  check(cudaEventSynchronize(handle_), "cudaEventSynchronize");
}

float event::elapsed_since(const event& start) const {
  float ms = 0.0F;
  check(cudaEventElapsedTime(&ms, start.handle_, handle_), "cudaEventElapsedTime");
  return ms;
}

}  // namespace overlap::cuda
