// bench/validate: how well the simulator predicts real runs.
//
// For both workloads of docs/hardware.md it runs a grid of pipeline
// configurations on the GPU -- chunk sizes from 256 KiB to the whole buffer,
// 1 to 8 streams, three issue orders (depth-first; breadth-first per round
// of streams; and stage-first, the classic study's every H2D, then every
// kernel, then every D2H) -- times each (median of --reps runs after a
// warm-up, host clock from the first call to the final synchronize, the
// output checked element by element), simulates the same Program on the
// model given with --device (probed in the same session), and prints
// predicted against measured per configuration, with the median and 95th
// percentile absolute error per workload, whether the model names the faster
// issue order wherever two differ by more than 5%, and how the planner's
// choice, measured, compares with the best configuration of the grid.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"
#include "overlap/bench/kernels.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/kernel_cost.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/sim/plan.hpp"
#include "overlap/sim/simulator.hpp"
#include "program_runner.hpp"

namespace overlap::validate {
namespace {

using json = nlohmann::ordered_json;
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

struct workload {
  std::string name;
  std::uint64_t bytes = 0;
  std::vector<std::uint64_t> chunk_sizes;
  bool compute_bound = false;
};

struct config {
  std::uint64_t chunk_bytes = 0;
  std::uint32_t streams = 1;
  issue_order order = issue_order::depth_first;
  std::string label;
};

struct result {
  config c;
  std::uint32_t chunks = 0;
  double predicted_ms = 0.0;
  double measured_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  double issue_ms = 0.0;  ///< measured host time issuing the ops (median)
  [[nodiscard]] double error() const { return (predicted_ms - measured_ms) / measured_ms; }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double rank = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (rank - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= MiB) return fmt::format("{} MiB", bytes / MiB);
  return fmt::format("{} KiB", bytes / KiB);
}

std::string_view order_text(issue_order o) {
  switch (o) {
    case issue_order::depth_first: return "depth";
    case issue_order::breadth_first: return "breadth";
    case issue_order::stage_first: return "stage";
    case issue_order::stage_streams: return "stage-streams";
  }
  return "?";
}

void launch(bool compute_bound, const float* in, float* out, std::size_t n, cudaStream_t s) {
  if (compute_bound) {
    bench::launch_sincos(in, out, n, s);
  } else {
    bench::launch_affine(in, out, n, s);
  }
}

// Per-launch kernel time at each chunk size, launched back to back behind a
// long kernel (so the host's launch cost stays out), then fitted.
KernelFit calibrate(const workload& w, const float* host_in, const std::vector<std::uint64_t>& sizes,
                    int sm_count, json& log) {
  const std::size_t n = w.bytes / sizeof(float);
  const std::size_t blocker_n = std::size_t{4} << 20;
  cuda::stream stream;
  cudaStream_t s = stream.get();
  cuda::device_buffer<float> in_buffer(n, stream);
  cuda::device_buffer<float> out_buffer(n, stream);
  cuda::device_buffer<float> blocker_buffer(blocker_n, stream);
  float* in = in_buffer.data();
  float* out = out_buffer.data();
  float* blocker = blocker_buffer.data();
  // The workload's own input: sinf's time depends on its argument's size.
  cuda::check(cudaMemcpyAsync(in, host_in, w.bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  cuda::check(cudaMemsetAsync(blocker, 0, blocker_n * sizeof(float), s), "cudaMemsetAsync");
  cuda::event e0_event(cuda::event_timing::enabled);
  cuda::event e1_event(cuda::event_timing::enabled);
  cudaEvent_t e0 = e0_event.get();
  cudaEvent_t e1 = e1_event.get();
  std::vector<KernelSample> samples;
  json points = json::array();
  for (const std::uint64_t bytes : sizes) {
    const std::size_t elements = bytes / sizeof(float);
    const auto count = static_cast<unsigned>(std::clamp<std::uint64_t>(w.bytes / bytes, 2, 64));
    std::vector<double> per;
    for (int rep = 0; rep < 4; ++rep) {
      bench::launch_sincos(blocker, blocker, blocker_n, s);
      cuda::check(cudaEventRecord(e0, s), "cudaEventRecord");
      for (unsigned i = 0; i < count; ++i) {
        const std::size_t offset = (i * elements) % (n - elements + 1);
        launch(w.compute_bound, in + offset, out + offset, elements, s);
      }
      cuda::check(cudaEventRecord(e1, s), "cudaEventRecord");
      cuda::check(cudaEventSynchronize(e1), "cudaEventSynchronize");
      float ms = 0.0F;
      cuda::check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
      if (rep > 0) per.push_back(static_cast<double>(ms) / count);  // the first is a warm-up
    }
    samples.push_back({bytes, median(per)});
    points.push_back({{"bytes", bytes}, {"ms", median(per)}});
  }
  std::vector<std::uint64_t> waves;
  for (const std::uint64_t blocks_per_sm : {1, 2, 4, 8}) {
    waves.push_back(static_cast<std::uint64_t>(sm_count) * blocks_per_sm * bench::threads_per_block *
                    sizeof(float));
  }
  KernelFit fit = fit_kernel_cost(samples, waves);
  log = {{"samples", points},
         {"fit",
          {{"fixed_ms", fit.cost.fixed_ms},
           {"ms_per_mib", fit.cost.ms_per_mib},
           {"wave_bytes", fit.cost.wave_bytes},
           {"relative_rms", fit.relative_rms}}}};
  return fit;
}

PipelineShape shape_of(const workload& w, const config& c, const KernelCost& kernel) {
  PipelineShape shape;
  shape.name = fmt::format("{} {}", w.name, c.label);
  shape.h2d_bytes = w.bytes;
  shape.d2h_bytes = w.bytes;
  shape.chunks = static_cast<std::uint32_t>((w.bytes + c.chunk_bytes - 1) / c.chunk_bytes);
  shape.h2d_chunk_bytes = c.chunk_bytes;
  shape.d2h_chunk_bytes = c.chunk_bytes;
  shape.streams = c.streams;
  shape.order = c.order;
  shape.kernel_cost = kernel;
  return shape;
}

struct buffers {
  cuda::pinned_buffer<float> in;
  cuda::pinned_buffer<float> out;
  std::vector<float> expected;
};

void check_output(const buffers& b, bool compute_bound, const std::string& what) {
  for (std::size_t i = 0; i < b.expected.size(); ++i) {
    const float want = b.expected[i];
    const float got = b.out[i];
    const bool ok = compute_bound ? std::fabs(got - want) <= 1e-4F * std::fabs(want) + 1e-5F : got == want;
    if (!ok)
      throw error(fmt::format("validate: {}: wrong output at {}: {} (expected {})", what, i, got, want));
  }
}

// One configuration ready to run: its Program and the runner that issues it.
struct prepared {
  std::unique_ptr<Program> program;
  std::unique_ptr<program_runner> runner;
  std::vector<double> samples;
  std::vector<double> issue_samples;
};

// Builds the runner and makes one checked run (output poisoned with NaN first).
prepared prepare(const PipelineShape& shape, buffers& b, bool compute_bound) {
  prepared p;
  p.program = std::make_unique<Program>(make_pipeline_program(shape));
  std::uint64_t largest = 0;
  for (const Op& op : p.program->ops()) {
    if (op.kind == op_kind::copy) largest = std::max(largest, op.bytes);
  }
  p.runner = std::make_unique<program_runner>(
      *p.program, b.in.data(), b.out.data(), largest,
      [compute_bound](const float* in, float* out, std::size_t n, cudaStream_t s) {
        launch(compute_bound, in, out, n, s);
      });
  std::fill(b.out.data(), b.out.data() + b.out.size(), std::nanf(""));
  (void)p.runner->run();
  check_output(b, compute_bound, shape.name);
  return p;
}

// Runs every prepared configuration once per round, `reps` rounds: a burst
// of noise on the machine spreads over many configurations' samples instead
// of landing on one configuration's every sample.
void measure_rounds(std::vector<prepared>& all, unsigned reps) {
  for (unsigned r = 0; r < reps; ++r) {
    for (auto& p : all) {
      p.samples.push_back(p.runner->run());
      p.issue_samples.push_back(p.runner->last_issue_ms());
    }
  }
}

std::array<double, 3> stats_of(const std::vector<double>& samples) {
  return {median(samples), *std::min_element(samples.begin(), samples.end()),
          *std::max_element(samples.begin(), samples.end())};
}

std::vector<config> grid_of(const workload& w) {
  std::vector<config> grid;
  for (const std::uint64_t chunk : w.chunk_sizes) {
    const std::uint64_t chunks = (w.bytes + chunk - 1) / chunk;
    for (const std::uint32_t streams : {1U, 2U, 4U, 8U}) {
      if (streams > chunks) continue;
      for (const issue_order order :
           {issue_order::depth_first, issue_order::breadth_first, issue_order::stage_first}) {
        // One stream issues the same calls depth- or breadth-first (rounds of one chunk).
        if (streams == 1 && order == issue_order::breadth_first) continue;
        if (chunks == 1 && order != issue_order::depth_first) continue;
        grid.push_back(
            {chunk, streams, order, fmt::format("{} x {} {}", size_text(chunk), streams, order_text(order))});
      }
    }
  }
  return grid;
}

struct accuracy {
  double median = 0.0;
  double p95 = 0.0;
  int order_pairs = 0;
  int order_named = 0;
  json order_misses = json::array();
};

// Median and 95th percentile |error|, and whether the model names the
// faster issue order wherever two measured orders of one (chunk size,
// streams) differ by more than 5%.
accuracy accuracy_of(const std::vector<result>& results) {
  accuracy acc;
  std::vector<double> errors;
  for (const auto& r : results) errors.push_back(std::fabs(r.error()));
  acc.median = median(errors);
  acc.p95 = percentile(errors, 0.95);
  for (std::size_t i = 0; i < results.size(); ++i) {
    for (std::size_t j = i + 1; j < results.size(); ++j) {
      const result& a = results[i];
      const result& z = results[j];
      if (a.c.chunk_bytes != z.c.chunk_bytes || a.c.streams != z.c.streams) continue;
      const double faster = std::min(a.measured_ms, z.measured_ms);
      if (std::max(a.measured_ms, z.measured_ms) <= 1.05 * faster) continue;
      ++acc.order_pairs;
      if ((a.measured_ms < z.measured_ms) == (a.predicted_ms < z.predicted_ms)) {
        ++acc.order_named;
      } else {
        acc.order_misses.push_back(fmt::format("{} vs {}", a.c.label, z.c.label));
      }
    }
  }
  return acc;
}

issue_order order_from(std::string_view text) {
  if (text == "breadth") return issue_order::breadth_first;
  if (text == "stage") return issue_order::stage_first;
  if (text == "stage-streams") return issue_order::stage_streams;
  return issue_order::depth_first;
}

// Re-predicts a saved run (--json of an earlier call) on another model:
// the measurements stay, the predictions and errors are new. No GPU needed.
int replay(const std::string& path, const DeviceModel& model) {
  std::ifstream file(path);
  if (!file) throw error(fmt::format("validate: cannot read {}", path));
  const json saved = json::parse(file);
  for (const auto& w : saved.at("workloads")) {
    const auto& fit = w.at("kernel_calibration").at("fit");
    KernelCost cost{fit.at("fixed_ms").get<double>(), fit.at("ms_per_mib").get<double>(),
                    fit.at("wave_bytes").get<std::uint64_t>()};
    const workload wl{w.at("name").get<std::string>(),
                      w.at("bytes").get<std::uint64_t>(),
                      {},
                      w.at("name").get<std::string>() == "compute-bound"};
    std::vector<result> results;
    for (const auto& row : w.at("configurations")) {
      result r;
      r.c = {row.at("chunk_bytes").get<std::uint64_t>(), row.at("streams").get<std::uint32_t>(),
             order_from(row.at("order").get<std::string>()), row.at("configuration").get<std::string>()};
      r.chunks = row.at("chunks").get<std::uint32_t>();
      r.measured_ms = row.at("measured_ms").get<double>();
      r.min_ms = row.at("measured_min_ms").get<double>();
      r.max_ms = row.at("measured_max_ms").get<double>();
      r.predicted_ms = sim::simulate(make_pipeline_program(shape_of(wl, r.c, cost)), model).total();
      fmt::print("  {:<26} {:>6} {:>8.3f} ms {:>8.3f} ms {:>+7.1f}%\n", r.c.label, r.chunks, r.predicted_ms,
                 r.measured_ms, 100.0 * r.error());
      results.push_back(r);
    }
    const accuracy acc = accuracy_of(results);
    fmt::print("{}: {} configurations, median |error| {:.1f}%, 95th percentile {:.1f}%; orders {}/{}\n",
               wl.name, results.size(), 100.0 * acc.median, 100.0 * acc.p95, acc.order_named,
               acc.order_pairs);
    for (const auto& miss : acc.order_misses) fmt::print("    missed: {}\n", miss.get<std::string>());
  }
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"Predicted against measured over a grid of pipeline configurations (GPU)"};
  std::string device;
  std::string json_path;
  unsigned reps = 7;
  bool quick = false;
  app.add_option("--device", device, "Device model (a file from overlap probe, or a preset)")->required();
  app.add_option("--reps", reps, "Timed runs per configuration (median)")->check(CLI::Range(1U, 1000U));
  app.add_option("--json", json_path, "Write every configuration and the summary as JSON to FILE");
  app.add_flag("--quick", quick, "64 MiB / 1 Mi floats and a smaller grid");
  std::string replay_path;
  app.add_option("--replay", replay_path,
                 "Re-predict the measurements of an earlier --json on --device (no GPU)");
  CLI11_PARSE(app, argc, argv);
  if (!replay_path.empty()) return replay(replay_path, DeviceModel::load(device));

  if (cuda::device_count() == 0) {
    std::fprintf(stderr, "validate: skipped: no CUDA device\n");
    return 0;
  }
  const DeviceModel model = DeviceModel::load(device);
  const bench::device_info info = bench::query_device();
  std::vector<workload> workloads = {
      {"transfer-bound", quick ? 64 * MiB : 256 * MiB, {}, false},
      {"compute-bound", quick ? 4 * MiB : 16 * MiB, {}, true},
  };
  for (auto& w : workloads) {
    for (std::uint64_t c = 256 * KiB; c < w.bytes; c *= quick ? 4 : 2) w.chunk_sizes.push_back(c);
    w.chunk_sizes.push_back(w.bytes);
  }

  json out = {{"device", info.name}, {"model", model.name}, {"reps", reps}, {"workloads", json::array()}};
  fmt::print("validate: {} against the model '{}'{}\n", info.name, model.name, quick ? " (--quick)" : "");
  bool all_pass = true;
  for (const workload& w : workloads) {
    const std::size_t n = w.bytes / sizeof(float);
    buffers b{cuda::pinned_buffer<float>(n), cuda::pinned_buffer<float>(n), std::vector<float>(n)};
    std::mt19937 rng(20261123);
    std::uniform_real_distribution<float> values(w.compute_bound ? 0.0F : -1000.0F,
                                                 w.compute_bound ? static_cast<float>(n) : 1000.0F);
    for (std::size_t i = 0; i < n; ++i) {
      b.in[i] = values(rng);
      b.expected[i] = w.compute_bound ? bench::sincos_reference(b.in[i]) : bench::affine_reference(b.in[i]);
    }
    json calibration;
    const KernelFit fit = calibrate(w, b.in.data(), w.chunk_sizes, info.sm_count, calibration);
    fmt::print("\n{} ({} in, {} out): kernel {:.4f} ms + {:.5f} ms/MiB, waves of {} (fit residual {:.1f}%)\n",
               w.name, size_text(w.bytes), size_text(w.bytes), fit.cost.fixed_ms, fit.cost.ms_per_mib,
               size_text(fit.cost.wave_bytes), 100.0 * fit.relative_rms);
    fmt::print("  {:<26} {:>6} {:>11} {:>11} {:>17} {:>8}\n", "configuration", "chunks", "predicted",
               "measured", "min..max", "error");
    std::vector<result> results;
    const auto grid = grid_of(w);
    std::vector<prepared> runs;
    for (const config& c : grid) {
      const PipelineShape shape = shape_of(w, c, fit.cost);
      result r;
      r.c = c;
      r.chunks = shape.chunks;
      r.predicted_ms = sim::simulate(make_pipeline_program(shape), model).total();
      results.push_back(r);
      runs.push_back(prepare(shape, b, w.compute_bound));
    }
    // The planner's choice on the same model and kernel curve, measured in the same rounds.
    sim::Workload plan_workload;
    plan_workload.bytes_in = w.bytes;
    plan_workload.bytes_out = w.bytes;
    plan_workload.kernel_cost = fit.cost;
    const sim::Plan plan = sim::plan(plan_workload, model);
    PipelineShape planned = plan.best.shape;
    planned.name = fmt::format("{} planner", w.name);
    runs.push_back(prepare(planned, b, w.compute_bound));
    measure_rounds(runs, reps);
    for (std::size_t i = 0; i < results.size(); ++i) {
      result& r = results[i];
      const auto [med, lo, hi] = stats_of(runs[i].samples);
      r.measured_ms = med;
      r.min_ms = lo;
      r.max_ms = hi;
      r.issue_ms = median(runs[i].issue_samples);
      fmt::print("  {:<26} {:>6} {:>8.3f} ms {:>8.3f} ms {:>7.3f}..{:<8.3f} {:>+7.1f}%\n", r.c.label,
                 r.chunks, r.predicted_ms, r.measured_ms, lo, hi, 100.0 * r.error());
    }
    const auto [plan_ms, plan_lo, plan_hi] = stats_of(runs.back().samples);
    runs.clear();  // the rings of every configuration go back before the next workload
    const accuracy acc = accuracy_of(results);
    const double med_error = acc.median;
    const double p95_error = acc.p95;
    const int order_pairs = acc.order_pairs;
    const int order_named = acc.order_named;
    const json& order_misses = acc.order_misses;

    const auto best = std::min_element(results.begin(), results.end(), [](const result& x, const result& y) {
      return x.measured_ms < y.measured_ms;
    });
    const double plan_ratio = plan_ms / best->measured_ms;

    const bool pass_error = med_error <= 0.05 && p95_error <= 0.10;
    const bool pass_orders = order_named == order_pairs;
    const bool pass_plan = plan_ratio <= 1.05;
    all_pass = all_pass && pass_error && pass_orders && pass_plan;
    fmt::print(
        "  {} configurations: median |error| {:.1f}%, 95th percentile {:.1f}%  [{}: <= 5% and <= 10%]\n",
        results.size(), 100.0 * med_error, 100.0 * p95_error, pass_error ? "PASS" : "FAIL");
    fmt::print("  issue orders differing by > 5%: {} pairs, the model names the faster in {}  [{}]\n",
               order_pairs, order_named, pass_orders ? "PASS" : "FAIL");
    for (const auto& miss : order_misses) fmt::print("    missed: {}\n", miss.get<std::string>());
    fmt::print(
        "  planner: {} x {} streams {} ring {} -> predicted {:.3f} ms, measured {:.3f} ms ({:.3f}..{:.3f});\n"
        "    best of the grid {} {:.3f} ms: {:.3f}x  [{}: <= 1.05x]\n",
        plan.best.describe_schedule(), plan.best.streams, order_text(plan.best.order), plan.best.ring_depth,
        plan.best.predicted_ms, plan_ms, plan_lo, plan_hi, best->c.label, best->measured_ms, plan_ratio,
        pass_plan ? "PASS" : "FAIL");

    json rows = json::array();
    for (const auto& r : results) {
      rows.push_back({{"configuration", r.c.label},
                      {"chunk_bytes", r.c.chunk_bytes},
                      {"chunks", r.chunks},
                      {"streams", r.c.streams},
                      {"order", order_text(r.c.order)},
                      {"predicted_ms", r.predicted_ms},
                      {"measured_ms", r.measured_ms},
                      {"measured_min_ms", r.min_ms},
                      {"measured_max_ms", r.max_ms},
                      {"measured_issue_ms", r.issue_ms},
                      {"error", r.error()}});
    }
    out["workloads"].push_back({{"name", w.name},
                                {"bytes", w.bytes},
                                {"kernel_calibration", calibration},
                                {"configurations", rows},
                                {"median_abs_error", med_error},
                                {"p95_abs_error", p95_error},
                                {"order_pairs", order_pairs},
                                {"order_named", order_named},
                                {"planner",
                                 {{"schedule", plan.best.describe_schedule()},
                                  {"streams", plan.best.streams},
                                  {"order", order_text(plan.best.order)},
                                  {"predicted_ms", plan.best.predicted_ms},
                                  {"measured_ms", plan_ms},
                                  {"best_grid", best->c.label},
                                  {"best_grid_ms", best->measured_ms},
                                  {"ratio", plan_ratio}}}});
  }
  if (!json_path.empty()) {
    std::ofstream file(json_path);
    file << out.dump(2) << '\n';
    if (!file) throw error(fmt::format("validate: cannot write {}", json_path));
  }
  fmt::print("\nvalidate: {}\n", all_pass ? "every target met" : "some targets missed (see FAIL above)");
  return 0;
}

}  // namespace
}  // namespace overlap::validate

int main(int argc, char** argv) {
  try {
    return overlap::validate::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validate: error: %s\n", e.what());
    return 1;
  }
}
