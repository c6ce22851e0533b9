// The HTML report of two runs of one Program (a measured run and the
// simulator's prediction of it, say): their metrics side by side, the total
// error, the ops the second run got most wrong, and both Gantts on one time
// axis, each lane drawn once per run.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "html_chart.hpp"
#include "html_page.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/io/exporters.hpp"
#include "summary_lines.hpp"

namespace overlap::io {

namespace {

using detail::escape;
using detail::percent;

constexpr std::size_t most_wrong_listed = 10;

std::string signed_percent(double fraction) {
  return fmt::format("{:+.1f}%", fraction * 100.0);
}

std::string relative(double reference, double other) {
  return reference != 0.0 ? signed_percent(other / reference - 1.0) : std::string("n/a");
}

double busy_of(const Metrics& m, engine unit) {
  for (const EngineUsage& e : m.engines) {
    if (e.unit == unit) return e.busy;
  }
  return 0.0;
}

std::string metrics_table(const Timeline& ref, const Metrics& a, const Metrics& b, std::string_view a_name,
                          std::string_view b_name) {
  const auto time = [&](double v) { return escape(fmt::format("{} {}", format_number(v), ref.time_unit)); };
  std::string rows = fmt::format("<tr><th></th><th>{}</th><th>{}</th><th>difference</th></tr>\n",
                                 escape(a_name), escape(b_name));
  const auto row = [&](const std::string& name, const std::string& x, const std::string& y,
                       const std::string& diff) {
    rows += fmt::format("<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(name), x, y, diff);
  };
  row("Total time", time(a.total), time(b.total), relative(a.total, b.total));
  row("Speedup", fmt::format("{:.2f}x", a.speedup), fmt::format("{:.2f}x", b.speedup),
      relative(a.speedup, b.speedup));
  std::vector<engine> units;
  for (const Metrics* m : {&a, &b}) {
    for (const EngineUsage& e : m->engines) {
      if (std::find(units.begin(), units.end(), e.unit) == units.end()) units.push_back(e.unit);
    }
  }
  for (const engine unit : units) {
    row(fmt::format("{} busy", to_string(unit)), time(busy_of(a, unit)), time(busy_of(b, unit)),
        relative(busy_of(a, unit), busy_of(b, unit)));
  }
  row("Two or more engines busy", percent(a.multi_engine_busy_fraction),
      percent(b.multi_engine_busy_fraction),
      relative(a.multi_engine_busy_fraction, b.multi_engine_busy_fraction));
  return "<table class=\"summary compare\">\n" + rows + "</table>\n";
}

struct OpError {
  const Span* a = nullptr;
  const Span* b = nullptr;
  [[nodiscard]] double start() const { return b->start - a->start; }
  [[nodiscard]] double duration() const { return b->duration() - a->duration(); }
};

std::string op_name(const Timeline& t, const Span& s) {
  const std::string label = s.label.empty() ? std::string(to_string(s.kind)) : s.label;
  return fmt::format("op {} {}{} on {}", s.op, label, s.item.empty() ? "" : " " + s.item,
                     detail::stream_name(t, s.stream));
}

std::string most_wrong(const Timeline& a, const Timeline& b, std::string_view a_name,
                       std::string_view b_name) {
  std::map<op_id, const Span*> in_a;
  for (const Span& s : a.spans) {
    if (is_work_op(s.kind)) in_a.emplace(s.op, &s);
  }
  std::vector<OpError> errors;
  std::size_t unmatched = 0;
  for (const Span& s : b.spans) {
    if (!is_work_op(s.kind)) continue;
    const auto found = in_a.find(s.op);
    if (found == in_a.end()) {
      ++unmatched;
      continue;
    }
    errors.push_back({found->second, &s});
  }
  double total_abs = 0.0;
  for (const OpError& e : errors) total_abs += std::abs(e.duration());
  std::stable_sort(errors.begin(), errors.end(), [](const OpError& x, const OpError& y) {
    return std::abs(x.duration()) > std::abs(y.duration());
  });
  const auto num = [&](double v) { return escape(format_number(v)); };
  const auto diff = [&](double v) { return (v >= 0.0 ? "+" : "") + escape(format_number(v)); };
  std::string html = fmt::format(
      "<h2>Ops {} got most wrong</h2>\n<p>{} ops in both runs; their durations differ by {} {} in all "
      "(the sum of each op's difference, whatever its sign){}.</p>\n",
      escape(b_name), errors.size(), num(total_abs), escape(a.time_unit),
      unmatched > 0 ? fmt::format("; {} ops of the {} run are not in the {} run", unmatched, escape(b_name),
                                  escape(a_name))
                    : std::string());
  if (errors.empty()) return html;
  html += fmt::format(
      "<table class=\"errors\">\n<tr><th>op</th><th>{0} start</th><th>{0} duration</th><th>{1} start</th>"
      "<th>{1} duration</th><th>duration difference</th><th>start difference</th></tr>\n",
      escape(a_name), escape(b_name));
  for (std::size_t i = 0; i < std::min(errors.size(), most_wrong_listed); ++i) {
    const OpError& e = errors[i];
    html += fmt::format(
        "<tr data-op=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        e.a->op, escape(op_name(a, *e.a)), num(e.a->start), num(e.a->duration()), num(e.b->start),
        num(e.b->duration()), diff(e.duration()), diff(e.start()));
  }
  return html + "</table>\n";
}

}  // namespace

std::string to_html_comparison(const Timeline& reference, const Timeline& other,
                               std::string_view reference_name, std::string_view other_name) {
  HtmlComparisonOptions options;
  options.reference_name = reference_name;
  options.other_name = other_name;
  return to_html_comparison(reference, other, options);
}

std::string to_html_comparison(const Timeline& reference, const Timeline& other,
                               const HtmlComparisonOptions& options) {
  const std::string& a_name = options.reference_name;
  const std::string& b_name = options.other_name;
  const Metrics a = compute_metrics(reference);
  const Metrics b = compute_metrics(other);
  const std::string program = detail::program_name(reference);
  const std::string title = options.title.empty() ? program : options.title;
  std::string summary = fmt::format("<h1>{}</h1>\n", escape(title));
  if (!options.notes.empty()) {
    summary += "<ul class=\"notes\">\n";
    for (const std::string& note : options.notes) summary += "<li>" + escape(note) + "</li>\n";
    summary += "</ul>\n";
  }
  for (const HtmlChart& chart : options.charts) summary += detail::svg_chart(chart);
  if (!options.title.empty()) summary += fmt::format("<h2>{}</h2>\n", escape(program));
  summary += fmt::format("<p class=\"sub\">{} ({}) against {} ({}) · times in {}</p>\n", escape(b_name),
                         escape(detail::device_name(other)), escape(a_name),
                         escape(detail::device_name(reference)), escape(reference.time_unit));
  summary += fmt::format("<p class=\"total-error\">Total error: <b>{}</b> ({} {} against {} {})</p>\n",
                         relative(a.total, b.total), escape(format_number(b.total)), escape(other.time_unit),
                         escape(format_number(a.total)), escape(reference.time_unit));
  summary += metrics_table(reference, a, b, a_name, b_name);
  summary += most_wrong(reference, other, a_name, b_name);
  return detail::html_page(title, summary, {{&reference, a_name}, {&other, b_name}});
}

}  // namespace overlap::io
