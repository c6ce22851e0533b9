// One finding per pattern: races on inferred accesses are possible warnings,
// races repeated by a loop are one finding with their count, and no rule's
// findings bury another's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "overlap/check/check.hpp"

namespace {

using namespace overlap;

Access region(std::string buffer, access_mode mode, access_source source = access_source::declared) {
  return Access{std::move(buffer), 0, std::nullopt, mode, source};
}

// Kernels alternating between two streams, each writing `buffer`: every
// kernel on one stream races with every kernel on the other.
Program alternating(int kernels, access_source source) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  for (int i = 0; i < kernels; ++i) {
    p.kernel(i % 2 == 0 ? s1 : s2, 1.0);
    p.last().label = i % 2 == 0 ? "produce" : "consume";
    p.last().accesses = {region("buf", access_mode::write, source)};
  }
  return p;
}

TEST(CheckGrouping, RacesOnInferredAccessesArePossibleWarnings) {
  const check::Report report =
      check::check_program(alternating(2, access_source::inferred), DeviceModel::preset("unit"));
  ASSERT_EQ(report.findings.size(), 1u) << check::format_text(report);
  const check::Finding& f = report.findings.front();
  EXPECT_EQ(f.rule, "race");
  EXPECT_EQ(f.level, check::severity::warning);
  EXPECT_TRUE(f.possible);
  EXPECT_TRUE(f.race->inferred);
  EXPECT_NE(f.fix.find("inferred"), std::string::npos) << f.fix;
  EXPECT_NE(check::format_text(report).find("[possible]"), std::string::npos);
  EXPECT_FALSE(report.fails(check::severity::error));
}

TEST(CheckGrouping, MeasuredAccessesProveARaceLikeDeclaredOnes) {
  const check::Report report =
      check::check_program(alternating(2, access_source::measured), DeviceModel::preset("unit"));
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings.front().level, check::severity::error);
  EXPECT_FALSE(report.findings.front().possible);
}

// A pair racing on an inferred access and on exact ones is proven by the exact ones.
TEST(CheckGrouping, APairThatAlsoRacesOnExactBytesIsCertain) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  p.kernel(s1, 1.0);
  p.last().accesses = {region("a", access_mode::write, access_source::inferred),
                       region("b", access_mode::write)};
  p.kernel(s2, 1.0);
  p.last().accesses = {region("a", access_mode::read, access_source::inferred),
                       region("b", access_mode::read)};
  const check::RaceReport races = check::find_races(p);
  ASSERT_EQ(races.races.size(), 1u);
  EXPECT_FALSE(races.races.front().inferred);
  EXPECT_EQ(races.races.front().buffer, "b");
}

TEST(CheckGrouping, ALoopsRacesAreOneFindingWithTheirCount) {
  const check::Report report =
      check::check_program(alternating(10, access_source::declared), DeviceModel::preset("unit"));
  EXPECT_EQ(report.races, 25u);  // every s1 kernel with every s2 kernel
  // produce-then-consume and consume-then-produce: two patterns, the missing ordering differs.
  ASSERT_EQ(report.findings.size(), 2u) << check::format_text(report);
  std::size_t total = 0;
  for (const check::Finding& f : report.findings) {
    EXPECT_EQ(f.level, check::severity::error);
    EXPECT_GT(f.count, 1u);
    EXPECT_EQ(f.instances.size(), check::max_listed_instances);
    EXPECT_EQ(f.instances.front().ops.front().id, f.ops.front().id);
    EXPECT_EQ(f.streams, (std::vector<std::string>{"s1", "s2"}));
    total += f.count;
  }
  EXPECT_EQ(total, 25u);
  const check::Finding& first = report.findings.front();
  EXPECT_NE(first.message.find("kernel 'produce' and kernel 'consume' race"), std::string::npos)
      << first.message;
  EXPECT_NE(check::format_text(report).find("(×"), std::string::npos) << check::format_text(report);
  const nlohmann::json j = nlohmann::json::parse(check::format_json(report));
  EXPECT_EQ(j.at("races"), 25);
  EXPECT_EQ(j.at("findings").at(0).at("count"), first.count);
  EXPECT_EQ(j.at("findings").at(0).at("instances").size(), check::max_listed_instances);
  EXPECT_EQ(j.at("findings").at(0).at("certainty"), "certain");
}

// Thirty differently labelled pairs race: the report still fits a screen.
TEST(CheckGrouping, ManyPatternsMergeUntilTheReportFits) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  for (int i = 0; i < 30; ++i) {
    const std::string buffer = "buf" + std::to_string(i);
    p.kernel(s1, 1.0);
    p.last().label = "write" + std::to_string(i);
    p.last().accesses = {region(buffer, access_mode::write)};
    p.kernel(s2, 1.0);
    p.last().label = "read" + std::to_string(i);
    p.last().accesses = {region(buffer, access_mode::read)};
  }
  const check::Report report = check::check_program(p, DeviceModel::preset("unit"));
  EXPECT_EQ(report.races, 30u);
  ASSERT_LE(report.findings.size(), 20u);
  std::size_t total = 0;
  for (const check::Finding& f : report.findings) total += f.count;
  EXPECT_EQ(total, 30u);
}

TEST(CheckGrouping, RaceCountingStopsWithoutHidingTraps) {
  // Races between kernels, and a wait on an event never recorded.
  Program p = alternating(40, access_source::inferred);
  const auto e = p.add_event("never");
  p.wait(0, e);
  check::CheckOptions options;
  options.max_races = 10;
  const check::Report report = check::check_program(p, DeviceModel::preset("unit"), options);
  EXPECT_TRUE(report.races_truncated);
  EXPECT_EQ(report.races, 10u);
  bool trap = false;
  for (const check::Finding& f : report.findings) trap = trap || f.rule == "unrecorded-event";
  EXPECT_TRUE(trap) << check::format_text(report);
}

TEST(CheckGrouping, ATrapFiredInALoopIsOneFinding) {
  Program p;
  const auto s = p.add_stream("s");
  const auto e = p.add_event("never");
  for (int i = 0; i < 30; ++i) {
    p.kernel(s, 1.0);
    p.wait(s, e);
  }
  const check::Report report = check::check_program(p, DeviceModel::preset("unit"));
  ASSERT_EQ(report.findings.size(), 1u) << check::format_text(report);
  const check::Finding& f = report.findings.front();
  EXPECT_EQ(f.rule, "unrecorded-event");
  EXPECT_EQ(f.count, 30u);
  EXPECT_EQ(f.instances.size(), check::max_listed_instances);
  EXPECT_NE(f.message.find("30 times"), std::string::npos) << f.message;
}

}  // namespace
