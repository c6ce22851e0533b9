// Startup, steady state and teardown; polling; host threads; severity by
// consequence: overlap::trace on hand-written traces (issue 35, items 3-5).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_run.hpp"
#include "html_page_data.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/phases.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using nlohmann::json;
using test::TraceBuilder;

constexpr std::uint64_t dev_in = 0x7000'0000'0000;
constexpr std::uint64_t dev_out = 0x7000'1000'0000;
constexpr std::uint64_t dev_scratch = 0x7000'2000'0000;
constexpr std::uint64_t host_pinned = 0x2000'0000;
constexpr std::uint64_t mib = 1 << 20;

bool has_rule(const trace::AuditReport& r, const std::string& rule) {
  return std::any_of(r.findings.begin(), r.findings.end(),
                     [&](const trace::AuditFinding& f) { return f.rule == rule; });
}

// One iteration of a copy-bound loop on stream 13, from `t` (us): upload 8
// MiB (1 ms on the copy engine), a 0.1 ms kernel, download (1 ms), wait.
// Returns when the host is back. `launch_us` is the host time in the launch.
double copy_bound_iteration(TraceBuilder& t, double at, const std::string& step = "", double launch_us = 3) {
  const double start = at;
  t.call("cudaMemcpyAsync", "copy", at, at + 3,
         {{"dst", dev_in},
          {"src", host_pinned},
          {"bytes", 8 * mib},
          {"kind", "h2d"},
          {"stream", 13},
          {"async", true}});
  const double up = at + 3 + launch_us + 10;
  t.work("memcpy", up, up + 1000,
         {{"bytes", 8 * mib}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
  t.call("cudaLaunchKernel", "launch", at + 4, at + 4 + launch_us,
         {{"stream", 13}, {"kernel", "_Z5scalePKfPf"}, {"ptrs", {dev_in, dev_out}}});
  t.work("kernel", up + 1000, up + 1100, {{"stream", 13}});
  const double issued = at + 5 + launch_us;
  t.call("cudaMemcpyAsync", "copy", issued, issued + 3,
         {{"dst", host_pinned + 8 * mib},
          {"src", dev_out},
          {"bytes", 8 * mib},
          {"kind", "d2h"},
          {"stream", 13},
          {"async", true}});
  t.work("memcpy", up + 1100, up + 2100,
         {{"bytes", 8 * mib}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pinned"}, {"stream", 13}});
  t.call("cudaStreamSynchronize", "stream_sync", issued + 4, up + 2110, {{"stream", 13}});
  if (!step.empty()) t.range(step, start, up + 2111);
  return up + 2115;
}

// 53 ms of startup: the context (3 ms in the first call), a first launch
// loading its module (20 ms), four allocations (30 ms) with the device idle
// between the first kernel and the loop; then 20 iterations of a copy-bound loop.
TraceBuilder startup_then_copy_loop(bool with_ranges) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaGetDeviceCount", "other", 0, 3000);
  t.call("cudaLaunchKernel", "launch", 3000, 23000, {{"stream", 13}, {"kernel", "_Z4initv"}});
  t.work("kernel", 23010, 23100, {{"stream", 13}});
  double at = 23100;
  const std::uint64_t pointers[] = {dev_in, dev_out, dev_scratch};
  for (int i = 0; i < 3; ++i) {
    t.call("cudaMalloc", "alloc", at, at + 5000,
           {{"ptr", pointers[i]}, {"bytes", 64 * mib}, {"memory", "device"}});
    at += 5000;
  }
  t.call("cudaHostAlloc", "alloc", at, at + 15000,
         {{"ptr", host_pinned}, {"bytes", 64 * mib}, {"memory", "pinned"}});
  at += 15000;
  if (with_ranges) t.range("setup", 23100, at);
  for (int i = 0; i < 20; ++i) at = copy_bound_iteration(t, at, with_ranges ? "step" : "");
  t.call("cudaFree", "free", at, at + 100, {{"ptr", dev_scratch}, {"memory", "device"}});
  return t.footer();
}

TEST(TracePhases, StartupIsOneLineAndTheCopyBoundLoopGetsTheVerdict) {
  const trace::Capture run = startup_then_copy_loop(false).capture();
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  // Found as the repeating calls: from the first upload of the loop.
  EXPECT_EQ(r.phases.source, "repetition");
  EXPECT_EQ(r.phases.period, 4U);
  EXPECT_EQ(r.phases.repetitions, 20U);
  EXPECT_NEAR(r.phases.steady_start, 53.1, 1e-6);
  EXPECT_NEAR(r.phases.startup_length(), 53.1, 1e-6);
  EXPECT_NEAR(r.phases.startup.context, 3.0, 1e-6);
  EXPECT_NEAR(r.phases.startup.modules, 20.0, 1e-6);
  EXPECT_NEAR(r.phases.startup.allocations, 30.0, 1e-6);
  // The idle device during the set-up allocations is startup, not a finding.
  EXPECT_FALSE(has_rule(r, "idle-gap")) << trace::format_text(r);
  EXPECT_EQ(r.verdict.bound, "copy engines") << r.verdict.text;
  EXPECT_NEAR(r.verdict.floor, 20.0, 0.01);  // 20 uploads of 1 ms

  const std::string text = trace::format_text(r);
  EXPECT_NE(text.find("startup: 53.1 ms, "), std::string::npos) << text;
  EXPECT_NE(text.find("allocations 30 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("steady state: "), std::string::npos) << text;
  const json j = json::parse(trace::format_json(r));
  EXPECT_EQ(j.at("phases").at("source"), "repetition");
  EXPECT_NEAR(j.at("phases").at("startup_ms").get<double>(), 53.1, 1e-6);
  EXPECT_NEAR(j.at("phases").at("startup").at("modules_ms").get<double>(), 20.0, 1e-6);
  EXPECT_GT(j.at("phases").at("startup_fraction").get<double>(), 0.5);
  EXPECT_NEAR(j.at("verdict").at("steady_ms").get<double>(), r.phases.steady_length(), 1e-9);
}

TEST(TracePhases, TheSteadyStateEndsWithTheLastRepetitionsLastCall) {
  const trace::Capture run = startup_then_copy_loop(false).capture();
  const trace::Phases phases = trace::find_phases(run);
  // The last iteration's cudaStreamSynchronize returned 10 us after its download.
  EXPECT_NEAR(phases.steady_end, run.timeline.spans.back().end + 0.01, 1e-9);
  // The cudaFree after it is teardown.
  EXPECT_NEAR(phases.teardown_length(), 0.105, 1e-9);
  EXPECT_NEAR(phases.end, run.timeline.total(), 1e-12);
}

TEST(TracePhases, ARepeatedNvtxRangeIsTheSteadyStateAndRangePicksAnother) {
  const trace::Capture run = startup_then_copy_loop(true).capture();
  const trace::Phases chosen = trace::find_phases(run);
  EXPECT_EQ(chosen.source, "range");
  EXPECT_EQ(chosen.range, "step");
  EXPECT_EQ(chosen.repetitions, 20U);
  EXPECT_NEAR(chosen.steady_start, 53.1, 1e-6);
  EXPECT_NE(chosen.text.find("'step', 20 instances"), std::string::npos) << chosen.text;

  trace::AuditOptions options;
  options.phases.range = "setup";
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"), options);
  EXPECT_EQ(r.phases.range, "setup");
  EXPECT_NEAR(r.phases.steady_start, 23.1, 1e-6);
  EXPECT_NEAR(r.phases.steady_end, 53.1, 1e-6);
  // Only allocations ran in it: no device work to overlap.
  EXPECT_NE(r.verdict.text.find("No device work ran in the steady state"), std::string::npos)
      << r.verdict.text;

  options.phases.range = "nope";
  try {
    (void)trace::audit(run, DeviceModel::preset("h100"), options);
    FAIL() << "expected invalid_input";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("no NVTX range named 'nope' (it has 'setup', 'step')"),
              std::string::npos)
        << e.what();
  }
}

TEST(TracePhases, ProfilerStartAndStopBoundTheSteadyState) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 100, {{"ptr", dev_in}, {"bytes", 64 * mib}, {"memory", "device"}});
  double at = 200;
  for (int i = 0; i < 3; ++i) at = copy_bound_iteration(t, at);
  t.call("cudaProfilerStart", "other", at, at + 1);
  const double start = at + 1;
  for (int i = 0; i < 3; ++i) at = copy_bound_iteration(t, at + 2);
  t.call("cudaProfilerStop", "other", at, at + 1);
  const trace::Phases p = trace::find_phases(t.footer().capture());
  EXPECT_EQ(p.source, "profiler");
  EXPECT_NEAR(p.steady_start, start / 1000.0, 1e-9);
  // The run ends with the last work; the Stop call after it is no op.
  EXPECT_NEAR(p.steady_end, (at - 5) / 1000.0, 1e-9);
}

TEST(TracePhases, RepeatingCallsAreFoundDespiteAWarmUpAndAnExtraCall) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 100, {{"ptr", dev_in}, {"bytes", 64 * mib}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 100, 200, {{"ptr", dev_out}, {"bytes", 64 * mib}, {"memory", "device"}});
  t.call("cudaHostAlloc", "alloc", 200, 300,
         {{"ptr", host_pinned}, {"bytes", 64 * mib}, {"memory", "pinned"}});
  // The first iteration's launch loads the module: 15 ms in the call.
  double at = copy_bound_iteration(t, 400, "", 15000);
  const double second = at;
  for (int i = 1; i < 12; ++i) {
    if (i == 6) {  // a one-off extra call in the middle of the loop
      t.call("cudaMemsetAsync", "memset", at, at + 3,
             {{"dst", dev_out}, {"bytes", mib}, {"stream", 13}, {"async", true}});
      t.work("memset", at + 10, at + 20, {{"stream", 13}});
      at += 25;
    }
    at = copy_bound_iteration(t, at);
  }
  const trace::Phases p = trace::find_phases(t.footer().capture());
  EXPECT_EQ(p.source, "repetition");
  EXPECT_EQ(p.period, 4U);
  EXPECT_EQ(p.repetitions, 11U);  // the first, slow one is warm-up
  EXPECT_NEAR(p.steady_start, second / 1000.0, 1e-9);
  EXPECT_NEAR(p.steady_end, (at - 5) / 1000.0, 1e-9);  // the last download's end
  EXPECT_NE(p.text.find("warm-up"), std::string::npos) << p.text;
  EXPECT_GE(p.startup.modules, 15.0);  // the warm-up launch
}

TEST(TracePhases, WithoutRepetitionTheSteadyStateStartsAfterTheSetUpAllocations) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMemcpyAsync", "copy", 0, 3,
         {{"dst", dev_in},
          {"src", host_pinned},
          {"bytes", mib},
          {"kind", "h2d"},
          {"stream", 13},
          {"async", true}});
  t.work("memcpy", 10, 110,
         {{"bytes", mib}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
  t.call("cudaMalloc", "alloc", 200, 5200, {{"ptr", dev_out}, {"bytes", 64 * mib}, {"memory", "device"}});
  t.call("cudaLaunchKernel", "launch", 5300, 5305, {{"stream", 13}, {"kernel", "_Z1av"}, {"ptrs", {dev_in}}});
  t.work("kernel", 5310, 9310, {{"stream", 13}});
  t.call("cudaLaunchKernel", "launch", 5306, 5309,
         {{"stream", 13}, {"kernel", "_Z1bv"}, {"ptrs", {dev_out}}});
  t.work("kernel", 9310, 12310, {{"stream", 13}});
  t.call("cudaDeviceSynchronize", "device_sync", 5310, 12320);
  const trace::Phases p = trace::find_phases(t.footer().capture());
  EXPECT_EQ(p.source, "device work");
  EXPECT_NEAR(p.steady_start, 5.3, 1e-9);
  EXPECT_NEAR(p.steady_end, 12.31, 1e-9);
}

// Two threads use a library for the first time: thread 8's occupancy query
// loads the kernels' module for 5 ms and its first launch (1.2 ms) loads
// another, while thread 7's first kernel has long finished and the device waits. That
// warm-up is startup; the steady state starts with the work issued after it.
TEST(TracePhases, ModulesLoadingOnFirstUseAreStartupNotTheSteadyState) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.stream(14, "non_blocking");
  t.call("cudaGetDeviceCount", "other", 0, 1);
  t.call("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "other", 5, 5000, {{"tid", 8}});
  t.call("cudaLaunchKernel", "launch", 10, 100, {{"stream", 13}, {"kernel", "_Z1av"}});
  t.work("kernel", 100, 200, {{"stream", 13}});
  t.call("cudaLaunchKernel", "launch", 5000, 6200, {{"stream", 14}, {"kernel", "_Z1bv"}, {"tid", 8}});
  t.work("kernel", 6200, 7200, {{"stream", 14}});
  t.call("cudaLaunchKernel", "launch", 6300, 6310, {{"stream", 13}, {"kernel", "_Z1cv"}});
  t.work("kernel", 6320, 9320, {{"stream", 13}});
  t.call("cudaLaunchKernel", "launch", 6310, 6320, {{"stream", 14}, {"kernel", "_Z1dv"}, {"tid", 8}});
  t.work("kernel", 7200, 9200, {{"stream", 14}});
  t.call("cudaLaunchKernel", "launch", 6320, 6330, {{"stream", 13}, {"kernel", "_Z1ev"}});
  t.work("kernel", 9320, 9400, {{"stream", 13}});
  const trace::Phases p = trace::find_phases(t.footer().capture());
  EXPECT_EQ(p.source, "device work");
  EXPECT_NEAR(p.steady_start, 6.3, 1e-9);
  EXPECT_NEAR(p.steady_end, 9.4, 1e-9);
  EXPECT_NE(p.text.find("modules loading on first use"), std::string::npos) << p.text;
  EXPECT_GE(p.startup.modules, 4.9);  // the query and the first launches
}

// A short kernel query is not loading, and when the loading calls cover most
// of the device work, that work is the run: the start stays.
TEST(TracePhases, LoadingThatHoldsMostOfTheWorkStaysInTheSteadyState) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "other", 0, 5);
  t.call("cudaLaunchKernel", "launch", 10, 3000, {{"stream", 13}, {"kernel", "_Z1av"}});
  t.work("kernel", 3000, 6000, {{"stream", 13}});
  t.call("cudaLaunchKernel", "launch", 20, 30, {{"stream", 13}, {"kernel", "_Z1bv"}, {"tid", 8}});
  t.work("kernel", 6000, 9000, {{"stream", 13}});
  t.call("cudaLaunchKernel", "launch", 3100, 3110, {{"stream", 13}, {"kernel", "_Z1cv"}});
  t.work("kernel", 9000, 9100, {{"stream", 13}});
  const trace::Phases p = trace::find_phases(t.footer().capture());
  EXPECT_EQ(p.source, "device work");
  EXPECT_NEAR(p.steady_start, 0.01, 1e-9);
  EXPECT_EQ(p.text.find("modules loading"), std::string::npos) << p.text;
}

// A host that spins on cudaEventQuery while a 10 ms kernel runs.
TEST(TracePolling, PollingWhileAKernelRunsIsWaitingNotIssuing) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaLaunchKernel", "launch", 0, 5, {{"stream", 13}, {"kernel", "_Z4longv"}});
  t.work("kernel", 10, 10010, {{"stream", 13}});
  t.call("cudaEventRecord", "record", 6, 8, {{"event", 0xe1}, {"stream", 13}});
  double at = 10;
  int polls = 0;
  for (; at + 4 < 10010; at += 4, ++polls) t.call("cudaEventQuery", "other", at, at + 3, {{"status", 600}});
  t.call("cudaEventQuery", "other", 10012, 10013);
  const trace::Capture run = t.footer().capture();
  EXPECT_EQ(run.failed_calls, 0U);  // not-ready is not an error
  EXPECT_TRUE(std::none_of(run.notes.begin(), run.notes.end(), [](const std::string& n) {
    return n.find("returned an error") != std::string::npos;
  }));
  const auto polling =
      std::find_if(run.timeline.host_spans.begin(), run.timeline.host_spans.end(),
                   [](const HostSpan& h) { return h.label.find("polling") != std::string::npos; });
  ASSERT_NE(polling, run.timeline.host_spans.end());
  EXPECT_EQ(polling->activity, host_activity::blocked);
  EXPECT_EQ(polling->label, fmt::format("cudaEventQuery polling ({} calls not ready)", polls));
  EXPECT_NEAR(polling->end - polling->start, (at - 1 - 10) / 1000.0, 1e-9);

  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  EXPECT_EQ(r.verdict.bound, "compute") << r.verdict.text;
  ASSERT_EQ(r.threads.size(), 1U);
  EXPECT_GT(r.threads[0].polling, 9.9);
  EXPECT_LT(r.threads[0].issuing, 0.01);
  EXPECT_NE(r.verdict.text.find("polling"), std::string::npos) << r.verdict.text;
}

// Two threads, each issuing to its own stream.
TraceBuilder two_threads() {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  for (int i = 0; i < 4; ++i) {
    const double at = 1000.0 * i;
    t.call("cudaLaunchKernel", "launch", at, at + 5, {{"stream", 13}, {"kernel", "_Z1av"}, {"tid", 7}});
    t.work("kernel", at + 10, at + 900, {{"stream", 13}});
    t.call("cudaLaunchKernel", "launch", at + 2, at + 8, {{"stream", 14}, {"kernel", "_Z1bv"}, {"tid", 8}});
    t.work("kernel", at + 12, at + 800, {{"stream", 14}});
    t.call("cudaStreamSynchronize", "stream_sync", at + 6, at + 905, {{"stream", 13}, {"tid", 7}});
    t.call("cudaStreamSynchronize", "stream_sync", at + 9, at + 805, {{"stream", 14}, {"tid", 8}});
  }
  return t.footer();
}

TEST(TraceThreads, EachHostThreadHasItsLaneInEveryOutput) {
  const trace::Capture run = two_threads().capture();
  ASSERT_EQ(run.timeline.host_threads.size(), 2U);
  EXPECT_EQ(run.timeline.host_threads[0], "host thread 1 (tid 7)");
  EXPECT_EQ(run.timeline.host_threads[1], "host thread 2 (tid 8)");
  std::set<std::size_t> threads;
  for (const HostSpan& h : run.timeline.host_spans) threads.insert(h.thread);
  EXPECT_EQ(threads, (std::set<std::size_t>{0, 1}));
  EXPECT_TRUE(std::none_of(run.notes.begin(), run.notes.end(),
                           [](const std::string& n) { return n.find("one thread") != std::string::npos; }));

  // Timeline JSON: the threads, each span's, and back.
  const std::string timeline_json = io::to_json(run.timeline);
  const json tj = json::parse(timeline_json);
  EXPECT_EQ(tj.at("host_threads"), json::array({"host thread 1 (tid 7)", "host thread 2 (tid 8)"}));
  const Timeline back = io::timeline_from_json(timeline_json);
  EXPECT_EQ(back.host_threads, run.timeline.host_threads);
  ASSERT_EQ(back.host_spans.size(), run.timeline.host_spans.size());
  for (std::size_t i = 0; i < back.host_spans.size(); ++i)
    EXPECT_EQ(back.host_spans[i].thread, run.timeline.host_spans[i].thread);

  // Chrome: a named thread per host thread, and spans on both.
  const json chrome = json::parse(io::to_chrome_trace(run.timeline));
  std::set<std::string> names;
  std::set<int> tids;
  for (const json& e : chrome.at("traceEvents")) {
    if (e.at("pid") != 0) continue;
    if (e.at("ph") == "M" && e.at("name") == "thread_name") names.insert(e.at("args").at("name"));
    if (e.at("ph") == "X") tids.insert(e.at("tid").get<int>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"host thread 1 (tid 7)", "host thread 2 (tid 8)"}));
  EXPECT_EQ(tids, (std::set<int>{1, 2}));

  // HTML: the run's threads, and each host span's thread.
  const std::string html = io::to_html(run.timeline);
  EXPECT_NE(html.find(R"x("threads":["host thread 1 (tid 7)","host thread 2 (tid 8)"])x"), std::string::npos);
  const auto data_at = html.find("overlap-data");
  ASSERT_NE(data_at, std::string::npos);
  const auto open = html.find('>', data_at) + 1;
  const json page = test::page_rows(json::parse(html.substr(open, html.find("</script>", open) - open)));
  std::set<int> html_threads;
  for (const json& h : page.at("runs").at(0).at("host")) html_threads.insert(h.at(4).get<int>());
  EXPECT_EQ(html_threads, (std::set<int>{0, 1}));

  // The audit: a line and an entry per thread.
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  ASSERT_EQ(r.threads.size(), 2U);
  const json j = json::parse(trace::format_json(r));
  ASSERT_EQ(j.at("host_threads").size(), 2U);
  EXPECT_EQ(j.at("host_threads").at(1).at("name"), "host thread 2 (tid 8)");
  const std::string text = trace::format_text(r);
  EXPECT_NE(text.find("host thread 1 (tid 7): issuing"), std::string::npos) << text;
  EXPECT_NE(text.find("host thread 2 (tid 8): issuing"), std::string::npos) << text;
}

TEST(TraceThreads, ASimulatedTimelineKeepsOneHostLaneAndItsFormat) {
  Timeline t;
  t.host_spans = {{0, host_activity::api_call, "cudaMemcpyAsync", 0, 0.25}};
  const json j = json::parse(io::to_json(t));
  EXPECT_FALSE(j.contains("host_threads"));
  EXPECT_FALSE(j.at("host_spans").at(0).contains("thread"));
  json bad = j;
  bad["host_spans"][0]["thread"] = 3;
  EXPECT_THROW((void)io::timeline_from_json(bad.dump()), invalid_input);
}

// Each iteration: a 10 ms kernel on stream 13 (writes a buffer the host
// never reads), a small download on stream 14, and cudaDeviceSynchronize,
// which waits for the kernel too. The next kernel queues behind it anyway,
// so syncing stream 14 alone would save almost nothing.
TraceBuilder device_sync_loop() {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_in}, {"bytes", 64 * mib}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", dev_out}, {"bytes", 64 * mib}, {"memory", "device"}});
  t.call("cudaHostAlloc", "alloc", 20, 30, {{"ptr", host_pinned}, {"bytes", 64 * mib}, {"memory", "pinned"}});
  double at = 100;
  for (int i = 0; i < 10; ++i) {
    t.call("cudaLaunchKernel", "launch", at, at + 4,
           {{"stream", 13}, {"kernel", "_Z4stepPf"}, {"ptrs", {dev_in}}});
    t.work("kernel", at + 10, at + 10010, {{"stream", 13}});
    t.call("cudaMemcpyAsync", "copy", at + 5, at + 8,
           {{"dst", host_pinned},
            {"src", dev_out},
            {"bytes", 4096},
            {"kind", "d2h"},
            {"stream", 14},
            {"async", true}});
    t.work("memcpy", at + 15, at + 20,
           {{"bytes", 4096}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pinned"}, {"stream", 14}});
    t.call("cudaDeviceSynchronize", "device_sync", at + 9, at + 10015);
    at += 10020;
  }
  return t.footer();
}

TEST(TraceSeverity, ATrapSavingAFractionOfAPercentIsInfo) {
  const trace::Capture run = device_sync_loop().capture();
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  const auto f = std::find_if(r.findings.begin(), r.findings.end(),
                              [](const trace::AuditFinding& x) { return x.rule == "device-synchronize"; });
  ASSERT_NE(f, r.findings.end()) << trace::format_text(r);
  ASSERT_TRUE(f->predicted_saving.has_value());
  EXPECT_GT(r.phases.steady_length(), 99.0);
  EXPECT_LT(*f->predicted_saving, 0.01 * r.phases.steady_length());
  EXPECT_EQ(f->level, check::severity::info) << *f->predicted_saving;
  EXPECT_FALSE(r.fails(check::severity::warning)) << trace::format_text(r);

  // With a threshold under its saving, the same trap is a warning.
  trace::AuditOptions options;
  options.min_saving_ms = *f->predicted_saving / 2;
  const trace::AuditReport strict = trace::audit(run, DeviceModel::preset("h100"), options);
  const auto g = std::find_if(strict.findings.begin(), strict.findings.end(),
                              [](const trace::AuditFinding& x) { return x.rule == "device-synchronize"; });
  ASSERT_NE(g, strict.findings.end());
  EXPECT_EQ(g->level, check::severity::warning);
}

// The recorded planted app (tests/fixtures): its device-synchronize trap saves
// a few percent of the steady state, so a threshold above that makes it info.
TEST(TraceSeverity, MinSavingAndRangeOnTheCommandLine) {
  const std::string trace = std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/device_sync.jsonl";
  const auto warned = test::run_cli({"audit", "--from", trace});
  EXPECT_EQ(warned.code, 1) << warned.out << warned.err;
  EXPECT_NE(warned.out.find("warning device-synchronize"), std::string::npos) << warned.out;
  const auto noted = test::run_cli({"audit", "--from", trace, "--min-saving", "50%"});
  EXPECT_EQ(noted.code, 0) << noted.out << noted.err;
  EXPECT_NE(noted.out.find("info device-synchronize"), std::string::npos) << noted.out;
  EXPECT_EQ(test::run_cli({"audit", "--from", trace, "--min-saving", "1000ms"}).code, 0);
  EXPECT_EQ(test::run_cli({"audit", "--from", trace, "--min-saving", "0.01"}).code, 1);
  const auto bad = test::run_cli({"audit", "--from", trace, "--min-saving", "lots"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--min-saving"), std::string::npos) << bad.err;
  const auto no_range = test::run_cli({"audit", "--from", trace, "--range", "step"});
  EXPECT_EQ(no_range.code, 2);
  EXPECT_NE(no_range.err.find("no NVTX range named 'step'"), std::string::npos) << no_range.err;
}

}  // namespace
}  // namespace overlap
