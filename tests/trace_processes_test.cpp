// A multi-process job's traces: each process named by its rank, the
// processes joined on their shared clock, and each rank's collectives
// against its compute (the figures HTA gives per rank), hand-computed on
// traces shaped after a data-parallel training step.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "message_of.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/communication.hpp"
#include "overlap/trace/process_audit.hpp"
#include "overlap/trace/processes.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;
using testing::message_of;

constexpr double step_us = 1000.0;

// `steps` training steps of one rank after a set-up allocation at `shift` us,
// each an NVTX range "step" of 900 us from `shift` + 100 us on: a compute kernel on stream 7 runs
// 10..610 us into the step; the gradients' all-reduce runs 310..710 us on
// NCCL's stream 20 (300 of its 400 us under compute), or, `serialized`,
// 610..900 us on stream 7 after the compute.
TraceBuilder ddp_rank(std::uint64_t pid, nlohmann::json env, int steps, double shift,
                      bool serialized = false) {
  TraceBuilder t(pid);
  if (!env.is_null()) t.env(std::move(env));
  t.stream(7, "blocking").stream(20, "non_blocking");
  // Set-up before the steps: the context is created inside the first call.
  t.call("cudaMalloc", "alloc", shift, shift + 50, {{"ptr", 4096}, {"bytes", 1024}, {"memory", "device"}});
  shift += 100.0;
  for (int i = 0; i < steps; ++i) {
    const double at = shift + step_us * i;
    t.call("cudaLaunchKernel", "launch", at + 1, at + 5, {{"stream", 7}, {"kernel", "_Z8backwardv"}});
    t.work("kernel", at + 10, at + 610, {{"stream", 7}, {"name", "_Z8backwardv"}});
    const std::uint32_t comm_stream = serialized ? 7 : 20;
    const double comm_start = serialized ? at + 610 : at + 310;
    const double comm_end = serialized ? at + 900 : at + 710;
    t.call("cudaLaunchKernel", "launch", at + 6, at + 8,
           {{"stream", comm_stream}, {"kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}});
    t.work("kernel", comm_start, comm_end,
           {{"stream", comm_stream}, {"name", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}});
    t.call("cudaStreamSynchronize", "stream_sync", at + 9, at + 905, {{"stream", comm_stream}});
    t.range("step", at, at + 900);
  }
  return t.footer();
}

trace::ProcessTrace process(const TraceBuilder& t, std::string source) {
  return {std::move(source), t.raw()};
}

TEST(Processes, NamedByRankFromTheLaunchersVariablesElseByPid) {
  EXPECT_EQ(trace::process_name(ddp_rank(10, {{"RANK", "3"}, {"LOCAL_RANK", "1"}}, 1, 0).raw()), "rank3");
  EXPECT_EQ(trace::process_name(ddp_rank(10, {{"LOCAL_RANK", "1"}}, 1, 0).raw()), "rank1");
  EXPECT_EQ(trace::process_name(ddp_rank(10, {{"OMPI_COMM_WORLD_RANK", "5"}}, 1, 0).raw()), "rank5");
  EXPECT_EQ(trace::process_name(ddp_rank(10, {{"PMI_RANK", "6"}}, 1, 0).raw()), "rank6");
  // Not a rank: the pid names it.
  EXPECT_EQ(trace::process_name(ddp_rank(10, {{"RANK", "x1"}}, 1, 0).raw()), "pid10");
  EXPECT_EQ(trace::process_name(ddp_rank(11, nullptr, 1, 0).raw()), "pid11");
  EXPECT_EQ(trace::process_rank(ddp_rank(11, {{"RANK", "-1"}}, 1, 0).raw()), std::nullopt);
}

TEST(Processes, OrderedByRankThenPidAndSharedNamesMadeUnique) {
  std::vector<trace::ProcessTrace> traces;
  traces.push_back(process(ddp_rank(30, nullptr, 2, 0), "c.jsonl"));
  traces.push_back(process(ddp_rank(20, {{"RANK", "1"}}, 2, 0), "b.jsonl"));
  traces.push_back(process(ddp_rank(12, {{"RANK", "0"}}, 2, 0), "a2.jsonl"));
  traces.push_back(process(ddp_rank(11, {{"RANK", "0"}}, 2, 0), "a1.jsonl"));
  const std::vector<trace::TracedProcess> p = trace::capture_processes(std::move(traces));
  ASSERT_EQ(p.size(), 4U);
  EXPECT_EQ(p[0].name, "rank0.pid11");
  EXPECT_EQ(p[1].name, "rank0.pid12");
  EXPECT_EQ(p[2].name, "rank1");
  EXPECT_EQ(p[3].name, "pid30");
  EXPECT_EQ(p[3].source, "c.jsonl");
}

TEST(Processes, ATraceWithoutCudaActivityIsRefusedByName) {
  TraceBuilder empty(5);
  std::vector<trace::ProcessTrace> traces;
  traces.push_back(process(empty.footer(), "idle.jsonl"));
  EXPECT_EQ(message_of([&] { (void)trace::capture_processes(std::move(traces)); }),
            "idle.jsonl: holds no CUDA activity (no calls, no device work)");
}

TEST(Processes, JoinedOnTheSharedClockWithLanesPerProcessAndGpu) {
  std::vector<trace::ProcessTrace> traces;
  traces.push_back(process(ddp_rank(21, {{"RANK", "1"}}, 3, 5000.0), "b.jsonl"));
  traces.push_back(process(ddp_rank(20, {{"RANK", "0"}}, 3, 0.0), "a.jsonl"));
  const std::vector<trace::TracedProcess> p = trace::capture_processes(std::move(traces));
  const trace::JoinedRun job = trace::join_processes(p);
  ASSERT_EQ(job.offsets.size(), 2U);
  EXPECT_DOUBLE_EQ(job.offsets[0], 0.0);
  // Rank 1's first call came 5 ms after rank 0's.
  EXPECT_NEAR(job.offsets[1], 5.0, 1e-9);
  EXPECT_EQ(job.timeline.spans.size(),
            p[0].capture.timeline.spans.size() + p[1].capture.timeline.spans.size());
  EXPECT_EQ(job.timeline.device_count(), 2U);
  std::vector<std::string> names;
  for (const Stream& s : job.timeline.streams) names.push_back(s.name + "@" + std::to_string(s.device));
  EXPECT_EQ(names, (std::vector<std::string>{"rank0.stream 7@0", "rank0.stream 20@0", "rank1.stream 7@1",
                                             "rank1.stream 20@1"}));
  EXPECT_EQ(job.timeline.host_threads, (std::vector<std::string>{"rank0.host", "rank1.host"}));
  // Rank 1's first kernel: 10 us into its first step (at 100 us), 5 ms after rank 0's trace began.
  const Span* first = nullptr;
  for (const Span& s : job.timeline.spans)
    if (first == nullptr && s.kind == op_kind::kernel &&
        job.timeline.streams[s.stream].name == "rank1.stream 7")
      first = &s;
  ASSERT_NE(first, nullptr);
  EXPECT_NEAR(first->start, 5.110, 1e-9);
  EXPECT_GE(first->op, job.parts[1].first_op);
  EXPECT_THROW((void)trace::join_processes({}), invalid_input);
}

TEST(Communication, OverlapAndIdleOfTheStepsAsHtaCountsThem) {
  const trace::Capture run = ddp_rank(20, {{"RANK", "0"}}, 3, 0.0).capture();
  // The window of the steps: every op was issued in it.
  const trace::CommunicationUse use = trace::communication_use(run, 0.1, 3.1);
  EXPECT_EQ(use.communication_kernels, 3U);
  EXPECT_EQ(use.compute_kernels, 3U);
  EXPECT_NEAR(use.communication, 1.2, 1e-9);  // 3 x 400 us
  EXPECT_NEAR(use.compute, 1.8, 1e-9);        // 3 x 600 us
  EXPECT_NEAR(use.overlapped, 0.9, 1e-9);     // 3 x 300 us
  EXPECT_NEAR(*use.overlap_fraction(), 0.75, 1e-9);
  EXPECT_NEAR(use.span, 2.7,
              1e-9);  // the first kernel's start (110 us) to the last all-reduce's end (2810 us)
  EXPECT_NEAR(use.busy, 2.1, 1e-9);  // 3 x 700 us
  EXPECT_NEAR(use.idle(), 0.6, 1e-9);
  EXPECT_NEAR(use.idle_fraction(), 0.6 / 2.7, 1e-9);
  EXPECT_TRUE(use.shared_streams.empty());
  // Only what was issued in the window counts: the second step alone.
  const trace::CommunicationUse second = trace::communication_use(run, 1.1, 2.0);
  EXPECT_EQ(second.communication_kernels, 1U);
  EXPECT_NEAR(second.span, 0.7, 1e-9);
  EXPECT_FALSE(trace::communication_use(run, 5.0, 6.0).overlap_fraction().has_value());
}

TEST(Communication, KernelRolesByName) {
  EXPECT_TRUE(trace::is_communication_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(trace::is_communication_kernel("void ncclKernel_AllGather_RING_LL_Sum_int8_t"));
  EXPECT_FALSE(trace::is_communication_kernel("at::native::vectorized_elementwise_kernel"));
  EXPECT_FALSE(trace::is_communication_kernel("my_nccl_like_kernel"));
}

TEST(Communication, TheAuditReportsTheStepsAndFlagsCollectivesOnTheComputeStream) {
  const DeviceModel model = DeviceModel::load("h100");
  const trace::AuditReport good = trace::audit(ddp_rank(20, {{"RANK", "0"}}, 4, 0.0).capture(), model);
  ASSERT_TRUE(good.communication.has_value()) << trace::format_text(good);
  EXPECT_NEAR(*good.communication->overlap_fraction(), 0.75, 1e-9);
  for (const trace::AuditFinding& f : good.findings) EXPECT_NE(f.rule, "serialized-communication");

  const trace::AuditReport bad =
      trace::audit(ddp_rank(21, {{"RANK", "1"}}, 4, 0.0, /*serialized=*/true).capture(), model);
  ASSERT_TRUE(bad.communication.has_value());
  EXPECT_NEAR(*bad.communication->overlap_fraction(), 0.0, 1e-12);
  EXPECT_EQ(bad.communication->shared_streams, std::vector<std::string>{"stream 7"});
  const trace::AuditFinding* found = nullptr;
  for (const trace::AuditFinding& f : bad.findings)
    if (f.rule == "serialized-communication") found = &f;
  ASSERT_NE(found, nullptr) << trace::format_text(bad);
  EXPECT_EQ(found->level, check::severity::warning);
  EXPECT_EQ(found->count, 4U);
  ASSERT_TRUE(found->measured.has_value());
  EXPECT_NEAR(found->measured->time, 4 * 0.29, 1e-9);
  ASSERT_TRUE(found->predicted_saving.has_value());
  EXPECT_NEAR(*found->predicted_saving, 4 * 0.29, 1e-9);  // under 2.4 ms of compute
  EXPECT_NE(found->fix.find("stream of their own"), std::string::npos);
}

TEST(Communication, TheJobReportHasALinePerRankAndEachRanksReport) {
  const DeviceModel model = DeviceModel::load("h100");
  trace::JobAudit job;
  job.command = {"torchrun", "train.py"};
  job.processes.push_back(
      {"rank0", 0, 20, "a.jsonl", trace::audit(ddp_rank(20, {{"RANK", "0"}}, 4, 0.0).capture(), model)});
  job.processes.push_back({"rank1", 1, 21, "b.jsonl",
                           trace::audit(ddp_rank(21, {{"RANK", "1"}}, 4, 0.0, true).capture(), model)});
  const std::string text = trace::format_text(job);
  EXPECT_NE(text.find("2 processes used CUDA"), std::string::npos) << text;
  EXPECT_NE(text.find("rank0  collectives 1.6 ms (4 kernels), 75.0% overlapped with compute"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank1  collectives 1.16 ms (4 kernels), 0.0% overlapped"), std::string::npos) << text;
  EXPECT_NE(text.find("collectives on the compute stream ('stream 7')"), std::string::npos) << text;
  EXPECT_NE(text.find("== rank1 (pid 21, b.jsonl) =="), std::string::npos) << text;
  EXPECT_TRUE(job.fails(check::severity::warning));
  const nlohmann::json j = nlohmann::json::parse(trace::format_json(job));
  ASSERT_EQ(j["processes"].size(), 2U);
  EXPECT_EQ(j["processes"][0]["rank"], 0);
  EXPECT_NEAR(j["processes"][0]["report"]["communication"]["overlap_fraction"].get<double>(), 0.75, 1e-9);
  EXPECT_EQ(j["processes"][1]["report"]["communication"]["shared_streams"][0], "stream 7");
  EXPECT_TRUE(j["fails"].get<bool>());
}

}  // namespace
}  // namespace overlap
