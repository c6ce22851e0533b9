// `overlap bench --report`'s page, and the Graph section of the text and
// JSON reports, built from made-up results (no GPU). The page: the
// sweep chart holds every Pipeline configuration at its median with the
// floor (the link floor, for the transfer-bound workload) and sequential
// levels, the notes say which term of the link floor binds, and the best
// run's prediction times each kernel as the kernel-alone floor's share for
// its chunk.
#include "bench_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_fixtures.hpp"
#include "bench_graph.hpp"
#include "bench_verdicts.hpp"
#include "overlap/bench/random_dag.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"

namespace overlap::cli {
namespace {

using bench::variant_kind;
using bench_fixtures::MiB;
using bench_fixtures::result_of;
using bench_fixtures::transfer_workload;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(BenchReport, PredictionTimesEachKernelAsItsChunksShareOfTheKernelFloor) {
  const bench::workload_result w = transfer_workload();
  // Without shared SMs each kernel runs at its own speed, so its span is
  // exactly the time it was given (sharing stretches overlapping ones).
  DeviceModel h100 = DeviceModel::preset("h100");
  h100.kernels_share_sms = false;
  const Timeline predicted = predict_best_run(w, h100);
  EXPECT_EQ(predicted.device, "h100 model");
  EXPECT_EQ(predicted.program_name, w.best_timeline->program_name);
  ASSERT_EQ(predicted.spans.size(), w.best_timeline->spans.size());
  const double floor_ms = w.floor(variant_kind::floor_kernel).device_ms.median;
  std::size_t kernels = 0;
  for (const Span& s : predicted.spans) {
    if (s.kind != op_kind::kernel) continue;
    const double bytes = s.chunk < 3 ? 4.0 * MiB : static_cast<double>(w.bytes - 12 * MiB);
    EXPECT_NEAR(s.duration(), floor_ms * bytes / static_cast<double>(w.bytes), 1e-9) << "chunk " << s.chunk;
    ++kernels;
  }
  EXPECT_EQ(kernels, 4U);
}

TEST(BenchReport, PageHasTheSweepChartAndBothRunsOfTheBestConfiguration) {
  const std::string page =
      bench_report_html(result_of(transfer_workload()), {"PASS  a verdict: 1.000x"}, "2026-11-23 12:00 UTC");
  EXPECT_NE(page.find("<h1>overlap bench on Test GPU</h1>"), std::string::npos);
  EXPECT_NE(page.find("2026-11-23 12:00 UTC"), std::string::npos);
  EXPECT_NE(page.find("the median of 3 timed runs after 2 warm-up runs (9 for the rows judged run by run"),
            std::string::npos);
  EXPECT_NE(page.find("<li>PASS  a verdict: 1.000x</li>"), std::string::npos);
  EXPECT_NE(page.find("transfer-bound: best Pipeline: pipeline 4194304 x 2 (4 chunks), 1.600 ms"),
            std::string::npos);
  // The chart: the four swept configurations, a line per stream count, two levels.
  EXPECT_EQ(count(page, "<circle class=\"point\""), 4U);
  EXPECT_EQ(count(page, "<polyline class=\"series\""), 2U);
  EXPECT_NE(page.find(R"(data-series="2 streams" data-x="4194304" data-y="1.6")"), std::string::npos);
  EXPECT_NE(page.find(R"(data-series="4 streams" data-x="1048576" data-y="1.85")"), std::string::npos);
  EXPECT_NE(page.find(R"(data-level="link floor" data-y="1.515)"), std::string::npos);
  EXPECT_NE(page.find(R"x(data-level="sequential (one stream)" data-y="3.1")x"), std::string::npos);
  EXPECT_NE(page.find(">1 MiB</text>"), std::string::npos);
  EXPECT_NE(page.find(">4 MiB</text>"), std::string::npos);
  // Measured and predicted runs, with the total error between them.
  EXPECT_NE(page.find("Total error:"), std::string::npos);
  EXPECT_NE(page.find(R"("name":"measured")"), std::string::npos);
  EXPECT_NE(page.find(R"("name":"predicted")"), std::string::npos);
}

TEST(BenchReport, ThePredictionRunsOnTheModelGiven) {
  overlap::DeviceModel probed = overlap::DeviceModel::preset("h100");
  probed.name = "my probed GPU";
  const std::string page = bench_report_html(result_of(transfer_workload()), {}, "now", probed);
  EXPECT_NE(page.find("Program on the my probed GPU model (predicted)"), std::string::npos);
  EXPECT_NE(page.find("my probed GPU model"), std::string::npos);
  const std::string preset = bench_report_html(result_of(transfer_workload()), {}, "now");
  EXPECT_NE(preset.find("Program on the h100 model (predicted)"), std::string::npos);
}

TEST(BenchReport, PageShowsTheLinkFloorAndTheTermThatBindsIt) {
  const std::string page = bench_report_html(result_of(transfer_workload()), {}, "now");
  EXPECT_NE(
      page.find("transfer-bound: link floor 1.515 ms, bound by: both directions at 18.0 GB/s; peaks: H2D "
                "12.5 GB/s at 4 MiB (spread 1.0%), D2H 12.0 GB/s at 16 MiB (spread 2.0%), both directions "
                "18.0 GB/s at 64 MiB (spread 1.5%)"),
      std::string::npos);
  EXPECT_NE(page.find("copies of 1 MiB, 4 MiB, 16 MiB, 64 MiB in trains of 256 MiB, 5 reps each"),
            std::string::npos);
  // The best run's ratio is to the link floor, not to the whole-buffer copies (1.3 ms).
  EXPECT_NE(page.find("1.600 ms = 1.056x the link floor (1.515 ms)"), std::string::npos);
  EXPECT_EQ(page.find("both-directions floor"), std::string::npos);
}

TEST(BenchReport, QuickPageSaysTheVerdictsAreJudgedAtFullSizeOnly) {
  const bench::bench_result r = result_of(transfer_workload());
  const std::string page = bench_report_html(r, verdict_lines(judge(r, true)), "now");
  EXPECT_NE(page.find("verdicts: judged at full size only"), std::string::npos);
  EXPECT_EQ(page.find("PASS  "), std::string::npos);
  EXPECT_EQ(page.find("FAIL  "), std::string::npos);
}

TEST(BenchReport, ResultsWithoutARecordedRunAreAnError) {
  bench::workload_result w = transfer_workload();
  w.best_timeline.reset();
  EXPECT_THROW((void)bench_report_html(result_of(std::move(w)), {}, "now"), error);
}

TEST(BenchReport, TransferBoundResultsWithoutALinkFloorAreAnError) {
  bench::workload_result w = transfer_workload();
  w.link.reset();
  EXPECT_THROW((void)bench_report_html(result_of(std::move(w)), {}, "now"), error);
}

TEST(BenchGraph, BranchesTableAndSummary) {
  const std::string text = graph_text(bench_fixtures::graph_result());
  EXPECT_NE(
      text.find("graph branches: 8 independent chains of 8 kernels, each kernel 16 blocks x 256 threads "
                "(132 SMs), 16384 LCG rounds per uint32, 16 KiB per branch\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("x alone  x 1-str"), std::string::npos) << text;
  // Every row, its ratio to the longest branch alone and to one stream: 1.05 / 1.0, 1.05 / 8.0.
  EXPECT_NE(
      text.find("graph_branches                             16 KiB       8      64      1.050    1.040..1.071"
                "      1.050    0.131"),
      std::string::npos)
      << text;
  EXPECT_EQ(count(text, "16 KiB"), 6U);  // five rows and the heading
  EXPECT_NE(
      text.find("concurrent branches: 8 of 8 (the most kernels running at once in a recorded Graph::run)"),
      std::string::npos);
  EXPECT_NE(text.find("Graph::run: 1.050x the longest branch alone, 7.62x faster than one stream, 0.972x the "
                      "hand-written streams; replayed: 1.030x the longest branch alone"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("the Graph: 8 streams, 0 event waits; captured once in 1.50 ms; host issue per kernel "
                      "2.00 us direct, 0.12 us replayed"),
            std::string::npos)
      << text;
}

TEST(BenchGraph, TinyKernelsAndTheDagOnTheCpu) {
  const std::string text = graph_text(bench_fixtures::graph_result());
  EXPECT_NE(
      text.find("graph tiny kernels: 1000 one-thread kernels in 5 fans (a root, its leaves, a join) and 50 "
                "chains (up to 10 long); 1040 edges, 8 streams, 12 event waits"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("2.500 (2.400..2.900)"), std::string::npos) << text;
  EXPECT_NE(
      text.find("host cost per node: 2.500 us issued by Graph::run, 0.050 us replayed = 0.020x; captured "
                "once in 20.00 ms"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("graph DAG on the CPU (one thread): 100000 random nodes over 1000 buffers, 200000 accesses, "
                "990 explicit edges -> 250000 edges; mapped onto 8 of 8 streams with 40000 event waits "
                "(90000 cross-stream edges, 10 false dependencies)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("build and map (dag_build_map)               147.000  142.000..158.000      0.735"),
            std::string::npos)
      << text;

  bench::graph_result no_dag = bench_fixtures::graph_result();
  no_dag.dag.reset();
  EXPECT_EQ(graph_text(no_dag).find("graph DAG"), std::string::npos);
}

TEST(BenchGraph, Json) {
  const nlohmann::ordered_json j = graph_json(bench_fixtures::graph_result());
  const auto& branches = j["branches"];
  EXPECT_EQ(branches["branches"], 8);
  EXPECT_EQ(branches["blocks_per_kernel"], 16);
  EXPECT_EQ(branches["threads_per_block"], 256);
  EXPECT_EQ(branches["floor_ms"], 1.0);
  ASSERT_EQ(branches["rows"].size(), 5U);
  EXPECT_EQ(branches["rows"][0]["kind"], "branch_alone");
  EXPECT_EQ(branches["rows"][3]["kind"], "graph_branches");
  EXPECT_EQ(branches["rows"][3]["kernels"], 64);
  EXPECT_NEAR(branches["rows"][3]["ratio_to_floor"].get<double>(), 1.05, 1e-12);
  EXPECT_EQ(branches["rows"][3]["host_issue_per_kernel_us"]["median"], 2.0);
  EXPECT_TRUE(branches["rows"][4]["verified"].get<bool>());
  EXPECT_EQ(branches["concurrent_branches"], 8);
  EXPECT_NEAR(branches["one_stream_to_graph"].get<double>(), 8.0 / 1.05, 1e-12);
  EXPECT_NEAR(branches["graph_to_hand_streams"].get<double>(), 1.05 / 1.08, 1e-12);
  const auto& tiny = j["tiny"];
  EXPECT_EQ(tiny["kernels"], 1000);
  ASSERT_EQ(tiny["rows"].size(), 2U);
  EXPECT_EQ(tiny["rows"][1]["kind"], "tiny_replay");
  EXPECT_FALSE(tiny["rows"][1].contains("ratio_to_floor"));
  EXPECT_EQ(tiny["host_issue_per_node_us"]["direct"], 2.5);
  EXPECT_NEAR(tiny["replay_to_direct_host_cost"].get<double>(), 0.02, 1e-12);
  const auto& dag = j["dag"];
  EXPECT_EQ(dag["kind"], "dag_build_map");
  EXPECT_EQ(dag["nodes"], 100000);
  EXPECT_EQ(dag["waits"], 40000);
  EXPECT_EQ(dag["total_ms"]["median"], 147.0);
  EXPECT_EQ(dag["schedule_ms"]["samples"].size(), 3U);
}

TEST(BenchGraph, MissingRowsAreAnError) {
  bench::graph_result g = bench_fixtures::graph_result();
  g.branch_rows.pop_back();  // no replay
  EXPECT_THROW((void)graph_text(g), error);
  EXPECT_THROW((void)ratios_of(g), error);
}

TEST(BenchGraph, TheRandomDagFollowsFromItsSeedAndStaysInsideItsBuffers) {
  bench::random_dag_options options;
  options.nodes = 3000;
  options.seed = 7;
  const bench::random_dag_plan a = bench::plan_random_dag(options);
  const bench::random_dag_plan b = bench::plan_random_dag(options);
  ASSERT_EQ(a.nodes.size(), 3000U);
  EXPECT_EQ(a.accesses, b.accesses);
  EXPECT_EQ(a.edges, b.edges);
  EXPECT_FALSE(a.edges.empty());  // about 30 explicit edges
  std::size_t accesses = 0;
  for (const bench::random_node& n : a.nodes) {
    EXPECT_GE(n.accesses.size(), 1U);
    EXPECT_LE(n.accesses.size(), 3U);
    for (const bench::random_access& x : n.accesses) {
      EXPECT_LT(x.buffer, options.buffers);
      EXPECT_GE(x.bytes, 4096U);
      EXPECT_LE(x.offset + x.bytes, options.buffer_bytes);
    }
    accesses += n.accesses.size();
  }
  EXPECT_EQ(accesses, a.accesses);
  for (const auto& [before, after] : a.edges) EXPECT_LT(before, after);
  const graph::TaskGraph g = bench::declare_random_dag(a);
  EXPECT_EQ(g.size(), 3000U);
  EXPECT_EQ(g.buffers().size(), options.buffers);
  EXPECT_EQ(g.edges().size(), a.edges.size());
  options.seed = 8;
  const bench::random_dag_plan other = bench::plan_random_dag(options);
  EXPECT_NE(other.accesses + other.edges.size(), a.accesses + a.edges.size());
}

// (c) runs on the CPU alone, so it is tested here at a small size.
TEST(BenchGraph, TheDagRowDeclaresAndMapsOnTheCpu) {
  const bench::dag_result d = bench::measure_dag_build(2000, 11, 1, 3);
  EXPECT_EQ(d.nodes, 2000U);
  EXPECT_EQ(d.buffers, 1000U);
  EXPECT_GE(d.accesses, 2000U);
  EXPECT_GT(d.edges, 0U);
  EXPECT_GE(d.streams, 1U);
  EXPECT_LE(d.streams, 8U);
  EXPECT_EQ(d.max_streams, 8U);
  EXPECT_LE(d.waits, d.cross_stream_edges);  // only the edges not already implied are waited on
  EXPECT_EQ(d.total_ms.samples.size(), 3U);
  EXPECT_GT(d.build_ms.median, 0.0);
  EXPECT_GE(d.total_ms.min, d.schedule_ms.min);
  EXPECT_THROW((void)bench::measure_dag_build(0, 11, 0, 1), invalid_input);
  EXPECT_THROW((void)bench::measure_dag_build(10, 11, 0, 0), invalid_input);
}

TEST(BenchGraph, ConcurrencyIsTheMostKernelSpansRunningAtOnce) {
  Timeline t;
  const auto span = [&t](op_kind kind, double start, double end) {
    Span s;
    s.kind = kind;
    s.start = start;
    s.end = end;
    t.spans.push_back(s);
  };
  EXPECT_EQ(bench::max_concurrent_kernels(t), 0U);
  span(op_kind::kernel, 0.0, 1.0);
  span(op_kind::kernel, 1.0, 2.0);  // back to back with the first: not concurrent
  EXPECT_EQ(bench::max_concurrent_kernels(t), 1U);
  span(op_kind::kernel, 0.5, 1.5);
  span(op_kind::kernel, 0.9, 1.1);
  span(op_kind::copy, 0.0, 2.0);                    // copies do not count
  EXPECT_EQ(bench::max_concurrent_kernels(t), 3U);  // just before 1.0: 0..1, 0.5..1.5 and 0.9..1.1
}

}  // namespace
}  // namespace overlap::cli
