// The HTML report on seed 004: one page with no external resources, the
// summary numbers, and a data block holding every op where the simulator
// put it (the bars are drawn from it; the browser test checks the drawing).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "html_page_data.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"

namespace overlap::io {
namespace {

using nlohmann::json;

Timeline seed004() {
  const Spec spec = load_spec(std::filesystem::path(OVERLAP_SOURCE_DIR) / "examples" / "seed004.yaml");
  return sim::simulate(spec.program, DeviceModel::load(spec.device.value_or("unit")));
}

/// The page's data, its runs' ops and host spans as rows (html_page_data.hpp).
json data_block(const std::string& page) {
  return test::page_rows(test::page_data_block(page));
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(HtmlReport, Seed004HasTheSummaryAndEveryOpWhereTheSimulatorPutIt) {
  const Timeline t = seed004();
  const std::string page = to_html(t);
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(contains(page, "<tr><th>Total time</th><td>4 units</td></tr>")) << page.substr(0, 3000);
  EXPECT_TRUE(contains(page, "<tr><th>Speedup</th><td>1.50x</td></tr>"));
  EXPECT_TRUE(contains(page, "<th>Sequential time</th><td>6 units</td>"));
  EXPECT_TRUE(contains(page, "<tr><th>Host blocked</th><td>4 units in synchronous calls</td></tr>"));
  EXPECT_TRUE(contains(page, "No engine was left idle while work waited."));

  const json data = data_block(page);
  EXPECT_EQ(data.at("unit"), "units");
  EXPECT_EQ(data.at("total"), 4.0);
  ASSERT_EQ(data.at("streams").size(), t.streams.size());
  std::size_t work = 0;
  for (const Span& s : t.spans) work += is_work_op(s.kind) ? 1 : 0;
  EXPECT_EQ(work, 6U);  // H2D, kernel, D2H of A and B
  ASSERT_EQ(data.at("runs").size(), 1U);
  const json& ops = data.at("runs")[0].at("ops");
  ASSERT_EQ(ops.size(), t.spans.size());
  for (std::size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    const json& o = ops[i];
    const std::string label = data.at("labels").at(o[0].get<std::size_t>());
    EXPECT_EQ(label, s.label) << i;
    if (o[1] == -2) {
      EXPECT_EQ(std::to_string(s.chunk), s.item) << i;
    } else if (!s.item.empty()) {
      EXPECT_EQ(data.at("items").at(o[1].get<std::size_t>()), s.item) << i;
    }
    EXPECT_DOUBLE_EQ(o[2].get<double>(), s.start) << i;
    EXPECT_DOUBLE_EQ(o[3].get<double>(), s.end) << i;
    EXPECT_EQ(data.at("bytes").at(o[7].get<std::size_t>()), s.bytes) << i;
    EXPECT_EQ(o[5].get<stream_id>(), s.stream) << i;
    EXPECT_EQ(o[8].get<op_id>(), s.op) << i;
    EXPECT_EQ(o[9].get<std::int64_t>(), s.chunk) << i;
    if (s.unit == engine::none) {
      EXPECT_EQ(o[6], -1) << i;
    } else {
      EXPECT_EQ(data.at("engines").at(o[6].get<std::size_t>()), to_string(s.unit)) << i;
    }
  }
}

TEST(HtmlReport, NeedsNothingButItself) {
  const std::string page = to_html(seed004());
  // No external script, style, font or image: the SVG namespace URI is the one "http" allowed.
  for (const char* external : {"src=", "href=", "@import", "url(", "<link"})
    EXPECT_FALSE(contains(page, external)) << external;
  std::size_t http = 0;
  for (auto at = page.find("http"); at != std::string::npos; at = page.find("http", at + 1)) ++http;
  EXPECT_EQ(http, 1U);
  EXPECT_TRUE(contains(page, R"(xmlns="http://www.w3.org/2000/svg")"));
}

TEST(HtmlReport, NamesAreEscapedAndTheDataCannotCloseItsScript) {
  Timeline t = seed004();
  t.program_name = "<b>bold</b> & 'quoted'";
  t.spans.front().label = "</script><script>alert(1)</script>";
  const std::string page = to_html(t);
  EXPECT_TRUE(contains(page, "<h1>&lt;b&gt;bold&lt;/b&gt; &amp; &#39;quoted&#39;</h1>"));
  EXPECT_FALSE(contains(page, "alert(1)</script>"));
  // The label survives, unescaped, once the data block is parsed.
  const json data = data_block(page);
  EXPECT_EQ(data.at("labels").at(data.at("runs")[0].at("ops")[0][0].get<std::size_t>()),
            t.spans.front().label);
}

TEST(HtmlReport, IsAFormatOfItsOwn) {
  EXPECT_EQ(parse_format("html"), format::html);
  const Timeline t = seed004();
  EXPECT_EQ(render(t, format::html), to_html(t));
}

TEST(HtmlReport, AHundredThousandOpsStayUnderFiveMegabytes) {
  Timeline t;
  t.program_name = "big";
  t.time_unit = "ms";
  t.streams.push_back(Stream{"s1", stream_kind::non_blocking, 0});
  t.streams.push_back(Stream{"s2", stream_kind::non_blocking, 0});
  for (std::size_t i = 0; i < 100'000; ++i) {
    Span s;
    s.op = static_cast<op_id>(i);
    s.kind = i % 3 == 1 ? op_kind::kernel : op_kind::copy;
    if (s.kind == op_kind::copy) s.direction = i % 3 == 0 ? copy_direction::h2d : copy_direction::d2h;
    s.unit = i % 3 == 1 ? engine::compute : (i % 3 == 0 ? engine::h2d_copy : engine::d2h_copy);
    s.label = i % 3 == 1 ? "Kernel" : (i % 3 == 0 ? "H2D" : "D2H");
    s.chunk = static_cast<std::int32_t>(i / 3);
    s.item = std::to_string(i / 3);
    s.stream = static_cast<stream_id>(s.chunk % 2);
    s.bytes = 4194304;
    s.start = 0.0913 * static_cast<double>(i) + 0.0001234;
    s.end = s.start + 0.0897;
    t.spans.push_back(s);
  }
  const std::string page = to_html(t);
  EXPECT_LT(page.size(), 5U << 20) << page.size();
  EXPECT_EQ(data_block(page).at("runs")[0].at("ops").size(), 100'000U);
}

// The h100 model draws a host span for every call, each labelled with its
// chunk ("cudaMemcpyAsync(H2D 17, Stream2)"): 100,002 ops and as many host
// spans still stay under 5 MB, the labels shared as templates.
TEST(HtmlReport, AHundredThousandOpsWithTheirHostCallsStayUnderFiveMegabytes) {
  PipelineShape shape;
  shape.chunks = 33'334;
  shape.streams = 4;
  shape.h2d_time = 30.0;
  shape.kernel_time = 20.0;
  shape.d2h_time = 30.0;
  const Timeline t = sim::simulate(make_pipeline_program(shape), DeviceModel::load("h100"));
  ASSERT_GE(t.spans.size(), 100'002U);
  ASSERT_GE(t.host_spans.size(), 100'002U);
  const std::string page = to_html(t);
  EXPECT_LT(page.size(), 5'000'000U) << page.size();
  // Pageable copies add a blocked span to each copy's call: 166,670 host spans.
  shape.memory = host_memory::pageable;
  const Timeline pageable = sim::simulate(make_pipeline_program(shape), DeviceModel::load("h100"));
  ASSERT_GT(pageable.host_spans.size(), 150'000U);
  EXPECT_LT(to_html(pageable).size(), 5'000'000U);

  // Every host span reads back as it was: its label (from a shared template
  // and a number, or the table) and its times to within a quantum.
  const json data = data_block(page);
  const double quantum = data.at("quantum").get<double>();
  const json& host = data.at("runs")[0].at("host");
  std::vector<const HostSpan*> drawn;
  for (const HostSpan& h : t.host_spans)
    if (h.end > h.start) drawn.push_back(&h);
  ASSERT_EQ(host.size(), drawn.size());
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    ASSERT_EQ(host[i][0].get<std::string>(), drawn[i]->label) << i;
    ASSERT_NEAR(host[i][1].get<double>(), drawn[i]->start, quantum) << i;
    ASSERT_NEAR(host[i][2].get<double>(), drawn[i]->end, quantum) << i;
  }
  const std::size_t templated = data.at("templates").size();
  EXPECT_GT(templated, 0U);
  EXPECT_LT(data.at("labels").size(), 100U);  // not one per call
}

TEST(HtmlReport, FindingsAreListedAboveTheChartAndTheirOpsHighlighted) {
  const Timeline t = seed004();
  HtmlFinding race{"error", "race", "ops[1] <writes> y", "add an event", {1, 4}, ""};
  HtmlFinding trap{"warning", "device-synchronize", "a device-wide sync", "", {6}, "time lost: 1 units"};
  const std::string page = to_html(t, {race, trap});
  EXPECT_TRUE(contains(
      page, R"(<li data-group="0"><span class="level-error">error race</span>: ops[1] &lt;writes&gt; y)"))
      << page.substr(0, 4000);
  EXPECT_TRUE(contains(page, "<br>fix: add an event</li>"));
  EXPECT_TRUE(
      contains(page, R"(<li data-group="1"><span class="level-warning">warning device-synchronize</span>)"));
  EXPECT_TRUE(contains(page, "<i>(time lost: 1 units)</i>"));
  const json data = data_block(page);
  EXPECT_EQ(data.at("highlight"), json::parse("[[1, 4], [6]]"));
  // Without findings, the page says so and highlights nothing.
  const std::string clean = to_html(t, {});
  EXPECT_TRUE(contains(clean, "No races or concurrency traps found."));
  EXPECT_TRUE(data_block(clean).at("highlight").empty());
}

// `overlap audit`'s page: its own title and notes above the findings, the
// regions (startup, steady state, teardown) in the data block the script
// shades them from, empty regions dropped, and the summary table left out
// when the options say so. The two-argument overload is the default options.
TEST(HtmlReport, OptionsGiveTheTitleNotesAndRegions) {
  const Timeline t = seed004();
  HtmlReportOptions options;
  options.title = "./app --size <1G>";
  options.notes = {"verdict: bound by the copy engines", "startup: 1 units & more"};
  options.regions = {{"startup", 0.0, 1.0}, {"steady state", 1.0, 3.5}, {"teardown", 3.5, 3.5}};
  options.summary_table = false;
  const HtmlFinding trap{"warning", "device-synchronize", "a device-wide sync", "", {6}, ""};
  const std::string page = to_html(t, {trap}, options);
  EXPECT_TRUE(contains(page, "<h1>./app --size &lt;1G&gt;</h1>")) << page.substr(0, 2000);
  EXPECT_TRUE(contains(page, "<title>overlap: ./app --size &lt;1G&gt;</title>"));
  const auto notes = page.find(
      "<ul class=\"notes\">\n<li>verdict: bound by the copy engines</li>\n<li>startup: 1 units &amp; "
      "more</li>");
  const auto findings = page.find("<h2>Findings</h2>");
  ASSERT_NE(notes, std::string::npos) << page.substr(0, 2000);
  EXPECT_LT(notes, findings);  // the verdict reads first
  EXPECT_FALSE(contains(page, "<table class=\"summary\">"));
  const json data = data_block(page);
  EXPECT_EQ(data.at("regions"), json::parse(R"([["startup", 0, 1], ["steady state", 1, 3.5]])"));
  EXPECT_EQ(data.at("highlight"), json::parse("[[6]]"));
  // Without options: the program's name, the summary table, no regions.
  const std::string plain = to_html(t, {trap});
  EXPECT_EQ(plain, to_html(t, {trap}, HtmlReportOptions{}));
  EXPECT_TRUE(contains(plain, "<table class=\"summary\">"));
  EXPECT_TRUE(data_block(plain).at("regions").empty());
}

TEST(HtmlComparison, TwoRunsOfSeed004GiveTheTotalErrorAndTheOpsMostWrong) {
  const Timeline measured = seed004();
  Timeline predicted = measured;
  predicted.device = "model";
  // The model has op 1 (A's kernel) 0.5 units too long, which delays what follows it on Stream1.
  for (Span& s : predicted.spans) {
    if (s.op == 1) s.end += 0.5;
    if (s.op == 2) {
      s.start += 0.5;
      s.end += 0.5;
    }
  }
  const std::string page = to_html_comparison(measured, predicted);
  // 4 units against 4: the last op (B's download) still ends at 4.
  EXPECT_TRUE(contains(page, "Total error: <b>+0.0%</b>")) << page.substr(0, 4000);
  EXPECT_TRUE(contains(page, "<tr><th>Total time</th><td>4 units</td><td>4 units</td><td>+0.0%</td></tr>"));
  EXPECT_TRUE(contains(page, "6 ops in both runs; their durations differ by 0.5 units in all"));
  // The op most wrong is listed first.
  const auto table = page.find("<table class=\"errors\">");
  ASSERT_NE(table, std::string::npos);
  EXPECT_EQ(page.find("<tr data-op=", table), page.find("<tr data-op=\"1\">", table));
  EXPECT_TRUE(contains(page, "<td>+0.5</td><td>+0</td>"));
  // Both runs travel to the page, named.
  const json data = data_block(page);
  ASSERT_EQ(data.at("runs").size(), 2U);
  EXPECT_EQ(data.at("runs")[0].at("name"), "measured");
  EXPECT_EQ(data.at("runs")[1].at("name"), "predicted");
  EXPECT_DOUBLE_EQ(data.at("runs")[1].at("ops")[2][2].get<double>(), 2.5);  // op 2 starts 0.5 later
}

TEST(HtmlComparison, OpsOnlyOneRunHasAreCounted) {
  const Timeline measured = seed004();
  Timeline predicted = measured;
  predicted.spans.pop_back();
  const std::string page = to_html_comparison(measured, predicted, "recorded", "traced");
  EXPECT_TRUE(contains(page, "5 ops in both runs")) << page.substr(0, 4000);
  EXPECT_TRUE(contains(page, "<th>recorded</th><th>traced</th>"));
}

HtmlChart sweep() {
  HtmlChart chart;
  chart.title = "sweep";
  chart.x_label = "chunk size";
  chart.y_label = "ms";
  chart.log_x = true;
  chart.x_ticks = {{1024.0, "1 KiB"}, {4096.0, "4 KiB"}, {65536.0, "64 KiB"}};
  chart.series = {{"2 streams", {{4096.0, 7.5}, {1024.0, 9.25}, {65536.0, 8.0}}},
                  {"4 streams", {{1024.0, 6.5}}}};
  chart.levels = {{"floor", 6.0}, {"sequential", 12.0}};
  return chart;
}

std::string attribute(const std::string& element, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(element, m, std::regex(" " + name + "=\"([^\"]*)\""))) return {};
  return m[1];
}

std::vector<double> numbers(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> values;
  for (double v = 0.0; in >> v;) values.push_back(v);
  return values;
}

TEST(HtmlChart, EveryPointAndLevelSitsWhereTheAxesPutIt) {
  HtmlComparisonOptions options;
  options.title = "bench";
  options.notes = {"a <note>"};
  options.charts = {sweep()};
  const Timeline t = seed004();
  const std::string page = to_html_comparison(t, t, options);
  EXPECT_TRUE(contains(page, "<h1>bench</h1>"));
  EXPECT_TRUE(contains(page, "<li>a &lt;note&gt;</li>"));

  std::smatch svg;
  ASSERT_TRUE(std::regex_search(page, svg, std::regex("<svg class=\"chart\"[^>]*>")));
  const std::vector<double> plot = numbers(attribute(svg[0], "data-plot"));  // left top right bottom
  const std::vector<double> xs = numbers(attribute(svg[0], "data-x-domain"));
  const std::vector<double> ys = numbers(attribute(svg[0], "data-y-domain"));
  ASSERT_EQ(plot.size(), 4U);
  ASSERT_EQ(xs.size(), 2U);
  ASSERT_EQ(ys.size(), 2U);
  // The axes hold every value: log2 x from 10 to 16, y from 6 to 12.
  EXPECT_LT(xs[0], 10.0);
  EXPECT_GT(xs[1], 16.0);
  EXPECT_LE(ys[0], 6.0);
  EXPECT_GE(ys[1], 12.0);
  const auto x_at = [&](double x) {
    return plot[0] + (std::log2(x) - xs[0]) / (xs[1] - xs[0]) * (plot[2] - plot[0]);
  };
  const auto y_at = [&](double y) { return plot[3] - (y - ys[0]) / (ys[1] - ys[0]) * (plot[3] - plot[1]); };

  const std::regex point("<circle class=\"point\"[^>]*>");
  std::size_t points = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), point); it != std::sregex_iterator(); ++it) {
    const std::string e = (*it)[0];
    const double x = std::stod(attribute(e, "data-x"));
    const double y = std::stod(attribute(e, "data-y"));
    EXPECT_NEAR(std::stod(attribute(e, "cx")), x_at(x), 0.01) << e;
    EXPECT_NEAR(std::stod(attribute(e, "cy")), y_at(y), 0.01) << e;
    ++points;
  }
  EXPECT_EQ(points, 4U);
  EXPECT_TRUE(contains(page, R"(data-series="2 streams" data-x="1024" data-y="9.25")"));
  EXPECT_TRUE(contains(page, "<title>2 streams, 4 KiB: 7.5 ms</title>"));  // a point's x by its tick label
  // A line per series, its points in x order.
  std::smatch line;
  ASSERT_TRUE(std::regex_search(page, line,
                                std::regex("<polyline class=\"series\" data-series=\"2 streams\"[^>]*>")));
  const std::string expected_points = fmt::format("{:.2f},{:.2f} {:.2f},{:.2f} {:.2f},{:.2f}", x_at(1024),
                                                  y_at(9.25), x_at(4096), y_at(7.5), x_at(65536), y_at(8.0));
  EXPECT_EQ(attribute(line[0], "points"), expected_points);
  std::smatch level;
  ASSERT_TRUE(std::regex_search(page, level, std::regex("<line class=\"level\" data-level=\"floor\"[^>]*>")));
  EXPECT_NEAR(std::stod(attribute(level[0], "y1")), y_at(6.0), 0.01);
  EXPECT_TRUE(contains(page, ">64 KiB</text>"));
  EXPECT_TRUE(contains(page, "floor 6 ms"));  // the legend names each level with its value
}

TEST(HtmlChart, BadChartsAreRejectedNamingTheChartAndTheValue) {
  const Timeline t = seed004();
  const auto message = [&](const HtmlChart& chart) -> std::string {
    HtmlComparisonOptions options;
    options.charts = {chart};
    try {
      (void)to_html_comparison(t, t, options);
    } catch (const invalid_input& e) {
      return e.what();
    }
    return "no error";
  };
  HtmlChart zero_on_log = sweep();
  zero_on_log.series[1].points.push_back({0.0, 1.0});
  EXPECT_TRUE(contains(message(zero_on_log),
                       "chart 'sweep': an x of series '4 streams' is 0 but the x axis is "
                       "logarithmic"))
      << message(zero_on_log);
  HtmlChart not_a_number = sweep();
  not_a_number.levels[0].y = std::nan("");
  EXPECT_TRUE(contains(message(not_a_number), "chart 'sweep': level 'floor' is not a finite number"));
  HtmlChart empty = sweep();
  empty.series.clear();
  EXPECT_TRUE(contains(message(empty), "chart 'sweep': no points to draw"));
}

}  // namespace
}  // namespace overlap::io
