// cuda::Graph in `overlap bench` (issue 13): (a) the branches, (b) the tiny
// kernels, then (c) the random DAG on the CPU alone; and the helpers the
// parts share.
#include "graph_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "host_parallel.hpp"

namespace overlap::bench {

unsigned max_concurrent_kernels(const Timeline& timeline) {
  // A sweep over span ends and starts; at equal times ends come first
  // (-1 sorts before +1), so back-to-back kernels do not count as overlapping.
  std::vector<std::pair<double, int>> edges;
  for (const Span& s : timeline.spans) {
    if (s.kind != op_kind::kernel || !(s.end > s.start)) continue;
    edges.emplace_back(s.start, +1);
    edges.emplace_back(s.end, -1);
  }
  std::sort(edges.begin(), edges.end());
  int running = 0;
  int most = 0;
  for (const auto& [time, step] : edges) {
    running += step;
    most = std::max(most, running);
  }
  return static_cast<unsigned>(most);
}

namespace detail {

run_info timed_issue(const cuda::event& start, const cuda::stream& main, const std::function<void()>& issue,
                     run_info info) {
  start.wait_on(main);
  const auto issued = host_clock::now();
  issue();
  info.host_issue_ms = milliseconds_since(issued);
  main.synchronize();
  return info;
}

void verify_bits(std::span<const std::uint32_t> got, std::span<const std::uint32_t> want,
                 const std::string& what) {
  const auto [g, w] = std::mismatch(got.begin(), got.end(), want.begin(), want.end());
  if (g == got.end() && w == want.end()) return;
  const auto index = static_cast<std::size_t>(g - got.begin());
  if (g == got.end() || w == want.end()) {
    throw wrong_output(fmt::format("graph: {}: {} elements, expected {}", what, got.size(), want.size()),
                       index);
  }
  throw wrong_output(fmt::format("graph: {}: element {} is {:#010x}, expected {:#010x}", what, index, *g, *w),
                     index);
}

void spread_over_cores(std::size_t n, const std::function<void(std::size_t, std::size_t)>& f) {
  const std::size_t threads = std::min<std::size_t>(host_threads(), std::max<std::size_t>(n, 1));
  const std::size_t per_thread = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(n, t * per_thread);
    const std::size_t end = std::min(n, begin + per_thread);
    if (begin < end) pool.emplace_back([&f, begin, end] { f(begin, end); });
  }
  for (std::thread& thread : pool) thread.join();
}

graph_result measure_graph(const bench_config& config, run_clock& clock, const announce_row& announce,
                           int sm_count) {
  graph_result r;
  measure_branches(config, clock, announce, sm_count, r);
  measure_tiny(config, clock, announce, r);
  if (config.graph.dag_nodes > 0) {
    announce(fmt::format("random DAG of {} nodes: build and map on the CPU", config.graph.dag_nodes));
    r.dag = measure_dag_build(config.graph.dag_nodes, config.seed ^ 0xDA6ULL, config.warmup, config.reps);
  }
  return r;
}

}  // namespace detail

}  // namespace overlap::bench
