// The HTML report of one Timeline: its summary as a table, the "why not
// faster" lines, and the Gantt chart (html_page).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "html_page.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/io/exporters.hpp"
#include "summary_lines.hpp"

namespace overlap::io {

namespace {

using detail::escape;
using detail::percent;

std::string summary_table(const Timeline& t, const Metrics& m) {
  const auto time = [&](double v) { return escape(fmt::format("{} {}", format_number(v), t.time_unit)); };
  std::string rows;
  const auto row = [&](std::string_view name, const std::string& value) {
    rows += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", name, value);
  };
  row("Total time", time(m.total));
  row("Sequential time", time(m.sequential));
  row("Speedup", fmt::format("{:.2f}x", m.speedup));
  for (const EngineUsage& e : m.engines)
    row(escape(fmt::format("{} busy", detail::engine_label(t, e.unit, e.device))),
        fmt::format("{} ({})", percent(e.busy_fraction), time(e.busy)));
  row("Two or more engines busy", fmt::format("{} of the time", percent(m.multi_engine_busy_fraction)));
  if (m.bound > 0.0) {
    row("Bound", fmt::format("{} busy {}: the run took {:.2f}x the bound ({} of ideal)",
                             escape(detail::engine_label(t, m.bound_engine, m.bound_device)), time(m.bound),
                             m.total / m.bound, percent(m.bound_attainment)));
  }
  if (const auto blocked = detail::host_blocked(t); blocked && *blocked > 0.0)
    row("Host blocked", time(*blocked) + " in synchronous calls");
  return "<table class=\"summary\">\n" + rows + "</table>\n";
}

std::string why_list(const Timeline& t, const Metrics& m) {
  const std::vector<std::string> lines = detail::why_not_faster(t, m);
  if (lines.empty()) return "<p>No engine was left idle while work waited.</p>\n";
  std::string html = "<ul class=\"why\">\n";
  for (const std::string& line : lines) html += "<li>" + escape(line) + "</li>\n";
  return html + "</ul>\n";
}

std::string findings_list(const std::vector<HtmlFinding>& findings) {
  if (findings.empty()) return "<h2>Findings</h2>\n<p>No races or concurrency traps found.</p>\n";
  std::string html = fmt::format(
      "<h2>Findings</h2>\n<p class=\"hint\">{} in all; their ops are outlined in the chart. Click one to "
      "outline only its ops, again for all.</p>\n<ul class=\"findings\">\n",
      findings.size());
  for (std::size_t k = 0; k < findings.size(); ++k) {
    const HtmlFinding& f = findings[k];
    html += fmt::format(R"(<li data-group="{}"><span class="level-{}">{} {}</span>: {})", k, escape(f.level),
                        escape(f.level), escape(f.rule), escape(f.message));
    if (!f.cost.empty()) html += fmt::format(" <i>({})</i>", escape(f.cost));
    if (!f.fix.empty()) html += fmt::format("<br>fix: {}", escape(f.fix));
    html += "</li>\n";
  }
  return html + "</ul>\n";
}

std::string header(const Timeline& timeline, const std::string& name) {
  return fmt::format("<h1>{}</h1>\n<p class=\"sub\">device {} · {} ops · times in {}</p>\n", escape(name),
                     escape(detail::device_name(timeline)), timeline.spans.size(),
                     escape(timeline.time_unit));
}

}  // namespace

std::string to_html(const Timeline& timeline) {
  const Metrics metrics = compute_metrics(timeline);
  const std::string name = detail::program_name(timeline);
  std::string summary = header(timeline, name) + summary_table(timeline, metrics);
  summary += "<h2>Why not faster</h2>\n" + why_list(timeline, metrics);
  return detail::html_page(name, summary, {{&timeline, ""}});
}

std::string to_html(const Timeline& timeline, const std::vector<HtmlFinding>& findings) {
  return to_html(timeline, findings, HtmlReportOptions{});
}

std::string to_html(const Timeline& timeline, const std::vector<HtmlFinding>& findings,
                    const HtmlReportOptions& options) {
  const std::string name = options.title.empty() ? detail::program_name(timeline) : options.title;
  std::string summary = header(timeline, name);
  if (!options.notes.empty()) {
    summary += "<ul class=\"notes\">\n";
    for (const std::string& note : options.notes) summary += "<li>" + escape(note) + "</li>\n";
    summary += "</ul>\n";
  }
  summary += findings_list(findings);
  if (options.summary_table) summary += summary_table(timeline, compute_metrics(timeline));
  std::vector<std::vector<op_id>> groups;
  groups.reserve(findings.size());
  for (const HtmlFinding& f : findings) groups.push_back(f.ops);
  return detail::html_page(name, summary, {{&timeline, ""}}, groups, options.regions);
}

}  // namespace overlap::io
