// `overlap bench --report`: the sweep of each workload as a chart, and the
// best transfer-bound run measured (CUDA events) beside its prediction.
#if OVERLAP_HAS_CUDA

#include "bench_report.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "bench_terms.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/sim/simulator.hpp"

namespace overlap::cli {

namespace {

using bench::variant_kind;
using bench::variant_result;
using bench::workload_kind;
using bench::workload_result;

/// The sweep as a chart: one line per stream count, floor and sequential as levels.
io::HtmlChart sweep_chart(const workload_result& w) {
  io::HtmlChart chart;
  chart.title = fmt::format("{}: time against chunk size ({} in, {}, {} out)", bench::to_string(w.kind),
                            bench::format_bytes(w.bytes), kernel_words(w), bench::format_bytes(w.bytes));
  chart.x_label = "chunk size (input bytes per chunk; log scale)";
  chart.y_label = "ms";
  chart.log_x = true;
  std::map<std::pair<bool, unsigned>, io::HtmlChart::Series> by_streams;  // round-robin first
  std::map<std::size_t, std::string> sizes;
  for (const variant_result& v : w.variants) {
    if (v.kind != variant_kind::pipeline) continue;
    io::HtmlChart::Series& s = by_streams[{v.per_stage, v.streams}];
    s.name =
        v.per_stage ? fmt::format("{} streams by stage", v.streams) : fmt::format("{} streams", v.streams);
    s.points.emplace_back(static_cast<double>(v.chunk_bytes), v.device_ms.median);
    sizes.emplace(v.chunk_bytes, bench::format_bytes(v.chunk_bytes));
  }
  for (auto& [streams, series] : by_streams) chart.series.push_back(std::move(series));
  for (const auto& [bytes, label] : sizes) chart.x_ticks.emplace_back(static_cast<double>(bytes), label);
  chart.levels.push_back({std::string(floor_words(w)).substr(4), floor_ms(w)});  // no "the"
  chart.levels.push_back({"sequential (one stream)", sequential_of(w).device_ms.median});
  return chart;
}

std::vector<std::string> notes(const bench::bench_result& r, const std::vector<std::string>& verdicts,
                               const std::string& when) {
  std::vector<std::string> lines;
  lines.push_back(device_line(r.device) + "; " + when);
  lines.push_back(fmt::format(
      "Every point is the median of {} timed runs after {} warm-up runs ({} for the rows judged run by run "
      "against a floor measured beside them), timed with CUDA events from before the host issues to after "
      "it has seen the run complete; every output element of every run was verified.",
      r.reps, r.warmup, r.paired_reps));
  for (const workload_result& w : r.workloads) {
    if (w.link) {
      lines.push_back(fmt::format("{}: {} (the link's peak rates, measured in this run over {})",
                                  bench::to_string(w.kind), link_floor_line(*w.link),
                                  link_sweep_text(r.link)));
      if (const std::string chunked = chunked_floor_line(*w.link); !chunked.empty())
        lines.push_back(fmt::format("{}: {}", bench::to_string(w.kind), chunked));
    }
    lines.push_back(fmt::format("{}: {}", bench::to_string(w.kind), best_line(w)));
  }
  for (const std::string& v : verdicts) lines.push_back(v);
  return lines;
}

}  // namespace

Timeline predict_best_run(const workload_result& w, const DeviceModel& model) {
  if (!w.best_program) throw error("bench: the best run's Program was not kept");
  const Program& issued = *w.best_program;
  const double kernel_ms = w.floor(variant_kind::floor_kernel).device_ms.median;
  // A chunk's kernel gets the share of the floor that its input is of the whole.
  std::map<std::int64_t, std::uint64_t> chunk_bytes;
  for (const Op& op : issued.ops()) {
    if (op.kind == op_kind::copy && op.direction == copy_direction::h2d) chunk_bytes[op.chunk] += op.bytes;
  }
  Program program = issued.without_ops();
  for (Op op : issued.ops()) {
    if (op.kind == op_kind::kernel) {
      const auto found = chunk_bytes.find(op.chunk);
      const double share = found == chunk_bytes.end() || w.bytes == 0
                               ? 0.0
                               : static_cast<double>(found->second) / static_cast<double>(w.bytes);
      op.duration = kernel_ms * share;
    }
    (void)program.append(std::move(op));
  }
  Timeline predicted = sim::simulate(program, model);
  predicted.program_name = w.best_timeline ? w.best_timeline->program_name : program.name;
  predicted.device = model.name + " model";
  return predicted;
}

std::string bench_report_html(const bench::bench_result& result, const std::vector<std::string>& verdicts,
                              const std::string& when, const DeviceModel& model) {
  const workload_result* recorded = recorded_workload(result);
  if (recorded == nullptr) throw error("bench --report: no recorded Pipeline run to show");
  const workload_result& shown = *recorded;
  const Timeline predicted = predict_best_run(shown, model);
  io::HtmlComparisonOptions options;
  options.title = "overlap bench on " + result.device.name;
  options.notes = notes(result, verdicts, when);
  options.notes.push_back(fmt::format(
      "Below: the best {} run recorded with CUDA events (measured), and the simulator's "
      "prediction of the same "
      "Program on the {} model (predicted), each kernel timed as the kernel-alone floor "
      "({:.3f} ms) times its "
      "chunk's share of the input.",
      bench::to_string(shown.kind), model.name, shown.floor(variant_kind::floor_kernel).device_ms.median));
  for (const workload_result& w : result.workloads) options.charts.push_back(sweep_chart(w));
  return io::to_html_comparison(*shown.best_timeline, predicted, options);
}

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
