// Traces recorded on an H100 (NVIDIA H100 80GB HBM3, driver 580, CUDA 13.0,
// 2026-11-23) by `overlap audit --raw` from the apps in tests/apps, read back
// on the CPU: each planted app gives exactly its finding, each repaired twin
// and the clean pipeline none, and the measured timelines hold what ran.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

trace::RawTrace fixture(const std::string& name) {
  return test::recorded_trace(name);
}

trace::AuditReport audit_of(const std::string& name) {
  return trace::audit(trace::capture(fixture(name)), DeviceModel::preset("h100"));
}

std::set<std::string> rules_of(const trace::AuditReport& r) {
  std::set<std::string> rules;
  for (const trace::AuditFinding& f : r.findings) rules.insert(f.rule);
  return rules;
}

struct Expected {
  const char* app;
  const char* rule;  ///< empty: no finding
};

class RecordedApp : public testing::TestWithParam<Expected> {};

TEST_P(RecordedApp, GivesExactlyItsFindings) {
  const Expected e = GetParam();
  const trace::AuditReport r = audit_of(e.app);
  const std::set<std::string> expected =
      *e.rule == '\0' ? std::set<std::string>{} : std::set<std::string>{e.rule};
  EXPECT_EQ(rules_of(r), expected) << trace::format_text(r);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.gpu, "NVIDIA H100 80GB HBM3");
}

INSTANTIATE_TEST_SUITE_P(
    H100, RecordedApp,
    testing::Values(Expected{"race_kernels", "race"}, Expected{"race_kernels.repaired", ""},
                    Expected{"race_copy", "race"}, Expected{"race_copy.repaired", ""},
                    Expected{"copy_serialization", "copy-engine-serialization"},
                    Expected{"copy_serialization.repaired", ""},
                    Expected{"device_sync", "device-synchronize"}, Expected{"device_sync.repaired", ""},
                    Expected{"pageable_copy", "pageable-async-copy"}, Expected{"pageable_copy.repaired", ""},
                    Expected{"clean_pipeline", ""}, Expected{"forker", ""}),
    [](const testing::TestParamInfo<Expected>& param) {
      std::string name = param.param.app;
      for (char& c : name) c = c == '.' ? '_' : c;
      return name;
    });

TEST(RecordedTraces, RacesNameBothOps) {
  const trace::AuditReport kernels = audit_of("race_kernels");
  ASSERT_FALSE(kernels.findings.empty());
  const trace::AuditFinding& k = kernels.findings.front();
  EXPECT_EQ(k.certainty, "possible");
  ASSERT_EQ(k.ops.size(), 2U);
  EXPECT_EQ(k.ops[0].label, "kernel1");
  EXPECT_EQ(k.ops[1].label, "kernel2");

  const trace::AuditReport copy = audit_of("race_copy");
  for (const trace::AuditFinding& f : copy.findings) {
    ASSERT_EQ(f.ops.size(), 2U);
    EXPECT_EQ(f.ops[0].api, "cudaMemcpyAsync");
    EXPECT_EQ(f.ops[0].label, "H2D");
    EXPECT_EQ(f.ops[1].label, "scale_kernel");
  }
}

TEST(RecordedTraces, PageableCopiesAreNamedWithTheirCaller) {
  const trace::AuditReport r = audit_of("pageable_copy");
  ASSERT_EQ(r.findings.size(), 1U);
  const trace::AuditFinding& f = r.findings.front();
  EXPECT_EQ(f.ops.front().api, "cudaMemcpyAsync");
  EXPECT_FALSE(f.ops.front().caller.empty());
  ASSERT_TRUE(f.measured.has_value());
  ASSERT_TRUE(f.predicted_saving.has_value());
  EXPECT_GT(f.measured->time, 10.0);     // the host sat blocked tens of ms
  EXPECT_GT(*f.predicted_saving, 10.0);  // and pinned memory gives most of it back
}

TEST(RecordedTraces, TheCleanPipelineOverlapsAllThreeEngines) {
  const trace::Capture run = trace::capture(fixture("clean_pipeline"));
  const Metrics m = compute_metrics(run.timeline);
  EXPECT_GT(m.multi_engine_busy_fraction, 0.0);
  bool overlapped = false;
  for (const Span& up : run.timeline.spans) {
    if (up.unit != engine::h2d_copy) continue;
    for (const Span& other : run.timeline.spans) {
      if ((other.unit == engine::d2h_copy || other.unit == engine::compute) && other.start < up.end &&
          up.start < other.end)
        overlapped = true;
    }
  }
  EXPECT_TRUE(overlapped);
  std::set<stream_id> streams;
  for (const Span& s : run.timeline.spans) streams.insert(s.stream);
  EXPECT_GE(streams.size(), 4U);
}

TEST(RecordedTraces, ASignalEndsTheTraceWithItsFooter) {
  const trace::RawTrace raw = fixture("sleeper");
  EXPECT_TRUE(raw.complete);
  EXPECT_EQ(raw.end_reason, "signal 15");
}

TEST(RecordedTraces, ACrashBeforeAnyRecordIsNoCudaActivity) {
  const trace::RawTrace raw = fixture("crash");
  EXPECT_FALSE(raw.complete);
  EXPECT_TRUE(raw.calls.empty());
  EXPECT_THROW((void)trace::capture(raw), invalid_input);
}

}  // namespace
}  // namespace overlap
