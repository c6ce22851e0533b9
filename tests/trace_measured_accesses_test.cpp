// `--accesses measured` on the CPU: the measuring run's file joined to a
// traced run (by launch order per kernel, allocation order per size), the
// `accesses` records written and read back, and what measured accesses do
// to races: proven where the bytes meet, refuted where they do not, and
// set aside where the join put them in a buffer no parameter points into.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/measured_run.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using nlohmann::json;
using test::TraceBuilder;

// The traced run: one 1 MiB buffer y (and x, z), kernel1 writes y on stream
// 20, kernel2 reads y on stream 21, nothing ordering them. Both take y's
// start as their pointer, so inference says both touch all of y.
constexpr std::uint64_t x = 0x7000'0000'0000;
constexpr std::uint64_t y = 0x7000'0010'0000;
constexpr std::uint64_t z = 0x7000'0020'0000;
constexpr std::uint64_t mib = 1 << 20;

TraceBuilder two_kernels(std::vector<std::uint64_t> second_ptrs = {y, z}) {
  TraceBuilder t;
  t.stream(20, "non_blocking").stream(21, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", x}, {"bytes", mib}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", y}, {"bytes", mib}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 20, 30, {{"ptr", z}, {"bytes", mib}, {"memory", "device"}});
  t.call("cudaLaunchKernel", "launch", 100, 103,
         {{"stream", 20}, {"kernel", "_Z7kernel1PKfPf"}, {"ptrs", {x, y}}});
  t.work("kernel", 200, 400, {{"stream", 20}});
  t.call("cudaLaunchKernel", "launch", 104, 107,
         {{"stream", 21}, {"kernel", "_Z7kernel2PKfPf"}, {"ptrs", second_ptrs}});
  t.work("kernel", 250, 450, {{"stream", 21}});
  t.call("cudaDeviceSynchronize", "device_sync", 110, 500);
  return t.footer();
}

// Where the measuring run's x, y and z were (its own allocations came first).
constexpr std::uint64_t base = 0x7f00'0000'0000;

// The measuring run's file up to its launches: its header and x, y, z.
std::vector<json> measuring_run_allocations() {
  return {{{"t", "measure"}, {"version", 1}, {"pid", 9}},
          {{"t", "alloc"}, {"seq", 0}, {"ptr", base}, {"bytes", mib}, {"kind", "device"}},
          {{"t", "alloc"}, {"seq", 1}, {"ptr", base + mib}, {"bytes", mib}, {"kind", "device"}},
          {{"t", "alloc"}, {"seq", 2}, {"ptr", base + 2 * mib}, {"bytes", mib}, {"kind", "device"}}};
}

// The measuring run, at other addresses (its own allocations came first):
// kernel1 wrote the first half of y, kernel2 read `read_offset` onwards.
std::string measuring_file(std::uint64_t read_offset, std::uint64_t read_bytes) {
  std::vector<json> r = measuring_run_allocations();
  r.insert(r.end(), {// Written when read back: after the launch that follows it, as the tool does.
                     {{"t", "launch"},
                      {"seq", 4},
                      {"kernel", "_Z7kernel2PKfPf"},
                      {"reads", {base + mib + read_offset, read_bytes}},
                      {"writes", {base + 2 * mib, mib / 2}}},
                     {{"t", "launch"},
                      {"seq", 3},
                      {"kernel", "_Z7kernel1PKfPf"},
                      {"reads", {base, mib / 2}},
                      {"writes", {base + mib, mib / 2}}},
                     {{"t", "end"}, {"launches", 2}}});
  std::string text;
  for (const json& j : r) text += j.dump() + "\n";
  return text;
}

trace::RawTrace joined(const TraceBuilder& t, const std::string& file, trace::MeasuredJoin* join = nullptr) {
  trace::RawTrace raw = t.raw();
  std::istringstream in(file);
  const trace::MeasuredJoin j = trace::join_measured_run(raw, in, "accesses.9.jsonl");
  if (join != nullptr) *join = j;
  return raw;
}

std::vector<const trace::AuditFinding*> races(const trace::AuditReport& r) {
  std::vector<const trace::AuditFinding*> out;
  for (const trace::AuditFinding& f : r.findings) {
    if (f.rule == "race") out.push_back(&f);
  }
  return out;
}

trace::AuditReport audit(const trace::RawTrace& raw) {
  return trace::audit(trace::capture(raw), DeviceModel::preset("h100"));
}

TEST(MeasuredRun, JoinsLaunchesByOrderAndAddressesByAllocation) {
  trace::MeasuredJoin join;
  const TraceBuilder t = two_kernels();
  const trace::RawTrace raw = joined(t, measuring_file(0, mib / 2), &join);
  EXPECT_EQ(join.measured_launches, 2U);
  EXPECT_EQ(join.traced_launches, 2U);
  EXPECT_EQ(join.joined, 2U);
  EXPECT_EQ(join.outside, 0U);
  ASSERT_EQ(raw.measured.size(), 2U);
  const trace::MeasuredAccesses& first = raw.measured.begin()->second;
  ASSERT_EQ(first.reads.size(), 1U);
  EXPECT_EQ(first.reads[0], std::make_pair(x, mib / 2));
  ASSERT_EQ(first.writes.size(), 1U);
  EXPECT_EQ(first.writes[0], std::make_pair(y, mib / 2));
  EXPECT_TRUE(first.exact);
}

// A caching allocator may hand the same tensor another block in each run:
// the ranges follow the kernel's arguments, not the allocation order.
TEST(MeasuredRun, RangesFollowTheLaunchArgumentsWhereAllocationsDiffer) {
  // In the measuring run kernel1's y is the third allocation, z the second.
  std::string file;
  for (const json& j : std::vector<json>{
           {{"t", "measure"}, {"version", 1}},
           {{"t", "alloc"}, {"seq", 0}, {"ptr", base}, {"bytes", mib}, {"kind", "device"}},
           {{"t", "alloc"}, {"seq", 1}, {"ptr", base + mib}, {"bytes", mib}, {"kind", "device"}},
           {{"t", "alloc"}, {"seq", 2}, {"ptr", base + 2 * mib}, {"bytes", mib}, {"kind", "device"}},
           {{"t", "launch"},
            {"seq", 3},
            {"kernel", "_Z7kernel1PKfPf"},
            {"ptrs", {base, base + 2 * mib}},
            {"reads", {base + 64, 128}},
            {"writes", {base + 2 * mib + 4096, 100}}}})
    file += j.dump() + "\n";
  const trace::RawTrace raw = joined(two_kernels(), file);
  ASSERT_EQ(raw.measured.size(), 1U);
  const trace::MeasuredAccesses& m = raw.measured.begin()->second;
  ASSERT_EQ(m.writes.size(), 1U);
  EXPECT_EQ(m.writes[0], std::make_pair(y + 4096, std::uint64_t{100}));
  ASSERT_EQ(m.reads.size(), 1U);
  EXPECT_EQ(m.reads[0], std::make_pair(x + 64, std::uint64_t{128}));
}

TEST(MeasuredRun, AccessesRecordsRoundTripThroughTheRawTrace) {
  const TraceBuilder t = two_kernels();
  const trace::RawTrace raw = joined(t, measuring_file(0, mib / 2));
  const std::string records = trace::measured_records(raw);
  std::istringstream in(t.text() + records);
  const trace::RawTrace again = trace::read_trace(in, "kept.jsonl");
  ASSERT_EQ(again.measured.size(), raw.measured.size());
  for (const auto& [corr, m] : raw.measured) {
    EXPECT_EQ(again.measured.at(corr).reads, m.reads);
    EXPECT_EQ(again.measured.at(corr).writes, m.writes);
  }
}

TEST(MeasuredRun, OverlappingBytesAreAProvenRace) {
  // kernel2 read y from its first quarter: inside what kernel1 wrote.
  const trace::AuditReport report = audit(joined(two_kernels(), measuring_file(mib / 4, mib / 2)));
  const auto r = races(report);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(r[0]->level, check::severity::error);
  EXPECT_EQ(r[0]->certainty, "certain");
}

TEST(MeasuredRun, DisjointBytesRefuteTheInferredRace) {
  // Inferred, both touch all of y: a possible race.
  const trace::AuditReport report = audit(two_kernels().raw());
  const auto inferred = races(report);
  ASSERT_EQ(inferred.size(), 1U);
  EXPECT_EQ(inferred[0]->certainty, "possible");
  // Measured, kernel2 read only y's second half, which kernel1 never wrote.
  EXPECT_TRUE(races(audit(joined(two_kernels(), measuring_file(mib / 2, mib / 2)))).empty());
}

TEST(MeasuredRun, RangesInBuffersNoParameterPointsIntoKeepTheInference) {
  // kernel2 is given x, not y, in the traced run: the join's y is not its
  // buffer, so the join went wrong for it and its inferred accesses stay.
  const trace::RawTrace raw = joined(two_kernels({x, z}), measuring_file(mib / 4, mib / 2));
  const trace::Capture run = trace::capture(raw);
  for (const Op& op : run.program.ops()) {
    if (op.kind != op_kind::kernel || op.label != "kernel2") continue;
    for (const Access& a : op.accesses) EXPECT_EQ(a.source, access_source::inferred);
  }
}

TEST(MeasuredRun, MalformedFileNamesItsLine) {
  trace::RawTrace raw = two_kernels().raw();
  std::istringstream in(R"({"t":"measure"})"
                        "\n"
                        R"({"t":"launch","seq":1,"reads":[1,2,3]})"
                        "\n"
                        R"({"t":"end"})"
                        "\n");
  try {
    (void)trace::join_measured_run(raw, in, "accesses.9.jsonl");
    FAIL() << "no error";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("accesses.9.jsonl:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reads"), std::string::npos) << e.what();
  }
  // A field of the wrong type, and nesting no record has, are refused alike.
  for (const std::string bad : {R"({"t":"alloc","seq":0,"ptr":4096,"bytes":64,"kind":7})",
                                R"({"t":"launch","seq":0,"kernel":"k","lost":"many"})",
                                R"({"t":"launch","seq":0,"kernel":"k","graph":"sometimes"})",
                                R"({"t":"launch","seq":0,"reads":[[[[[[1]]]]]]})"}) {
    std::istringstream file(R"({"t":"measure"})"
                            "\n" +
                            bad +
                            "\n"
                            R"({"t":"end"})"
                            "\n");
    EXPECT_THROW((void)trace::join_measured_run(raw, file, "accesses.9.jsonl"), invalid_input) << bad;
  }
}

// A graph built by hand with kernel1 (node 1) and kernel2 (node 2) and no
// edge between them, launched once on stream 20; kernel2 ran on the
// driver's stream 30 beside kernel1. Inferred from their pointers, both
// touch all of y: a possible race.
TraceBuilder graph_of_two_kernels() {
  TraceBuilder t;
  t.stream(20, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", x}, {"bytes", mib}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", y}, {"bytes", mib}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 20, 30, {{"ptr", z}, {"bytes", mib}, {"memory", "device"}});
  t.call("cudaGraphAddKernelNode", "other", 31, 32);
  t.line({{"t", "graph_node"},
          {"node", 1},
          {"corr", t.last_corr()},
          {"kind", "kernel"},
          {"kernel", "_Z7kernel1PKfPf"},
          {"ptrs", {x, y}}});
  t.call("cudaGraphAddKernelNode", "other", 33, 34);
  t.line({{"t", "graph_node"},
          {"node", 2},
          {"corr", t.last_corr()},
          {"kind", "kernel"},
          {"kernel", "_Z7kernel2PKfPf"},
          {"ptrs", {y, z}}});
  t.call("cudaGraphInstantiate", "other", 35, 40);
  t.line({{"t", "graph"},
          {"exec", 9},
          {"graph", 8},
          {"nodes", {1, 2}},
          {"types", {0, 0}},
          {"parents", {0, 0}},
          {"edges", json::array()}});
  t.line({{"t", "graph_clone"}, {"node", 101}, {"of", 1}});
  t.line({{"t", "graph_clone"}, {"node", 102}, {"of", 2}});
  t.call("cudaGraphLaunch", "other", 100, 110);
  t.work("kernel", 200, 400, {{"stream", 20}, {"name", "_Z7kernel1PKfPf"}, {"node", 101}});
  t.work("kernel", 250, 450, {{"stream", 30}, {"name", "_Z7kernel2PKfPf"}, {"node", 102}});
  t.call("cudaDeviceSynchronize", "device_sync", 111, 500);
  return t.footer();
}

// The measuring run's file for that graph, at other addresses: its kernel
// nodes' launches (with the arguments the nodes were made with), kernel1
// writing the first half of y, kernel2 reading half of y from
// `read_offset`; `kernel2_graph` is how kernel2's record says it was a
// graph node ("measured", or "shared" / "unseen": not measured).
std::string graph_measuring_file(std::uint64_t read_offset, const char* kernel2_graph = "measured") {
  std::vector<json> r = measuring_run_allocations();
  r.insert(r.end(), {{{"t", "launch"},
                      {"seq", 3},
                      {"kernel", "_Z7kernel1PKfPf"},
                      {"reads", {base, mib / 2}},
                      {"writes", {base + mib, mib / 2}},
                      {"ptrs", {base, base + mib}},
                      {"graph", "measured"}},
                     {{"t", "launch"},
                      {"seq", 4},
                      {"kernel", "_Z7kernel2PKfPf"},
                      {"reads", {base + mib + read_offset, mib / 2}},
                      {"writes", {base + 2 * mib, mib / 2}},
                      {"ptrs", {base + mib, base + 2 * mib}},
                      {"graph", kernel2_graph}},
                     {{"t", "end"}, {"launches", 2}}});
  std::string text;
  for (const json& j : r) text += j.dump() + "\n";
  return text;
}

TEST(MeasuredRun, AGraphsKernelNodesAreMeasuredAndTheirRaceDecided) {
  const TraceBuilder t = graph_of_two_kernels();
  // Inferred: a possible race inside the graph.
  const trace::AuditReport inferred = audit(t.raw());
  ASSERT_EQ(races(inferred).size(), 1U);
  EXPECT_EQ(races(inferred)[0]->level, check::severity::warning);

  // Measured: kernel2 read the half of y kernel1 did not write: no race.
  trace::MeasuredJoin join;
  const trace::RawTrace apart = joined(t, graph_measuring_file(mib / 2), &join);
  EXPECT_EQ(join.traced_launches, 2U);
  EXPECT_EQ(join.joined, 2U);
  EXPECT_EQ(apart.measured_nodes.size(), 2U);
  EXPECT_TRUE(races(audit(apart)).empty());

  // Measured: kernel2 read the half kernel1 wrote: a certain race.
  const trace::AuditReport proven = audit(joined(t, graph_measuring_file(0)));
  ASSERT_EQ(races(proven).size(), 1U);
  EXPECT_EQ(races(proven)[0]->level, check::severity::error);

  // The raw trace keeps them as `accesses` records with their node.
  const std::string records = trace::measured_records(apart);
  EXPECT_NE(records.find("\"node\":101"), std::string::npos) << records;
  TraceBuilder again = graph_of_two_kernels();
  std::istringstream lines(records);
  for (std::string line; std::getline(lines, line);) again.line(json::parse(line));
  EXPECT_EQ(again.raw().measured_nodes.size(), 2U);
}

// "shared": not told apart from another node of its launch; "unseen": its
// grid never found its table. Either way its record's (empty) intervals are
// not taken for "touched nothing".
class UnmeasuredGraphNode : public testing::TestWithParam<const char*> {};

TEST_P(UnmeasuredGraphNode, KeepsItsInference) {
  trace::MeasuredJoin join;
  const trace::RawTrace raw =
      joined(graph_of_two_kernels(), graph_measuring_file(mib / 2, GetParam()), &join);
  EXPECT_EQ(join.joined, 1U);  // kernel1 only; kernel2's slot still counted
  EXPECT_EQ(raw.measured_nodes.size(), 1U);
  const trace::AuditReport r = audit(raw);
  ASSERT_EQ(races(r).size(), 1U);  // kernel2 keeps its inferred reach over all of y
  EXPECT_EQ(races(r)[0]->level, check::severity::warning);
}

INSTANTIATE_TEST_SUITE_P(MeasuredRun, UnmeasuredGraphNode, testing::Values("shared", "unseen"));

TEST(MeasuredRun, AGraphNodeOfAnUnknownStateIsBadInput) {
  EXPECT_THROW((void)joined(graph_of_two_kernels(), graph_measuring_file(mib / 2, "partly")), invalid_input);
}

}  // namespace
}  // namespace overlap
