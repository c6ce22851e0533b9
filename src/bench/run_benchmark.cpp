// run_benchmark: checks the configuration, then measures each workload in
// turn on the current device, counting steps for the progress callback.
#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "overlap/bench/driver.hpp"
#include "overlap/cuda/device_scope.hpp"
#include "run_clock.hpp"
#include "timed_rows.hpp"
#include "workload_bench.hpp"

namespace overlap::bench {

namespace {

// Every field the driver relies on, before a minute of measuring.
void check_config(const bench_config& config) {
  if (config.reps == 0) throw invalid_input("reps: 0 is out of range (expected >= 1)");
  if (config.paired_reps == 0) throw invalid_input("paired_reps: 0 is out of range (expected >= 1)");
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
  const feed_config& feed = config.feed;
  if (feed.enabled) {
    if (feed.frames < 2)
      throw invalid_input(fmt::format("feed.frames: {} is out of range (expected >= 2)", feed.frames));
    if (feed.frame_elements == 0)
      throw invalid_input("feed.frame_elements: 0 is out of range (expected >= 1)");
    for (const unsigned slots : feed.slot_counts) {
      if (slots == 0) throw invalid_input("feed.slot_counts: 0 is out of range (expected >= 1)");
    }
    for (const double us : feed.producer_us) {
      if (!(us >= 0.0) || us > 1e6) {
        throw invalid_input(fmt::format("feed.producer_us: {} is out of range (expected 0..1e6 us)", us));
      }
    }
  }
  const pageable_config& pageable = config.pageable;
  if (pageable.enabled) {
    if (pageable.elements < 2) {
      throw invalid_input(
          fmt::format("pageable.elements: {} is out of range (expected >= 2)", pageable.elements));
    }
    if (pageable.chunk_bytes == 0 || pageable.chunk_bytes % sizeof(float) != 0) {
      throw invalid_input(
          fmt::format("pageable.chunk_bytes: {} is out of range (expected a positive multiple of 4)",
                      pageable.chunk_bytes));
    }
    if (pageable.streams == 0) throw invalid_input("pageable.streams: 0 is out of range (expected >= 1)");
    if (pageable.copy_threads.empty())
      throw invalid_input("pageable.copy_threads: empty (expected thread counts)");
    for (const unsigned threads : pageable.copy_threads) {
      if (threads == 0) throw invalid_input("pageable.copy_threads: 0 is out of range (expected >= 1)");
    }
  }
  const graph_config& graph = config.graph;
  if (graph.enabled) {
    const auto in_range = [](const char* field, std::size_t value, std::size_t low, std::size_t high) {
      if (value < low || value > high) {
        throw invalid_input(
            fmt::format("graph.{}: {} is out of range (expected {}..{})", field, value, low, high));
      }
    };
    in_range("branches", graph.branches, 1, 64);
    in_range("kernels_per_branch", graph.kernels_per_branch, 1, 10'000);
    in_range("blocks_per_kernel", graph.blocks_per_kernel, 0, 1U << 20);
    in_range("iterations", graph.iterations, 1, 1U << 24);
    in_range("tiny_kernels", graph.tiny_kernels, 1, 1'000'000);
    in_range("dag_nodes", graph.dag_nodes, 0, 10'000'000);
  }
  const devices_config& devices = config.devices;
  if (devices.enabled) {
    if (devices.devices.empty()) throw invalid_input("devices.devices: empty (expected at least one GPU)");
    cuda::detail::check_device_list(devices.devices);
    if (devices.bytes_each_way < sizeof(std::uint32_t) * devices.devices.size() ||
        devices.bytes_each_way % sizeof(std::uint32_t) != 0) {
      throw invalid_input(fmt::format(
          "devices.bytes_each_way: {} is out of range (expected a multiple of 4, at least 4 per GPU)",
          devices.bytes_each_way));
    }
    if (devices.compute_rounds < 2 || devices.compute_rounds > 1'000'000) {
      throw invalid_input(fmt::format("devices.compute_rounds: {} is out of range (expected 2..1000000)",
                                      devices.compute_rounds));
    }
    if (devices.hand_chunk_bytes.empty() || devices.hand_stream_counts.empty())
      throw invalid_input("devices.hand_chunk_bytes, hand_stream_counts: empty (expected a sweep)");
    for (const std::size_t chunk : devices.hand_chunk_bytes) {
      if (chunk == 0 || chunk % sizeof(std::uint32_t) != 0) {
        throw invalid_input(fmt::format(
            "devices.hand_chunk_bytes: {} is out of range (expected a positive multiple of 4)", chunk));
      }
    }
    for (const unsigned streams : devices.hand_stream_counts) {
      if (streams == 0 || streams > 64)
        throw invalid_input(
            fmt::format("devices.hand_stream_counts: {} is out of range (expected 1..64)", streams));
    }
    if (devices.sweep_reps == 0) throw invalid_input("devices.sweep_reps: 0 is out of range (expected >= 1)");
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
    // the default, planned and calibrated Pipelines, the sweep (each chunk
    // size on each stream count, by stage, and by stage on one kernel
    // stream), the best again; then the default against the kernel alone
    // (compute-bound) or the sweep's best and the chunked floor
    // (transfer-bound), alternating.
    const std::size_t link = w.kind == workload_kind::transfer_bound ? 1 : 0;
    steps += link + 4 + 5 + w.chunk_bytes.size() * (w.stream_counts.size() + 2) + 1 + 1;
  }
  // The frame copies, the ping-pong, the hand-tuned loop, the default Feed,
  // each slot count, graphs per slot, a dedicated issuing thread, and each
  // paced producer with each issuing thread.
  if (config.feed.enabled) steps += 6 + config.feed.slot_counts.size() + 2 * config.feed.producer_us.size();
  // The host copy floor, the one-shot rows together (the host copy swept
  // between rounds), the pinned row and the two registered-once rows.
  if (config.pageable.enabled) steps += 5;
  // Five branch rows and the recorded run, two tiny rows, and the DAG.
  if (config.graph.enabled) steps += 6 + 2 + (config.graph.dag_nodes > 0 ? 1 : 0);
  // Per job: a sweep per GPU count, then the rows of every count together.
  if (config.devices.enabled) steps += 2 * (config.devices.devices.size() + 1);
  return steps;
}

bench_result run_benchmark(const bench_config& config, const progress_callback& progress) {
  check_config(config);
  bench_result result;
  result.device = query_device();
  result.warmup = config.warmup;
  result.reps = config.reps;
  result.paired_reps = config.paired_reps;
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
  const auto announcer = [&](const char* workload) {
    return [&, workload](const std::string& what) {
      ++step;
      if (progress) progress(step, steps, std::string(workload) + " " + what);
    };
  };
  if (config.feed.enabled) result.feed = detail::measure_frames(config, clock, announcer("frames"));
  if (config.pageable.enabled)
    result.pageable = detail::measure_pageable(config, clock, announcer("pageable"));
  if (config.graph.enabled) {
    result.graph = detail::measure_graph(config, clock, announcer("graph"), result.device.sm_count);
    if (result.graph->timeline) result.graph->timeline->device = result.device.name;
  }
  if (config.devices.enabled) result.devices = detail::measure_devices(config, clock, announcer("devices"));
  return result;
}

}  // namespace overlap::bench
