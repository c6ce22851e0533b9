// How fast the checker runs: programs of about 1,000,000 ops on one core.
// The target (issue 4) is under 5 s for 1,000,000 ops; results go in
// bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include "overlap/check/check.hpp"
#include "overlap/check/races.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/pipeline_shape.hpp"

namespace {

using namespace overlap;

// A chunked pipeline with ~1,000,000 ops (3 per chunk, plus a slot wait and
// record per chunk when the ring passes slots between streams), every op
// declaring its byte ranges on host_in, host_out and the ring slots.
Program million_op_pipeline(std::uint32_t streams, std::uint32_t ring_depth) {
  PipelineShape shape;
  shape.chunks = ring_depth % streams == 0 ? 333'333 : 200'000;
  shape.streams = streams;
  shape.ring_depth = ring_depth;
  shape.h2d_bytes = std::uint64_t{shape.chunks} * 64 * 1024;
  shape.d2h_bytes = shape.h2d_bytes;
  shape.kernel_time = shape.chunks * 0.01;
  return make_pipeline_program(shape);
}

// Seed 001's ping-pong loop for 200,000 frames (1,000,000 ops): per frame a
// stream synchronize, a host refill of the frame's input buffer, H2D,
// kernel and D2H; host-side accesses race-checked against in-flight copies.
Program million_op_ping_pong() {
  Program p;
  const stream_id streams[2] = {p.add_stream("s0"), p.add_stream("s1")};
  const auto whole = [](std::string buffer, access_mode mode) {
    return Access{std::move(buffer), 0, std::nullopt, mode};
  };
  for (int frame = 0; frame < 200'000; ++frame) {
    const int buf = frame % 2;
    const std::string n = std::to_string(buf);
    p.synchronize(streams[buf]);
    p.host_work(0.01);
    p.last().accesses = {whole("h_in" + n, access_mode::write)};
    p.copy(streams[buf], copy_direction::h2d, 1 << 20);
    p.last().accesses = {whole("h_in" + n, access_mode::read), whole("d_in" + n, access_mode::write)};
    p.kernel(streams[buf], 0.05);
    p.last().accesses = {whole("d_in" + n, access_mode::read), whole("d_out" + n, access_mode::write)};
    p.copy(streams[buf], copy_direction::d2h, 1 << 20);
    p.last().accesses = {whole("d_out" + n, access_mode::read), whole("h_out" + n, access_mode::write)};
  }
  p.synchronize_device();
  return p;
}

void count_ops(benchmark::State& state, const Program& program) {
  state.counters["ops"] = static_cast<double>(program.ops().size());
  state.counters["ops_per_second"] = benchmark::Counter(static_cast<double>(program.ops().size()),
                                                        benchmark::Counter::kIsIterationInvariantRate);
}

void races_pipeline(benchmark::State& state) {
  const Program program = million_op_pipeline(static_cast<std::uint32_t>(state.range(0)),
                                              static_cast<std::uint32_t>(state.range(1)));
  for (auto _ : state) {
    check::RaceReport report = check::find_races(program);
    benchmark::DoNotOptimize(report.races.data());
    if (!report.races.empty()) state.SkipWithError("the pipeline should be race-free");
  }
  count_ops(state, program);
}

void races_ping_pong(benchmark::State& state) {
  const Program program = million_op_ping_pong();
  for (auto _ : state) {
    check::RaceReport report = check::find_races(program);
    benchmark::DoNotOptimize(report.races.data());
    if (!report.races.empty()) state.SkipWithError("the ping-pong loop should be race-free");
  }
  count_ops(state, program);
}

// The whole `overlap check`: races and every trap rule, with the
// simulations the rules need, on the H100 model.
void check_pipeline(benchmark::State& state) {
  const Program program = million_op_pipeline(static_cast<std::uint32_t>(state.range(0)),
                                              static_cast<std::uint32_t>(state.range(1)));
  const DeviceModel model = DeviceModel::preset("h100");
  for (auto _ : state) {
    check::Report report = check::check_program(program, model);
    benchmark::DoNotOptimize(report.findings.data());
  }
  count_ops(state, program);
}

// Ranges: streams, ring depth (0: one slot per stream; otherwise slots pass
// between streams through events).
BENCHMARK(races_pipeline)->Args({4, 0})->Args({16, 0})->Args({4, 6})->Unit(benchmark::kMillisecond);
BENCHMARK(races_ping_pong)->Unit(benchmark::kMillisecond);
BENCHMARK(check_pipeline)->Args({4, 0})->Args({16, 0})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
