// run_benchmark: checks the configuration, then measures each workload in
// turn on the current device, counting steps for the progress callback.
#include <fmt/format.h>

#include <utility>

#include "overlap/bench/driver.hpp"
#include "run_clock.hpp"
#include "workload_bench.hpp"

namespace overlap::bench {

namespace {

// Every field the driver relies on, before a minute of measuring.
void check_config(const bench_config& config) {
  if (config.reps == 0) throw invalid_input("reps: 0 is out of range (expected >= 1)");
  for (const workload_config& w : config.workloads) {
    if (w.elements < 2) {
      throw invalid_input(fmt::format("elements: {} is out of range (expected >= 2)", w.elements));
    }
    for (const std::size_t chunk : w.chunk_bytes) {
      if (chunk == 0 || chunk % sizeof(float) != 0) {
        throw invalid_input(
            fmt::format("chunk_bytes: {} is out of range (expected a positive multiple of 4)", chunk));
      }
    }
    for (const unsigned streams : w.stream_counts) {
      if (streams == 0) throw invalid_input("streams: 0 is out of range (expected >= 1)");
    }
  }
  const link_sweep& link = config.link;
  if (link.sizes.empty()) throw invalid_input("link.sizes: empty (expected at least one copy size)");
  for (const std::size_t size : link.sizes) {
    if (size == 0) throw invalid_input("link.sizes: 0 is out of range (expected >= 1 byte)");
  }
  if (link.train_bytes == 0) throw invalid_input("link.train_bytes: 0 is out of range (expected >= 1)");
  if (link.reps == 0) throw invalid_input("link.reps: 0 is out of range (expected >= 1)");
}

}  // namespace

std::size_t count_steps(const bench_config& config) noexcept {
  std::size_t steps = 0;
  for (const workload_config& w : config.workloads) {
    // The link sweep (transfer-bound), 4 floors, sequential, two-stream,
    // default Pipeline, the sweep, the best again.
    const std::size_t link = w.kind == workload_kind::transfer_bound ? 1 : 0;
    steps += link + 4 + 3 + w.chunk_bytes.size() * w.stream_counts.size() + 1;
  }
  return steps;
}

bench_result run_benchmark(const bench_config& config, const progress_callback& progress) {
  check_config(config);
  bench_result result;
  result.device = query_device();
  result.warmup = config.warmup;
  result.reps = config.reps;
  result.link = config.link;
  const std::size_t steps = count_steps(config);
  std::size_t step = 0;
  detail::run_clock clock;
  for (const workload_config& workload : config.workloads) {
    const detail::workload_bench::announce_function announce = [&](const std::string& what) {
      ++step;
      if (progress) progress(step, steps, std::string(to_string(workload.kind)) + " " + what);
    };
    detail::workload_bench bench(workload, config, clock, announce);
    workload_result measured = bench.run();
    if (measured.best_timeline) measured.best_timeline->device = result.device.name;
    result.workloads.push_back(std::move(measured));
  }
  return result;
}

}  // namespace overlap::bench
