// run_probe: the order of the measurements, their sizes and repetitions.
#include "overlap/probe/probe.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <numeric>
#include <thread>

#include "copy_trains.hpp"
#include "host_costs.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::probe {

namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

struct plan {
  std::vector<std::size_t> sizes;
  std::vector<std::size_t> pageable_sizes;
  std::vector<std::size_t> both_sizes;
  std::size_t train_bytes;
  std::size_t pageable_train_bytes;
  unsigned reps;
  std::size_t staging_bytes;
  std::size_t register_bytes;
};

plan make_plan(bool quick) {
  if (quick) {
    return {{64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB},
            {256 * KiB, 4 * MiB},
            {MiB, 4 * MiB, 16 * MiB},
            32 * MiB,
            8 * MiB,
            3,
            64 * MiB,
            64 * MiB};
  }
  return {{4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB, 128 * MiB},
          {64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB},
          // Up to 128 MiB (each size also in the one-way sweep above, which
          // the slowdown is taken against): past 16 MiB, H2D slows more with
          // D2H beside it (1.11x at 16 MiB, 1.17x at 64, 1.21x at 256 on an H100).
          {256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB, 128 * MiB},
          128 * MiB,
          64 * MiB,
          7,
          256 * MiB,
          256 * MiB};
}

class stepper {
 public:
  stepper(const probe_options& options, std::size_t steps) : options_(options), steps_(steps) {}
  void operator()(const std::string& what) {
    ++step_;
    if (options_.progress) options_.progress(step_, steps_, what);
  }

 private:
  const probe_options& options_;
  std::size_t steps_;
  std::size_t step_ = 0;
};

template <typename F>
measured repeat(unsigned reps, F&& sample) {
  std::vector<double> samples;
  samples.reserve(reps);
  for (unsigned r = 0; r < reps; ++r) samples.push_back(sample());
  return summarize(std::move(samples));
}

copy_sweep sweep(detail::copy_bench& bench, copy_direction direction, host_memory memory,
                 const std::vector<std::size_t>& sizes, std::size_t train_bytes, unsigned reps) {
  copy_sweep result;
  for (const std::size_t bytes : sizes) {
    copy_point point;
    point.bytes = bytes;
    const unsigned count = detail::train_length(bytes, train_bytes);
    (void)bench.train_ms(direction, memory, bytes, count);  // warm-up
    point.train_ms = repeat(reps, [&] { return bench.train_ms(direction, memory, bytes, count); });
    point.alone_ms = repeat(reps, [&] { return bench.alone_ms(direction, memory, bytes); });
    result.points.push_back(point);
  }
  return result;
}

// Both directions' per-copy times at each size, `reps` times (after one
// untimed run when `warm_up`), from `measure(bytes, copies)` -> {h2d, d2h}.
template <typename Measure>
std::vector<bidirectional_point> bidirectional_sweep(const std::vector<std::size_t>& sizes,
                                                     std::size_t train_bytes, unsigned reps, bool warm_up,
                                                     Measure&& measure) {
  std::vector<bidirectional_point> points;
  for (const std::size_t bytes : sizes) {
    const unsigned count = detail::train_length(bytes, train_bytes);
    if (warm_up) (void)measure(bytes, count);
    std::vector<double> up;
    std::vector<double> down;
    for (unsigned r = 0; r < reps; ++r) {
      const auto [h2d, d2h] = measure(bytes, count);
      up.push_back(h2d);
      down.push_back(d2h);
    }
    points.push_back({bytes, summarize(up), summarize(down)});
  }
  return points;
}

std::vector<arbitration_run> arbitration(detail::copy_bench& bench) {
  // Small copies show the order streams are served in; large ones whether
  // the engine finishes a copy before it moves on (or slices time between
  // streams, when every large copy would end near the end).
  struct shape {
    unsigned copies;
    std::size_t bytes;
  };
  std::vector<arbitration_run> runs;
  for (const shape size : {shape{4, MiB}, shape{2, 16 * MiB}}) {
    for (const bool depth_first : {true, false}) {
      arbitration_run run;
      run.streams = 4;
      run.copies_per_stream = size.copies;
      run.bytes = size.bytes;
      run.issue = depth_first ? "depth-first" : "breadth-first";
      const auto finish =
          bench.arbitration_finish_ms(run.streams, run.copies_per_stream, run.bytes, depth_first);
      std::vector<std::size_t> order(finish.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return finish[a] < finish[b]; });
      for (const std::size_t i : order) {
        run.finish_order.emplace_back(static_cast<unsigned>(i / run.copies_per_stream),
                                      static_cast<unsigned>(i % run.copies_per_stream));
        run.finish_ms.push_back(finish[i]);
      }
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

}  // namespace

probe_measurements run_probe(const probe_options& options) {
  if (cuda::device_count() == 0) throw error("overlap probe: no CUDA device");
  const double started = detail::host_ms();
  const plan p = make_plan(options.quick);
  stepper step(options, 16);

  probe_measurements m;
  m.quick = options.quick;
  m.date = fmt::format("{:%Y-%m-%d %H:%M}", fmt::gmtime(std::time(nullptr)));
  int device = 0;
  detail::check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  detail::check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  m.device = prop.name;
  m.sm_count = prop.multiProcessorCount;
  m.async_engine_count = prop.asyncEngineCount;
  detail::check(cudaDriverGetVersion(&m.driver_version), "cudaDriverGetVersion");
  detail::check(cudaRuntimeGetVersion(&m.runtime_version), "cudaRuntimeGetVersion");

  const std::size_t largest = std::max(p.sizes.back(), p.both_sizes.back());
  detail::copy_bench bench(std::max(largest * 2, p.train_bytes));

  step("H2D pinned copies over the size sweep");
  m.h2d_pinned = sweep(bench, copy_direction::h2d, host_memory::pinned, p.sizes, p.train_bytes, p.reps);
  step("D2H pinned copies over the size sweep");
  m.d2h_pinned = sweep(bench, copy_direction::d2h, host_memory::pinned, p.sizes, p.train_bytes, p.reps);
  step("H2D pageable copies");
  m.h2d_pageable = sweep(bench, copy_direction::h2d, host_memory::pageable, p.pageable_sizes,
                         p.pageable_train_bytes, std::min(p.reps, 3U));
  step("D2H pageable copies");
  m.d2h_pageable = sweep(bench, copy_direction::d2h, host_memory::pageable, p.pageable_sizes,
                         p.pageable_train_bytes, std::min(p.reps, 3U));

  step("both directions at once");
  m.bidirectional =
      bidirectional_sweep(p.both_sizes, p.train_bytes, p.reps, /*warm_up=*/true,
                          [&](std::size_t bytes, unsigned count) { return bench.both_ms(bytes, count); });

  step("both directions beside a memory-bound kernel");
  m.bidirectional_beside_memory_kernel = bidirectional_sweep(
      p.both_sizes, p.train_bytes, std::min(p.reps, 3U), /*warm_up=*/false,
      [&](std::size_t bytes, unsigned count) { return bench.both_beside_memory_kernel_ms(bytes, count); });

  step("device-to-device copies and memsets");
  for (const std::size_t bytes : p.both_sizes) {
    const unsigned count = detail::train_length(bytes, p.train_bytes);
    m.d2d.points.push_back(
        {bytes, repeat(p.reps, [&] { return bench.device_train_ms(false, bytes, count); }), {}});
    m.memset.points.push_back(
        {bytes, repeat(p.reps, [&] { return bench.device_train_ms(true, bytes, count); }), {}});
  }

  step("two streams copying one direction");
  {
    const std::size_t bytes = 4 * MiB;
    const unsigned count = detail::train_length(bytes, p.train_bytes / 2);
    const double one = static_cast<double>(bytes) /
                       (bench.train_ms(copy_direction::h2d, host_memory::pinned, bytes, count) * 1e6);
    m.same_direction_speedup = repeat(p.reps, [&] { return bench.two_stream_h2d_gbps(bytes, count) / one; });
  }

  step("copy-engine order between streams");
  m.arbitration = arbitration(bench);

  step("start latencies and event overhead");
  {
    double train_1mib = 0.0;
    for (const auto& point : m.d2h_pinned.points) {
      if (point.bytes == MiB) train_1mib = point.train_ms.median;
    }
    if (train_1mib == 0.0) {
      train_1mib = bench.train_ms(copy_direction::d2h, host_memory::pinned, MiB,
                                  detail::train_length(MiB, p.train_bytes));
    }
    const unsigned reps = p.reps * 3;
    m.copy_start_ms = repeat(reps, [&] { return bench.copy_after_kernel_ms(train_1mib); });
    m.kernel_start_ms = repeat(reps, [&] { return bench.kernel_after_copy_ms(); });
    m.kernel_train_ms = repeat(p.reps, [&] { return bench.kernel_train_ms(128); });
    m.event_ms = repeat(reps, [&] { return bench.event_pair_ms(); });
  }

  step("engine hand-overs in a queued pipeline");
  {
    // Small chunks, so that the hand-overs weigh; many streams, so that
    // every engine always has a chunk queued and none waits for the window.
    constexpr std::size_t bytes = std::size_t{256} << 10;
    constexpr unsigned chunks = 256;
    m.pipeline.bytes = bytes;
    m.pipeline.streams = detail::copy_bench::pipeline_streams;
    m.pipeline.chunk_ms =
        repeat(p.reps, [&] { return bench.pipeline_chunk_ms(bytes, m.pipeline.streams, chunks); });
    m.pipeline.train_copy_ms = repeat(p.reps, [&] {
      const auto [up, down] = bench.both_ms(bytes, chunks);
      return std::max(up, down);
    });
  }

  step("host cost of each runtime call");
  {
    std::vector<double> copy;
    std::vector<double> launch;
    std::vector<double> record;
    std::vector<double> wait;
    std::vector<double> graph;
    for (unsigned r = 0; r < p.reps; ++r) {
      const auto c = detail::measure_call_costs(200);
      copy.push_back(c.copy_ms);
      launch.push_back(c.launch_ms);
      record.push_back(c.record_ms);
      wait.push_back(c.wait_ms);
      graph.push_back(c.graph_launch_ms);
    }
    m.calls = {summarize(copy), summarize(launch), summarize(record), summarize(wait), summarize(graph)};
  }

  step("streams running kernels at once (hardware queues)");
  m.streams_tried = 32;
  m.max_connections = detail::max_connections_in_force();
  m.concurrent_kernels = detail::measure_concurrent_kernels(m.streams_tried);

  step("dependent kernel pairs on more streams than connections");
  // 2 ms spins: the 64 launches (~0.25 ms of host time) are all issued while
  // the first kernel runs. Quick: 1 ms and 3 repetitions (~0.2 s).
  m.false_dependency = measure_false_dependency(m.streams_tried, options.quick ? 1000 : 2000,
                                                std::min(p.reps, options.quick ? 3U : 5U));

  step("host pageable->pinned copies by thread count");
  {
    const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
    for (unsigned threads = 1; threads <= std::min(cores, 16U); threads *= 2) {
      (void)detail::staging_gbps(p.staging_bytes / 4, threads);
      m.staging.push_back({threads, repeat(std::min(p.reps, 3U),
                                           [&] { return detail::staging_gbps(p.staging_bytes, threads); })});
    }
  }

  step("cudaHostRegister and cudaHostUnregister");
  {
    const double gib = static_cast<double>(p.register_bytes) / static_cast<double>(std::size_t{1} << 30);
    std::vector<double> reg;
    std::vector<double> unreg;
    for (unsigned r = 0; r < std::min(p.reps, 3U); ++r) {
      const auto cost = detail::measure_register(p.register_bytes);
      reg.push_back(cost.register_ms / gib);
      unreg.push_back(cost.unregister_ms / gib);
    }
    m.register_ms_per_gib = summarize(reg);
    m.unregister_ms_per_gib = summarize(unreg);
  }

  // The link's peaks, from the same trains.
  auto peak = [](const copy_sweep& s) {
    link_rate best;
    for (const auto& point : s.points) {
      const double gbps = static_cast<double>(point.bytes) / (point.train_ms.median * 1e6);
      if (gbps > best.gigabytes_per_second) best = {gbps, point.bytes, point.train_ms.spread()};
    }
    return best;
  };
  m.peaks.h2d = peak(m.h2d_pinned);
  m.peaks.d2h = peak(m.d2h_pinned);
  for (const auto& b : m.bidirectional) {
    const double gbps =
        2.0 * static_cast<double>(b.bytes) / (std::max(b.h2d_ms.median, b.d2h_ms.median) * 1e6);
    if (gbps > m.peaks.both.gigabytes_per_second) {
      m.peaks.both = {gbps, b.bytes, std::max(b.h2d_ms.spread(), b.d2h_ms.spread())};
    }
  }
  m.seconds = (detail::host_ms() - started) / 1000.0;
  return m;
}

}  // namespace overlap::probe
