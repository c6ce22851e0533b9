// An owned CUDA event, with or without timing.
#pragma once

#include <cuda_runtime_api.h>

#include "overlap/cuda/stream.hpp"

namespace overlap::cuda {

/// Whether an event records a timestamp (timing costs a little).
enum class event_timing { disabled, enabled };

/// How a host thread waits in event::synchronize: spinning (the default:
/// the lowest latency, a core busy) or sleeping until the driver wakes it
/// (cudaEventBlockingSync: a core free for other host work). Blocking has
/// costs of its own on the lent machines: the wake came up to 300 us late,
/// and streams recording such events copied 2-6% slower (bench/RESULTS.md,
/// issue 12 parts 3 and 4); a thread that must not spin can poll a plain
/// event with cudaEventQuery and short sleeps, as cuda::Feed does.
enum class event_wait { spin, block };

/// An owned CUDA event, destroyed with the object.
class event {
 public:
  /// Creates the event (cudaEventCreateWithFlags) on the current device; throws cuda_error.
  explicit event(event_timing timing = event_timing::disabled, event_wait wait = event_wait::spin);
  ~event();
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  /// Takes ownership of `other`'s event; `other` is left empty.
  event(event&& other) noexcept;
  /// Swaps events with `other`, which destroys this one's former event when it goes.
  event& operator=(event&& other) noexcept;

  /// cudaEventRecord on `stream`.
  void record(stream_view stream);
  /// Makes `stream` wait for the most recent record (cudaStreamWaitEvent).
  void wait_on(stream_view stream) const;
  /// Blocks the host until the most recent record has completed.
  void synchronize() const;
  /// Milliseconds from `start` to this event; both must be timing events, recorded and complete.
  [[nodiscard]] float elapsed_since(const event& start) const;

  /// The raw handle (null when moved from); still owned by this object.
  [[nodiscard]] cudaEvent_t get() const noexcept { return handle_; }

 private:
  cudaEvent_t handle_ = nullptr;
};

}  // namespace overlap::cuda
