// The probe's device-side tools: a kernel that holds a stream until the host
// releases it (so work queued behind it starts all at once, with no enqueue
// cost in its timing), an empty kernel, and a timed 1-block spin kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "overlap/cuda/error.hpp"

namespace overlap::probe::detail {

/// Holds streams with a spin kernel until release(). The flag lives in mapped
/// pinned memory the kernel polls; the kernel also gives up after
/// `timeout_ms`, so a host that dies between hold and release cannot leave the
/// GPU spinning for ever.
class gpu_hold {
 public:
  gpu_hold();
  ~gpu_hold();
  gpu_hold(const gpu_hold&) = delete;
  gpu_hold& operator=(const gpu_hold&) = delete;

  /// Enqueues the spin kernel on `stream`.
  void hold(cudaStream_t stream, double timeout_ms = 2000.0);
  /// Lets every held kernel finish.
  void release() noexcept;

 private:
  volatile int* flag_ = nullptr;
  int* device_flag_ = nullptr;
};

/// Launches an empty 1-block kernel on `stream`.
void launch_empty(cudaStream_t stream);
/// Launches a grid that copies `n` floats from `in` to `out` `passes` times:
/// device memory kept busy, as a memory-bound kernel keeps it.
void launch_memory_stream(const float* in, float* out, std::size_t n, unsigned passes, cudaStream_t stream);
/// Launches a 1-block kernel that spins `microseconds` and writes its start
/// and end (globaltimer, ns) to `times[2 * slot]` and `times[2 * slot + 1]`.
void launch_timed_spin(cudaStream_t stream, unsigned long long* times, unsigned slot, unsigned microseconds);

/// Owned CUDA resources the probe uses; each frees itself.
struct owned_stream {
  cudaStream_t handle = nullptr;
  owned_stream();
  ~owned_stream();
  owned_stream(const owned_stream&) = delete;
  owned_stream& operator=(const owned_stream&) = delete;
};
struct owned_event {
  cudaEvent_t handle = nullptr;
  owned_event();
  ~owned_event();
  owned_event(const owned_event&) = delete;
  owned_event& operator=(const owned_event&) = delete;
};
struct owned_pinned {
  void* data = nullptr;
  std::size_t bytes = 0;
  explicit owned_pinned(std::size_t size);
  ~owned_pinned();
  owned_pinned(const owned_pinned&) = delete;
  owned_pinned& operator=(const owned_pinned&) = delete;
};
struct owned_device {
  void* data = nullptr;
  std::size_t bytes = 0;
  explicit owned_device(std::size_t size);
  ~owned_device();
  owned_device(const owned_device&) = delete;
  owned_device& operator=(const owned_device&) = delete;
};

/// Milliseconds between two completed events.
[[nodiscard]] double elapsed_ms(const owned_event& from, const owned_event& to);

/// Host steady clock in milliseconds.
[[nodiscard]] inline double host_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// check() with the probe's context.
inline void check(cudaError_t status, std::string_view call) {
  cuda::check(status, call, "overlap probe");
}

}  // namespace overlap::probe::detail
