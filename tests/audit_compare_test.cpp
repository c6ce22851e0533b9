// `overlap audit --compare BEFORE AFTER`: two audits of one app, before and
// after its fix, on the recorded traces of the planted apps and their
// repaired versions (tests/fixtures/traces/*.repaired.jsonl).
#include "overlap/trace/audit_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"
#include "message_of.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fixture(const std::string& name) {
  return std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/" + name;
}

trace::AuditReport audit_of(const std::string& name) {
  return trace::audit(trace::capture(trace::load_trace(fixture(name))), DeviceModel::load("h100"));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(AuditCompare, APinnedCopyResolvesThePageableCopyAndShortensTheSteadyState) {
  const trace::AuditComparison c =
      trace::compare(trace::summary_of(audit_of("pageable_copy.jsonl"), "before"),
                     trace::summary_of(audit_of("pageable_copy.repaired.jsonl"), "after"));
  ASSERT_EQ(c.resolved.size(), 1U);
  EXPECT_EQ(c.resolved[0].rule, "pageable-async-copy");
  EXPECT_EQ(c.resolved[0].after, 0U);
  EXPECT_TRUE(c.added.empty());
  EXPECT_FALSE(c.adds(check::severity::info));
  // Measured on the H100: 62.4 ms of staged copies became 6.2 ms.
  EXPECT_GT(c.speedup(), 5.0);
  EXPECT_EQ(c.before.bound, "host issue");
  EXPECT_EQ(c.after.bound, "copy engines");
  // Each engine's idle time is the steady state less its busy time.
  ASSERT_FALSE(c.engines.empty());
  for (const trace::EngineChange& e : c.engines) {
    EXPECT_NEAR(e.idle_before + e.busy_before, c.before.steady_ms, 1e-9) << e.engine;
    EXPECT_NEAR(e.idle_after + e.busy_after, c.after.steady_ms, 1e-9) << e.engine;
  }
  EXPECT_TRUE(contains(trace::format_text(c, check::severity::warning),
                       "1 resolved, 0 new, 0 kept (failing on new findings at warning and above: pass)"));
}

TEST(AuditCompare, TheOtherWayRoundTheFindingIsNewAndFails) {
  const trace::AuditComparison c =
      trace::compare(trace::summary_of(audit_of("device_sync.repaired.jsonl"), "before"),
                     trace::summary_of(audit_of("device_sync.jsonl"), "after"));
  ASSERT_FALSE(c.added.empty());
  EXPECT_TRUE(std::any_of(c.added.begin(), c.added.end(),
                          [](const trace::FindingChange& f) { return f.rule == "device-synchronize"; }));
  EXPECT_TRUE(c.adds(check::severity::warning));
  const json j = json::parse(trace::format_json(c, check::severity::warning));
  EXPECT_TRUE(j["fails"].get<bool>());
  EXPECT_EQ(j["new"].size(), c.added.size());
  EXPECT_EQ(j["new"][0]["before"], 0);
}

TEST(AuditCompare, ASavedReportSummarizesAsTheReportItself) {
  const trace::AuditReport r = audit_of("race_copy.jsonl");
  const std::string saved = trace::format_json(r);
  EXPECT_TRUE(trace::looks_like_audit_json(saved));
  const trace::AuditSummary a = trace::summary_of(r, "x");
  const trace::AuditSummary b = trace::summary_from_json(saved, "x");
  EXPECT_EQ(a.steady_ms, b.steady_ms);
  EXPECT_EQ(a.bound, b.bound);
  EXPECT_EQ(a.verdict, b.verdict);
  ASSERT_EQ(a.engines.size(), b.engines.size());
  for (std::size_t i = 0; i < a.engines.size(); ++i) {
    EXPECT_EQ(a.engines[i].engine, b.engines[i].engine);
    EXPECT_EQ(a.engines[i].busy_ms, b.engines[i].busy_ms);
  }
  ASSERT_EQ(a.findings.size(), b.findings.size());
  ASSERT_FALSE(a.findings.empty());
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    EXPECT_EQ(a.findings[i].rule, b.findings[i].rule);
    EXPECT_EQ(a.findings[i].level, b.findings[i].level);
    EXPECT_EQ(a.findings[i].count, b.findings[i].count);
    EXPECT_EQ(a.findings[i].streams, b.findings[i].streams);
  }
  // Compared with itself: everything kept, nothing resolved or new.
  const trace::AuditComparison same = trace::compare(a, b);
  EXPECT_TRUE(same.resolved.empty());
  EXPECT_TRUE(same.added.empty());
  EXPECT_EQ(same.kept.size(), a.findings.size());
  EXPECT_DOUBLE_EQ(same.speedup(), 1.0);
}

TEST(AuditCompare, ABadReportIsRefusedNamingTheField) {
  const auto error = [](const std::string& text) {
    return testing::message_of([&] { (void)trace::summary_from_json(text, "r.json"); });
  };
  EXPECT_EQ(error("{"), "r.json: not valid JSON (expected a report of 'overlap audit --json')");
  EXPECT_EQ(error(R"({"findings": []})"), "r.json: verdict: is missing");
  EXPECT_EQ(error(R"({"findings": [], "verdict": {"steady_ms": "5"}})"),
            "r.json: verdict.steady_ms: has the wrong type (string, expected a number)");
  const std::string base = R"({"verdict": {"steady_ms": 5, "bound": "compute", "text": "t"},
                              "metrics": {"engines": []}, "findings": )";
  EXPECT_EQ(
      error(base + R"([{"rule": "race", "severity": "fatal", "count": 1, "streams": [], "message": ""}]})"),
      "r.json: findings[0].severity: 'fatal' is not a severity (expected info, warning or error)");
  EXPECT_EQ(
      error(base + R"([{"rule": "race", "severity": "error", "count": -1, "streams": [], "message": ""}]})"),
      "r.json: findings[0].count: has the wrong type (number, expected a count)");
}

TEST(AuditCompare, TracesAndReportsAreToldApart) {
  EXPECT_FALSE(trace::looks_like_audit_json(R"({"t":"header","version":2})"));
  EXPECT_FALSE(trace::looks_like_audit_json(R"({"schemaVersion": 1, "traceEvents": []})"));
  EXPECT_FALSE(trace::looks_like_audit_json("not json"));
}

TEST(AuditCompareCli, ComparesTracesAndSavedReportsInEachFormat) {
  const fs::path dir = fs::temp_directory_path() / "overlap_audit_compare_test";
  fs::create_directories(dir);
  const std::string saved = (dir / "before.json").string();
  ASSERT_EQ(test::run_cli({"audit", "--from", fixture("pageable_copy.jsonl"), "--json", "-o", saved}).code,
            1);

  const auto text = test::run_cli({"audit", "--compare", saved, fixture("pageable_copy.repaired.jsonl")});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "resolved (1):")) << text.out;
  EXPECT_TRUE(contains(text.out, "warning pageable-async-copy")) << text.out;

  const auto back =
      test::run_cli({"audit", "--compare", fixture("pageable_copy.repaired.jsonl"), saved, "--json"});
  EXPECT_EQ(back.code, 1);  // the pageable copy is new: a warning
  const json j = json::parse(back.out);
  EXPECT_EQ(j["new"][0]["rule"], "pageable-async-copy");
  EXPECT_EQ(j["before"]["source"], "pageable_copy.repaired.jsonl");

  const auto page = test::run_cli({"audit", "--compare", saved, fixture("pageable_copy.repaired.jsonl"),
                                   "--format", "html", "--fail-on", "error"});
  EXPECT_EQ(page.code, 0);
  EXPECT_TRUE(contains(page.out, "<h2>Resolved (1)</h2>")) << page.out;
  EXPECT_TRUE(contains(page.out, "<td>pageable-async-copy</td>")) << page.out;

  const auto both = test::run_cli({"audit", "--compare", saved, saved, "--from", saved});
  EXPECT_EQ(both.code, 2);
  EXPECT_TRUE(contains(both.err, "--compare: give two traces or reports, not an app or --from as well"))
      << both.err;
  const auto one = test::run_cli({"audit", "--compare", saved});
  EXPECT_EQ(one.code, 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace overlap
