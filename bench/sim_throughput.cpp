// How fast the simulator runs: programs of about 1,000,000 ops on one core
// (issue 2: under 2 s for 1,000,000 ops), and the planner's whole search
// (issue 11). Results go in bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include "overlap/core/device_model.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/sim/plan.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using namespace overlap;

// A chunked pipeline with ~1,000,000 ops (3 per chunk), sized by bytes so
// the model's bandwidth curves and copy contention are exercised.
Program million_op_pipeline(std::uint32_t streams) {
  PipelineShape shape;
  shape.chunks = 333'333;
  shape.streams = streams;
  shape.h2d_bytes = std::uint64_t{shape.chunks} * 64 * 1024;
  shape.d2h_bytes = shape.h2d_bytes;
  shape.kernel_time = shape.chunks * 0.01;
  return make_pipeline_program(shape);
}

void simulate_million_ops(benchmark::State& state, const char* preset) {
  const Program program = million_op_pipeline(static_cast<std::uint32_t>(state.range(0)));
  const DeviceModel model = DeviceModel::preset(preset);
  for (auto _ : state) {
    Timeline t = sim::simulate(program, model);
    benchmark::DoNotOptimize(t.spans.data());
  }
  state.counters["ops"] = static_cast<double>(program.ops().size());
  state.counters["ops_per_second"] = benchmark::Counter(static_cast<double>(program.ops().size()),
                                                        benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(simulate_million_ops, h100, "h100")->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_million_ops, fermi_2ce, "fermi-2ce")->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_million_ops, unit, "unit")->Arg(4)->Unit(benchmark::kMillisecond);

// The planner's whole search (issue 11): 256 MiB each way on the h100 model,
// with the kernel's total time in ms as the argument (0: copies only).
void plan_search(benchmark::State& state) {
  const DeviceModel model = DeviceModel::preset("h100");
  sim::Workload w;
  w.bytes_in = w.bytes_out = std::uint64_t{256} << 20;
  w.kernel_total_ms = static_cast<double>(state.range(0));
  std::size_t simulated = 0;
  for (auto _ : state) {
    const sim::Plan plan = sim::plan(w, model);
    simulated = plan.simulated;
    benchmark::DoNotOptimize(plan.best.predicted_ms);
  }
  state.counters["simulated"] = static_cast<double>(simulated);
}

BENCHMARK(plan_search)->Arg(0)->Arg(2)->Arg(20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
