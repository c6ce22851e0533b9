// PyTorch profiler (Kineto) Chrome traces: read into the RawTrace our own
// traces give, captured and audited, with what the format lacks said rather
// than guessed; and the stream activity figures (HTA's definitions) on
// hand-made traces whose answers are worked out below.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "message_of.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/stream_activity.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap {
namespace {

using nlohmann::json;

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(OVERLAP_SOURCE_DIR) / "tests/fixtures/kineto" / name;
}

std::size_t count_api(const trace::RawTrace& t, const std::string& api) {
  return static_cast<std::size_t>(
      std::count_if(t.calls.begin(), t.calls.end(), [&](const trace::Call& c) { return c.api == api; }));
}

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// A Chrome trace of `events` (ts and dur in microseconds).
std::string chrome(const json& events) {
  return json{
      {"schemaVersion", 1},
      {"deviceProperties",
       json::array(
           {{{"id", 0}, {"name", "Test GPU"}, {"numSms", 100}, {"computeMajor", 9}, {"computeMinor", 0}}})},
      {"traceEvents", events}}
      .dump();
}

json runtime(const std::string& name, double ts, double dur, int corr, int tid = 1) {
  return {
      {"ph", "X"},  {"cat", "cuda_runtime"},          {"name", name}, {"pid", 10}, {"tid", tid}, {"ts", ts},
      {"dur", dur}, {"args", {{"correlation", corr}}}};
}

json device(const std::string& cat, const std::string& name, double ts, double dur, int corr, int stream,
            json args = json::object()) {
  args["correlation"] = corr;
  args["stream"] = stream;
  return {{"ph", "X"},     {"cat", cat}, {"name", name}, {"pid", 0},
          {"tid", stream}, {"ts", ts},   {"dur", dur},   {"args", args}};
}

TEST(PytorchTrace, RecordedTraceReadsAsCallsWorkStreamsAndRanges) {
  const trace::RawTrace t = trace::load_trace(fixture("side_stream_fixed.json"));
  EXPECT_EQ(t.format, "pytorch-profiler");
  EXPECT_TRUE(t.gaps.pointers && t.gaps.event_records && t.gaps.stream_kinds && t.gaps.call_status);
  // The loop's own calls, as the profile counts them (side_stream_race.py, 12 steps, fixed).
  EXPECT_EQ(count_api(t, "cudaStreamWaitEvent"), 12U);
  EXPECT_EQ(count_api(t, "cudaMemcpyAsync"), 14U);
  ASSERT_EQ(t.devices.size(), 1U);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.devices[0].sms, 132);
  EXPECT_EQ(t.devices[0].compute_capability, "9.0");
  ASSERT_EQ(t.streams.size(), 2U);  // the default stream (7) and the side stream (13)
  EXPECT_EQ(t.streams[0].id, 7U);
  EXPECT_EQ(t.streams[1].id, 13U);
  EXPECT_EQ(std::count_if(t.ranges.begin(), t.ranges.end(),
                          [](const trace::Range& r) { return r.name == "train_step"; }),
            12);
  // Every wait names the event it waited on and the stream that waited,
  // from CUPTI's synchronization records.
  for (const trace::Call& c : t.calls) {
    if (c.api != "cudaStreamWaitEvent") continue;
    EXPECT_EQ(c.cls, trace::call_class::wait);
    EXPECT_TRUE(c.stream.has_value());
    EXPECT_NE(c.event, 0U);
  }
  // Copies take their direction and bytes from their device record.
  for (const trace::Call& c : t.calls) {
    if (c.api != "cudaMemcpyAsync") continue;
    EXPECT_FALSE(c.copy_kind.empty());
    EXPECT_GT(c.bytes, 0U);
    EXPECT_TRUE(c.async);
  }
  EXPECT_TRUE(std::is_sorted(t.calls.begin(), t.calls.end(),
                             [](const trace::Call& a, const trace::Call& b) { return a.end < b.end; }));
}

TEST(PytorchTrace, AuditSaysWhatTheFormatCannotShowAndReportsNoRaceItCannotCheck) {
  for (const char* name : {"side_stream_race.json", "side_stream_fixed.json", "concurrent_streams.json"}) {
    SCOPED_TRACE(name);
    const trace::Capture run = trace::capture(trace::load_trace(fixture(name)));
    const trace::AuditReport r = trace::audit(run, DeviceModel::load("h100"));
    EXPECT_EQ(r.trace_format, "pytorch-profiler");
    EXPECT_TRUE(has_note(r.notes, "records no pointer arguments: races"));
    EXPECT_TRUE(has_note(r.notes, "does not say which record an event wait waited for"));
    EXPECT_TRUE(has_note(r.notes, "does not record stream kinds"));
    // No address in the trace: no race is claimed, either way.
    EXPECT_EQ(std::count_if(r.findings.begin(), r.findings.end(),
                            [](const trace::AuditFinding& f) { return f.rule == "race"; }),
              0);
    EXPECT_EQ(r.count(check::severity::error), 0U);
  }
}

TEST(PytorchTrace, GraphReplaysBecomeTheGraphsKernelsOnTheirStreams) {
  const trace::RawTrace t = trace::load_trace(fixture("graph_replay.json"));
  EXPECT_EQ(count_api(t, "cudaGraphLaunch"), 20U);
  const trace::Capture run = trace::capture(t);
  EXPECT_EQ(run.unmatched_work, 0U);
  std::size_t graph_ops = 0;
  for (const Op& op : run.program.ops()) graph_ops += op.graph_node ? 1 : 0;
  EXPECT_GE(graph_ops, 20U * 3);  // each replay ran at least the MLP's two GEMMs and its GELU
}

TEST(PytorchTrace, AWaitWithoutItsRecordWaitsForTheOtherStreamsEarlierWork) {
  // Stream 13 copies; stream 7 waits on event 5 (its record unknown), then runs a kernel.
  const json events = json::array({
      runtime("cudaMemcpyAsync", 0, 5, 1),
      device("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 10, 100, 1, 13, {{"bytes", 1 << 20}}),
      runtime("cudaEventRecord", 6, 2, 2),
      runtime("cudaStreamWaitEvent", 9, 2, 3),
      device("cuda_sync", "Stream Wait Event", 9, 2, 3, 7, {{"wait_on_cuda_event_id", 5}}),
      runtime("cudaLaunchKernel", 12, 4, 4),
      device("kernel", "k", 111, 50, 4, 7, {{"grid", {4, 1, 1}}}),
      runtime("cudaDeviceSynchronize", 17, 150, 5),
  });
  const trace::Capture run = trace::capture(trace::read_pytorch_trace(chrome(events), "t.json"));
  const Program& p = run.program;
  // The program orders the kernel after the copy: a record on the copy's
  // stream and a wait on the kernel's, both before the kernel.
  std::optional<std::size_t> record;
  std::optional<std::size_t> wait;
  std::optional<std::size_t> kernel;
  for (std::size_t i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (op.kind == op_kind::event_record && !record) record = i;
    if (op.kind == op_kind::stream_wait_event && !wait) wait = i;
    if (op.kind == op_kind::kernel) kernel = i;
  }
  ASSERT_TRUE(record && wait && kernel);
  EXPECT_EQ(p.streams()[*p.ops()[*record].stream].name, "stream 13");
  EXPECT_EQ(p.streams()[*p.ops()[*wait].stream].name, "stream 7");
  EXPECT_LT(*wait, *kernel);
  EXPECT_EQ(p.ops()[*kernel].stream, p.ops()[*wait].stream);
  // The cudaEventRecord named no stream: host time, no op on any stream.
  EXPECT_EQ(std::count_if(p.ops().begin(), p.ops().end(),
                          [](const Op& op) { return op.kind == op_kind::event_record; }),
            1);
}

TEST(PytorchTrace, TellsChromeTracesFromJsonLines) {
  EXPECT_TRUE(trace::looks_like_chrome_trace("{\n  \"schemaVersion\": 1, \"traceEvents\": []}"));
  EXPECT_TRUE(trace::looks_like_chrome_trace("  [{\"ph\": \"X\"}]"));
  EXPECT_FALSE(trace::looks_like_chrome_trace("{\"t\":\"header\",\"version\":2}\n"));
  EXPECT_FALSE(trace::looks_like_chrome_trace("this is not a trace"));
  EXPECT_FALSE(trace::looks_like_chrome_trace(""));
}

TEST(PytorchTrace, MalformedTracesAreRefusedNamingTheEventAndField) {
  const auto error = [](const std::string& text) {
    return testing::message_of([&] { (void)trace::read_pytorch_trace(text, "t.json"); });
  };
  EXPECT_EQ(error("{\"traceEvents\": [}"),
            "t.json: not valid JSON (expected a Chrome trace from torch.profiler)");
  EXPECT_EQ(error("{\"schemaVersion\": 1}"), "t.json: traceEvents: is missing");
  EXPECT_EQ(error("{\"traceEvents\": 3}"), "t.json: traceEvents: has the wrong type (number)");
  EXPECT_EQ(error("\"text\""),
            "t.json: not a Chrome trace (a JSON string, expected an object with traceEvents)");
  json bad = json::array({runtime("cudaLaunchKernel", 0, 5, 1)});
  bad[0]["ts"] = "soon";
  EXPECT_EQ(error(chrome(bad)), "t.json: traceEvents[0].ts: has the wrong type (string)");
  bad[0]["ts"] = -4.0;
  EXPECT_EQ(error(chrome(bad)), "t.json: traceEvents[0].ts: is out of range (-4)");
  bad[0]["ts"] = 1.0;
  bad[0]["dur"] = 1e300;
  EXPECT_EQ(error(chrome(bad)), "t.json: traceEvents[0].dur: is out of range (1e+300)");
  bad[0]["dur"] = 1.0;
  bad[0]["args"] = json::object();
  EXPECT_EQ(error(chrome(bad)), "t.json: traceEvents[0].args.correlation: is missing");
  bad[0]["args"]["correlation"] = 1.5;
  EXPECT_EQ(error(chrome(bad)), "t.json: traceEvents[0].args.correlation: is out of range (1.5)");
  json work = json::array({device("kernel", "k", 0, 1, 1, 7)});
  work[0]["args"]["stream"] = 1LL << 40;
  EXPECT_EQ(error(chrome(work)), "t.json: traceEvents[0].args.stream: is out of range (1099511627776)");
  EXPECT_EQ(error("[3]"), "t.json: traceEvents[0]: is not an object");
}

TEST(StreamActivity, IdleGapsAreSplitByCauseAsHtaDoes) {
  // Stream 7: kernel A [0,10]; B issued at 5, runs [12,20] (2 us gap, issued
  // before A ended: kernel wait); C issued at 40, runs [45,50] (25 us gap,
  // issued after B ended: host wait); D issued at 41, runs [100,110] (50 us
  // gap, issued before C ended, over 30 us: other).
  const json events = json::array({
      runtime("cudaLaunchKernel", 0, 1, 1),
      device("kernel", "A", 0, 10, 1, 7),
      runtime("cudaLaunchKernel", 5, 1, 2),
      device("kernel", "B", 12, 8, 2, 7),
      runtime("cudaLaunchKernel", 40, 1, 3),
      device("kernel", "C", 45, 5, 3, 7),
      runtime("cudaLaunchKernel", 41, 1, 4),
      device("kernel", "D", 100, 10, 4, 7),
  });
  const trace::StreamActivity a = trace::stream_activity(trace::read_pytorch_trace(chrome(events), "t.json"));
  ASSERT_EQ(a.idle.size(), 1U);
  EXPECT_NEAR(a.idle[0].kernel_wait_ms, 0.002, 1e-12);
  EXPECT_NEAR(a.idle[0].host_wait_ms, 0.025, 1e-12);
  EXPECT_NEAR(a.idle[0].other_ms, 0.050, 1e-12);
  EXPECT_EQ(a.idle[0].kernel_wait_gaps + a.idle[0].host_wait_gaps + a.idle[0].other_gaps, 3U);
  // Queue: +1 at 0, -1 at 0, +1 at 5, -1 at 12, +1 at 40, +1 at 41, -1 at 45, -1 at 100:
  // values 1,0,1,0,1,2,1,0 -> mean 6/8, max 2.
  ASSERT_EQ(a.queues.size(), 1U);
  EXPECT_EQ(a.queues[0].changes, 8U);
  EXPECT_DOUBLE_EQ(a.queues[0].mean, 0.75);
  EXPECT_EQ(a.queues[0].max, 2U);
  EXPECT_FALSE(a.communication_overlap.has_value());  // no NCCL kernel
}

TEST(StreamActivity, CommunicationOverlapIsTheShareOfNcclTimeWithComputeRunning) {
  // NCCL [0,100] on stream 20; compute [50,80] and [70,120] on stream 7 merge
  // to [50,120]: 50 of the 100 us overlap.
  const json events = json::array({
      runtime("cudaLaunchKernel", 0, 1, 1),
      device("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 100, 1, 20),
      runtime("cudaLaunchKernel", 1, 1, 2),
      device("kernel", "gemm", 50, 30, 2, 7),
      runtime("cudaLaunchKernel", 2, 1, 3),
      device("kernel", "gemm", 70, 50, 3, 7),
  });
  const trace::StreamActivity a = trace::stream_activity(trace::read_pytorch_trace(chrome(events), "t.json"));
  ASSERT_TRUE(a.communication_overlap.has_value());
  EXPECT_DOUBLE_EQ(*a.communication_overlap, 0.5);
}

TEST(StreamActivity, RecordedDdpRankOverlapsMostOfItsAllReduces) {
  // One rank of tests/torch/ddp_train.py on two H100s: HTA gives 88.6%
  // (tests/check_against_hta.py compares every figure where HTA is installed).
  const trace::StreamActivity a = trace::stream_activity(trace::load_trace(fixture("ddp_rank0.json")));
  ASSERT_TRUE(a.communication_overlap.has_value());
  EXPECT_NEAR(*a.communication_overlap, 0.886, 0.001);
}

}  // namespace
}  // namespace overlap
