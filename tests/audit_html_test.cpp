// `overlap audit --format html` on recorded traces of public programs (the
// corpus, no GPU needed): the measured timeline with the run's phases as
// regions, the verdict and the phases above it, the findings listed with
// their ops outlined, and a lane per host thread. The browser test
// (tests/browser/check_reports.py) checks how the script draws them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "html_page_data.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using overlap::test::CliResult;
using overlap::test::run_cli;

std::string corpus_trace(const std::string& id) {
  return std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/corpus/" + id + ".jsonl";
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

json data_block(const std::string& page) {
  return overlap::test::page_rows(overlap::test::page_data_block(page));
}

class AuditHtml : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("overlap-audit-html-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The page (written with -o) and the JSON report of one trace.
  std::pair<std::string, json> audit(const std::string& id) const {
    const std::string file = (dir_ / (id + ".html")).string();
    const CliResult html = run_cli({"audit", "--from", corpus_trace(id), "--format", "html", "-o", file});
    EXPECT_NE(html.code, 2) << html.err;
    EXPECT_TRUE(html.out.empty()) << "-o: the page goes to the file, not standard output";
    std::stringstream page;
    page << std::ifstream(file).rdbuf();
    const CliResult report = run_cli({"audit", "--from", corpus_trace(id), "--json"});
    EXPECT_EQ(report.code, html.code) << "the format does not change the exit code";
    return {page.str(), json::parse(report.out)};
  }

  fs::path dir_;
};

// simpleHyperQ (cuda-samples): 32 streams on 8 hardware queues.
TEST_F(AuditHtml, MeasuredTimelineWithPhasesVerdictAndFindings) {
  const auto [page, report] = audit("simpleHyperQ.static");
  // Self-contained: no network.
  EXPECT_FALSE(contains(page, "src=\"http"));
  EXPECT_FALSE(contains(page, "href=\"http"));
  EXPECT_FALSE(contains(page, "<script src"));
  // The verdict first, then the phases as format_text words them, above the findings and the chart.
  const auto verdict = page.find("<li>verdict: Bound by");
  const auto startup = page.find("<li>startup: ");
  const auto steady = page.find("<li>steady state: ");
  const auto findings = page.find("<h2>Findings</h2>");
  const auto chart = page.find("<svg id=\"gantt\"");
  ASSERT_NE(verdict, std::string::npos) << page.substr(0, 3000);
  EXPECT_LT(verdict, startup);
  EXPECT_LT(startup, steady);
  EXPECT_LT(steady, findings);
  EXPECT_LT(findings, chart);
  // The regions are the report's phases, on the measured timeline's axis.
  const json data = data_block(page);
  const json& phases = report.at("phases");
  const json& regions = data.at("regions");
  ASSERT_EQ(regions.size(), 3U) << regions;
  EXPECT_EQ(regions[0][0], "startup");
  EXPECT_EQ(regions[1][0], "steady state");
  EXPECT_EQ(regions[2][0], "teardown");
  EXPECT_NEAR(regions[0][2].get<double>(), phases.at("steady_start_ms").get<double>(), 1e-3);
  EXPECT_NEAR(regions[1][1].get<double>(), phases.at("steady_start_ms").get<double>(), 1e-3);
  EXPECT_NEAR(regions[1][2].get<double>(), phases.at("steady_end_ms").get<double>(), 1e-3);
  EXPECT_EQ(data.at("unit"), "ms");
  // Every finding listed, in the report's order, each with a group of ops to outline.
  const json& listed = report.at("findings");
  ASSERT_FALSE(listed.empty());
  ASSERT_EQ(data.at("highlight").size(), listed.size());
  for (std::size_t k = 0; k < listed.size(); ++k) {
    const std::string rule = listed[k].at("rule");
    const std::string level = listed[k].at("severity");
    EXPECT_TRUE(contains(page, "<li data-group=\"" + std::to_string(k) + "\"><span class=\"level-" + level +
                                   "\">" + level + " " + rule))
        << rule;
    // Its first op is outlined: op ids are the captured Program's, as the report's.
    const json& ops = listed[k].at("ops");
    if (!ops.empty()) {
      const json& group = data.at("highlight")[k];
      EXPECT_NE(std::find(group.begin(), group.end(), ops[0].at("id")), group.end()) << rule;
    }
  }
  EXPECT_TRUE(contains(page, "hardware-queue-sharing"));
  // The measured run: the trace's spans and the host thread's calls, not a simulation.
  EXPECT_FALSE(data.at("runs")[0].at("ops").empty());
  EXPECT_FALSE(data.at("runs")[0].at("host").empty());
  // The steady state's numbers are the verdict's: the whole run's table would contradict them.
  EXPECT_FALSE(contains(page, "<table class=\"summary\">"));
}

// simpleCallback (cuda-samples) runs its work from several host threads:
// each gets a lane of its own (the Timeline's host_threads), named as the
// report names it.
TEST_F(AuditHtml, EachHostThreadIsItsOwnLane) {
  const auto [page, report] = audit("simpleCallback.static");
  const json data = data_block(page);
  const json& threads = data.at("runs")[0].at("threads");
  ASSERT_GT(threads.size(), 1U) << threads;
  std::vector<bool> used(threads.size(), false);
  for (const json& h : data.at("runs")[0].at("host"))
    used.at(h.size() > 4 ? h.at(4).get<std::size_t>() : 0) = true;
  EXPECT_GT(std::count(used.begin(), used.end(), true), 1);
  for (const json& t : report.at("host_threads")) {
    const std::string name = t.at("name");
    EXPECT_NE(std::find(threads.begin(), threads.end(), name), threads.end()) << name;
    EXPECT_TRUE(contains(page, "<li>" + name + ": issuing ")) << name;
  }
}

// --format json is --json; an unknown format is bad input (exit 2) before anything runs.
TEST_F(AuditHtml, FormatOptionKeepsJsonAndRejectsUnknownFormats) {
  const std::string trace = corpus_trace("simpleHyperQ.static");
  const CliResult json_flag = run_cli({"audit", "--from", trace, "--json"});
  const CliResult json_format = run_cli({"audit", "--from", trace, "--format", "json"});
  EXPECT_EQ(json_flag.out, json_format.out);
  EXPECT_EQ(json_flag.code, json_format.code);
  const CliResult text = run_cli({"audit", "--from", trace, "--format", "text"});
  EXPECT_EQ(text.out, run_cli({"audit", "--from", trace}).out);
  const CliResult pdf = run_cli({"audit", "--from", trace, "--format", "pdf"});
  EXPECT_EQ(pdf.code, 2);
  EXPECT_TRUE(contains(pdf.err, "--format: unknown format 'pdf'")) << pdf.err;
}

}  // namespace
