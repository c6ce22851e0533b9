// Host-side costs for the probe: what each runtime call costs the issuing
// thread, how many streams run kernels at once, host staging copy rates and
// cudaHostRegister's cost.
#pragma once

#include <cstddef>
#include <vector>

namespace overlap::probe::detail {

/// Host milliseconds per call, `count` calls issued onto a held stream.
struct call_costs {
  double copy_ms = 0.0;
  double launch_ms = 0.0;
  double record_ms = 0.0;
  double wait_ms = 0.0;
  double graph_launch_ms = 0.0;
};
[[nodiscard]] call_costs measure_call_costs(unsigned count);

/// Launches one 1-block spinning kernel on each of `streams` streams and
/// returns the most that ran at once.
[[nodiscard]] unsigned measure_concurrent_kernels(unsigned streams);

/// CUDA_DEVICE_MAX_CONNECTIONS as the runtime reads it (8 when unset).
[[nodiscard]] unsigned max_connections_in_force();

/// GB/s of a host memcpy of `bytes` from pageable into pinned memory split over `threads` threads.
[[nodiscard]] double staging_gbps(std::size_t bytes, unsigned threads);

/// Milliseconds to cudaHostRegister and to cudaHostUnregister `bytes` of fresh pageable memory.
struct register_cost {
  double register_ms = 0.0;
  double unregister_ms = 0.0;
};
[[nodiscard]] register_cost measure_register(std::size_t bytes);

}  // namespace overlap::probe::detail
