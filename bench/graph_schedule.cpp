// How fast cuda::Graph's CPU side runs (issue 13, (c)): a random DAG of
// declared work (overlap/bench/random_dag.hpp, the one `overlap bench`'s
// dag_build_map row times) declared into a graph::TaskGraph, derived into
// dependencies, and mapped onto 8 streams, on one core. The target is
// building and mapping 100,000 nodes in under 200 ms. CUDA-free: built
// with or without a CUDA toolkit.
#include <benchmark/benchmark.h>

#include <cstddef>

#include "overlap/bench/random_dag.hpp"
#include "overlap/graph/schedule.hpp"
#include "overlap/graph/task_graph.hpp"

namespace {

using namespace overlap;

bench::random_dag_plan plan_of(const benchmark::State& state) {
  bench::random_dag_options options;
  options.nodes = static_cast<std::size_t>(state.range(0));
  options.seed = 20261122;
  return bench::plan_random_dag(options);
}

void count_nodes(benchmark::State& state, std::size_t nodes) {
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes_per_second"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

// Declaring: names, accesses, TaskGraph::add (validation and indexing).
void BM_DeclareRandomDag(benchmark::State& state) {
  const bench::random_dag_plan plan = plan_of(state);
  for (auto _ : state) {
    graph::TaskGraph g = bench::declare_random_dag(plan);
    benchmark::DoNotOptimize(g);
  }
  count_nodes(state, plan.nodes.size());
}

// The dependencies alone (graph::derive_dependencies).
void BM_DeriveDependencies(benchmark::State& state) {
  const graph::TaskGraph g = bench::declare_random_dag(plan_of(state));
  for (auto _ : state) {
    graph::Dependencies d = graph::derive_dependencies(g);
    benchmark::DoNotOptimize(d);
  }
  count_nodes(state, g.size());
}

// Dependencies, streams, waits and the Program (graph::schedule, 8 streams).
void BM_ScheduleRandomDag(benchmark::State& state) {
  const graph::TaskGraph g = bench::declare_random_dag(plan_of(state));
  graph::Schedule last;
  for (auto _ : state) {
    graph::Schedule s = graph::schedule(g, graph::MappingOptions{8});
    benchmark::DoNotOptimize(s);
    last = std::move(s);
  }
  count_nodes(state, g.size());
  state.counters["edges"] = static_cast<double>(last.dependencies.edges);
  state.counters["waits"] = static_cast<double>(last.waits.size());
  state.counters["cross_stream_edges"] = static_cast<double>(last.cross_stream_edges);
}

// Both, as `overlap bench` times them: the target's number.
void BM_BuildAndMapRandomDag(benchmark::State& state) {
  const bench::random_dag_plan plan = plan_of(state);
  for (auto _ : state) {
    const graph::TaskGraph g = bench::declare_random_dag(plan);
    graph::Schedule s = graph::schedule(g, graph::MappingOptions{8});
    benchmark::DoNotOptimize(s);
  }
  count_nodes(state, plan.nodes.size());
}

BENCHMARK(BM_DeclareRandomDag)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DeriveDependencies)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScheduleRandomDag)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildAndMapRandomDag)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
