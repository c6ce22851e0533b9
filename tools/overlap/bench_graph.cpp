// The cuda::Graph rows of `overlap bench`, printed.
#if OVERLAP_HAS_CUDA

#include "bench_graph.hpp"

#include <fmt/format.h>

#include <utility>

#include "bench_streams.hpp"
#include "bench_terms.hpp"

namespace overlap::cli {

namespace {

using bench::variant_kind;
using bench::variant_result;
using json = nlohmann::ordered_json;

double median_of(const std::vector<variant_result>& rows, variant_kind kind) {
  return row_of(rows, kind).device_ms.median;
}

double per_node_us(const variant_result& v) {
  return v.host_issue_per_chunk_us ? v.host_issue_per_chunk_us->median : 0.0;
}

std::string branch_row(const variant_result& v, double alone, double one_stream) {
  return fmt::format("  {:<40} {:>8} {:>7} {:>7} {:>10.3f}  {:>7.3f}..{:<8.3f} {:>7.3f} {:>8.3f}\n", v.name,
                     bench::format_bytes(v.chunk_bytes), v.streams, v.chunks, v.device_ms.median,
                     v.device_ms.min, v.device_ms.max, ratio(v.device_ms.median, alone),
                     ratio(v.device_ms.median, one_stream));
}

std::string issue_text(const variant_result& v) {
  if (!v.host_issue_per_chunk_us) return "-";
  const bench::stats& us = *v.host_issue_per_chunk_us;
  return fmt::format("{:.3f} ({:.3f}..{:.3f})", us.median, us.min, us.max);
}

std::string tiny_row(const variant_result& v) {
  return fmt::format("  {:<40} {:>7} {:>7} {:>10.3f}  {:>7.3f}..{:<8.3f} {:>26}\n", v.name, v.streams,
                     v.chunks, v.device_ms.median, v.device_ms.min, v.device_ms.max, issue_text(v));
}

std::string step_row(const char* name, const bench::stats& s, double limit_ms) {
  return fmt::format("  {:<40} {:>10.3f}  {:>7.3f}..{:<8.3f} {:>9.3f}\n", name, s.median, s.min, s.max,
                     ratio(s.median, limit_ms));
}

std::string branches_text(const bench::graph_result& g, const graph_ratios& q) {
  const double alone = median_of(g.branch_rows, variant_kind::branch_alone);
  const double one_stream = median_of(g.branch_rows, variant_kind::graph_one_stream);
  std::string text = fmt::format(
      "\ngraph branches: {} independent chains of {} kernels, each kernel {} blocks x {} threads ({} SMs), "
      "{} LCG rounds per uint32, {} per branch\n",
      g.branches, g.kernels_per_branch, g.blocks_per_kernel, g.threads_per_block, g.sm_count, g.iterations,
      bench::format_bytes(g.branch_elements * sizeof(std::uint32_t)));
  text += fmt::format("  {:<40} {:>8} {:>7} {:>7} {:>10}  {:^17} {:>7} {:>8}\n", "variant", "branch",
                      "streams", "kernels", "median ms", "min..max ms", "x alone", "x 1-str");
  for (const variant_result& v : g.branch_rows) text += branch_row(v, alone, one_stream);
  text += fmt::format(
      "  concurrent branches: {} of {} (the most kernels running at once in a recorded Graph::run)\n",
      g.concurrent_branches, g.branches);
  text += fmt::format(
      "  Graph::run: {:.3f}x the longest branch alone, {:.2f}x faster than one stream, {:.3f}x the "
      "hand-written streams; replayed: {:.3f}x the longest branch alone\n",
      q.graph_to_alone, q.one_stream_speedup, q.graph_to_hand, q.replay_to_alone);
  const variant_result& run = row_of(g.branch_rows, variant_kind::graph_branches);
  const variant_result& replay = row_of(g.branch_rows, variant_kind::graph_branches_replay);
  text += fmt::format(
      "  the Graph: {} streams, {} event waits; captured once in {:.2f} ms; host issue per kernel {:.2f} us "
      "direct, {:.2f} us replayed\n",
      g.graph_streams, g.graph_waits, g.capture_ms, per_node_us(run), per_node_us(replay));
  return text;
}

std::string tiny_text(const bench::graph_result& g, const graph_ratios& q) {
  std::string text = fmt::format(
      "\ngraph tiny kernels: {} one-thread kernels in {} fans (a root, its leaves, a join) and {} chains "
      "(up to 10 long); {} edges, {} streams, {} event waits\n",
      g.tiny_kernels, g.tiny_fans, g.tiny_chains, g.tiny_edges, g.tiny_streams, g.tiny_waits);
  text += fmt::format("  {:<40} {:>7} {:>7} {:>10}  {:^17} {:>26}\n", "variant", "streams", "kernels",
                      "median ms", "min..max ms", "host us per node (min..max)");
  for (const variant_result& v : g.tiny_rows) text += tiny_row(v);
  text += fmt::format(
      "  host cost per node: {:.3f} us issued by Graph::run, {:.3f} us replayed = {:.3f}x; captured once in "
      "{:.2f} ms\n",
      q.direct_us_per_node, q.replay_us_per_node, q.replay_to_direct_host, g.tiny_capture_ms);
  return text;
}

std::string dag_text(const bench::dag_result& d) {
  constexpr double limit_ms = 200.0;
  std::string text = fmt::format(
      "\ngraph DAG on the CPU (one thread): {} random nodes over {} buffers, {} accesses, {} explicit edges "
      "-> {} edges; mapped onto {} of {} streams with {} event waits ({} cross-stream edges, {} false "
      "dependencies)\n",
      d.nodes, d.buffers, d.accesses, d.explicit_edges, d.edges, d.streams, d.max_streams, d.waits,
      d.cross_stream_edges, d.false_dependencies);
  text += fmt::format("  {:<40} {:>10}  {:^17} {:>9}\n", "step", "median ms", "min..max ms", "x 200 ms");
  text += step_row("declare (graph::TaskGraph)", d.build_ms, limit_ms);
  text += step_row("map (graph::schedule)", d.schedule_ms, limit_ms);
  text += step_row("build and map (dag_build_map)", d.total_ms, limit_ms);
  return text;
}

json row_json(const variant_result& v, double floor_time) {
  json r = {{"name", v.name},
            {"kind", bench::to_string(v.kind)},
            {"item_bytes", v.chunk_bytes},
            {"streams", v.streams},
            {"kernels", v.chunks},
            {"median_ms", v.device_ms.median},
            {"min_ms", v.device_ms.min},
            {"max_ms", v.device_ms.max},
            {"samples_ms", v.device_ms.samples},
            {"host_wall_ms", stats_json(v.host_ms)},
            {"verified", v.verified}};
  if (floor_time > 0.0) r["ratio_to_floor"] = ratio(v.device_ms.median, floor_time);
  if (v.host_issue_ms) r["host_issue_ms"] = stats_json(*v.host_issue_ms);
  if (v.host_issue_per_chunk_us) r["host_issue_per_kernel_us"] = stats_json(*v.host_issue_per_chunk_us);
  return r;
}

}  // namespace

graph_ratios ratios_of(const bench::graph_result& g) {
  graph_ratios q;
  const double alone = median_of(g.branch_rows, variant_kind::branch_alone);
  const double graph = median_of(g.branch_rows, variant_kind::graph_branches);
  q.graph_to_alone = ratio(graph, alone);
  q.one_stream_speedup = ratio(median_of(g.branch_rows, variant_kind::graph_one_stream), graph);
  q.graph_to_hand = ratio(graph, median_of(g.branch_rows, variant_kind::graph_hand_streams));
  q.replay_to_alone = ratio(median_of(g.branch_rows, variant_kind::graph_branches_replay), alone);
  q.direct_us_per_node = per_node_us(row_of(g.tiny_rows, variant_kind::tiny_direct));
  q.replay_us_per_node = per_node_us(row_of(g.tiny_rows, variant_kind::tiny_replay));
  q.replay_to_direct_host = ratio(q.replay_us_per_node, q.direct_us_per_node);
  return q;
}

std::string graph_text(const bench::graph_result& g) {
  const graph_ratios q = ratios_of(g);
  std::string text = branches_text(g, q) + tiny_text(g, q);
  if (g.dag) text += dag_text(*g.dag);
  return text;
}

json graph_json(const bench::graph_result& g) {
  const graph_ratios q = ratios_of(g);
  const double alone = median_of(g.branch_rows, variant_kind::branch_alone);
  json branch_rows = json::array();
  for (const variant_result& v : g.branch_rows) branch_rows.push_back(row_json(v, alone));
  json tiny_rows = json::array();
  for (const variant_result& v : g.tiny_rows) tiny_rows.push_back(row_json(v, 0.0));
  json out;
  out["branches"] = {{"branches", g.branches},
                     {"kernels_per_branch", g.kernels_per_branch},
                     {"blocks_per_kernel", g.blocks_per_kernel},
                     {"threads_per_block", g.threads_per_block},
                     {"iterations", g.iterations},
                     {"elements_per_branch", g.branch_elements},
                     {"sm_count", g.sm_count},
                     {"floor", "branch_alone: the longest branch alone on one stream"},
                     {"floor_ms", alone},
                     {"rows", std::move(branch_rows)},
                     {"concurrent_branches", g.concurrent_branches},
                     {"graph_streams", g.graph_streams},
                     {"graph_waits", g.graph_waits},
                     {"capture_ms", g.capture_ms},
                     {"graph_to_branch_alone", q.graph_to_alone},
                     {"one_stream_to_graph", q.one_stream_speedup},
                     {"graph_to_hand_streams", q.graph_to_hand},
                     {"replay_to_branch_alone", q.replay_to_alone}};
  out["tiny"] = {
      {"kernels", g.tiny_kernels},
      {"fans", g.tiny_fans},
      {"chains", g.tiny_chains},
      {"edges", g.tiny_edges},
      {"streams", g.tiny_streams},
      {"waits", g.tiny_waits},
      {"capture_ms", g.tiny_capture_ms},
      {"rows", std::move(tiny_rows)},
      {"host_issue_per_node_us", {{"direct", q.direct_us_per_node}, {"replay", q.replay_us_per_node}}},
      {"replay_to_direct_host_cost", q.replay_to_direct_host}};
  if (g.dag) {
    const bench::dag_result& d = *g.dag;
    out["dag"] = {{"kind", bench::to_string(variant_kind::dag_build_map)},
                  {"nodes", d.nodes},
                  {"buffers", d.buffers},
                  {"accesses", d.accesses},
                  {"explicit_edges", d.explicit_edges},
                  {"edges", d.edges},
                  {"max_streams", d.max_streams},
                  {"streams", d.streams},
                  {"waits", d.waits},
                  {"cross_stream_edges", d.cross_stream_edges},
                  {"false_dependencies", d.false_dependencies},
                  {"thread", "the calling thread alone"},
                  {"build_ms", stats_json(d.build_ms)},
                  {"schedule_ms", stats_json(d.schedule_ms)},
                  {"total_ms", stats_json(d.total_ms)}};
  }
  return out;
}

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
