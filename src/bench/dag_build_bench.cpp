// cuda::Graph's CPU side at scale (issue 13, (c)): a random DAG of
// 100,000 nodes declared into a graph::TaskGraph, then mapped onto 8
// streams by graph::schedule, each timed on the host's steady clock on the
// calling thread (one core: neither step starts threads). The shape is
// drawn once, outside the timings (random_dag.hpp). No CUDA call: callable
// alone, and the same DAG bench/graph_schedule.cpp times.
#include <chrono>
#include <vector>

#include "overlap/bench/driver.hpp"
#include "overlap/bench/random_dag.hpp"
#include "overlap/graph/schedule.hpp"

namespace overlap::bench {

namespace {

using host_clock = std::chrono::steady_clock;

double ms_between(host_clock::time_point from, host_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

dag_result measure_dag_build(std::size_t nodes, std::uint64_t seed, unsigned warmup, unsigned reps) {
  if (nodes == 0) throw invalid_input("graph.dag_nodes: 0 is out of range (expected >= 1)");
  if (reps == 0) throw invalid_input("reps: 0 is out of range (expected >= 1)");
  random_dag_options options;
  options.nodes = nodes;
  options.seed = seed;
  const random_dag_plan plan = plan_random_dag(options);
  const graph::MappingOptions mapping{8};

  dag_result r;
  r.nodes = nodes;
  r.buffers = options.buffers;
  r.accesses = plan.accesses;
  r.explicit_edges = plan.edges.size();
  r.max_streams = mapping.max_streams;
  std::vector<double> build;
  std::vector<double> map;
  std::vector<double> total;
  for (unsigned rep = 0; rep < warmup + reps; ++rep) {
    const auto started = host_clock::now();
    const graph::TaskGraph g = declare_random_dag(plan);
    const auto declared = host_clock::now();
    const graph::Schedule s = graph::schedule(g, mapping);
    const auto mapped = host_clock::now();
    if (rep == 0) {
      r.edges = s.dependencies.edges;
      r.waits = s.waits.size();
      r.cross_stream_edges = s.cross_stream_edges;
      r.false_dependencies = s.false_dependencies;
      r.streams = s.streams();
    }
    if (rep >= warmup) {
      build.push_back(ms_between(started, declared));
      map.push_back(ms_between(declared, mapped));
      total.push_back(ms_between(started, mapped));
    }
    // The graph and schedule are freed here, outside the timings.
  }
  r.build_ms = summarize(std::move(build));
  r.schedule_ms = summarize(std::move(map));
  r.total_ms = summarize(std::move(total));
  return r;
}

}  // namespace overlap::bench
