// The false dependency of shared connections (CUDA_DEVICE_MAX_CONNECTIONS):
// dependent kernel pairs on more streams than connections against as many
// streams as connections. 1-block spin kernels, long enough that all 64
// launches are issued while the first still runs, so the makespan is the
// device's ordering alone: about two spins when nothing but each stream's own
// order holds a kernel back.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "gpu_hold.hpp"
#include "host_costs.hpp"
#include "overlap/probe/probe.hpp"

namespace overlap::probe {

namespace {

/// One run: `streams` fresh streams (so the driver spreads them over the
/// connections round-robin from wherever it stands: the same for every run),
/// a pair each, issued breadth- or depth-first. Milliseconds from the first
/// kernel's start to the last one's end.
double pair_makespan_ms(unsigned streams, bool breadth_first, unsigned spin_us) {
  std::vector<std::unique_ptr<detail::owned_stream>> owned(streams);
  for (auto& s : owned) s = std::make_unique<detail::owned_stream>();
  detail::owned_device times(sizeof(unsigned long long) * 4 * streams);
  detail::check(cudaMemset(times.data, 0, times.bytes), "cudaMemset");
  detail::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto* t = static_cast<unsigned long long*>(times.data);
  // Slot 2k is stream k's A, 2k + 1 its B.
  if (breadth_first) {
    for (unsigned k = 0; k < streams; ++k) detail::launch_timed_spin(owned[k]->handle, t, 2 * k, spin_us);
    for (unsigned k = 0; k < streams; ++k) detail::launch_timed_spin(owned[k]->handle, t, 2 * k + 1, spin_us);
  } else {
    for (unsigned k = 0; k < streams; ++k) {
      detail::launch_timed_spin(owned[k]->handle, t, 2 * k, spin_us);
      detail::launch_timed_spin(owned[k]->handle, t, 2 * k + 1, spin_us);
    }
  }
  detail::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<unsigned long long> host(4 * static_cast<std::size_t>(streams));
  detail::check(cudaMemcpy(host.data(), t, times.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  unsigned long long first = std::numeric_limits<unsigned long long>::max();
  unsigned long long last = 0;
  for (unsigned slot = 0; slot < 2 * streams; ++slot) {
    first = std::min(first, host[2 * static_cast<std::size_t>(slot)]);
    last = std::max(last, host[2 * static_cast<std::size_t>(slot) + 1]);
  }
  return last > first ? static_cast<double>(last - first) / 1e6 : 0.0;
}

}  // namespace

false_dependency_test measure_false_dependency(unsigned streams, unsigned spin_us, unsigned reps) {
  false_dependency_test test;
  test.connections = detail::max_connections_in_force();
  test.spin_us = spin_us;
  streams = std::clamp(streams, 1U, 32U);
  const unsigned fewest = std::min(test.connections, streams);
  std::vector<unsigned> counts{fewest};
  if (streams != fewest) counts.push_back(streams);
  for (const bool breadth : {true, false}) {
    for (const unsigned count : counts) {
      (void)pair_makespan_ms(count, breadth, spin_us / 4 + 1);  // warm: module, streams, connections
      std::vector<double> samples;
      for (unsigned r = 0; r < std::max(1U, reps); ++r)
        samples.push_back(pair_makespan_ms(count, breadth, spin_us));
      test.runs.push_back({breadth ? "breadth" : "depth", count, summarize(samples)});
    }
  }
  return test;
}

}  // namespace overlap::probe
