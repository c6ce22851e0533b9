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
    row(escape(fmt::format("{} busy", to_string(e.unit))),
        fmt::format("{} ({})", percent(e.busy_fraction), time(e.busy)));
  row("Two or more engines busy", fmt::format("{} of the time", percent(m.multi_engine_busy_fraction)));
  if (m.bound > 0.0) {
    row("Bound", fmt::format("{} busy {}: the run took {:.2f}x the bound ({} of ideal)",
                             escape(std::string(to_string(m.bound_engine))), time(m.bound), m.total / m.bound,
                             percent(m.bound_attainment)));
  }
  double blocked = 0.0;
  for (const HostSpan& h : t.host_spans) {
    if (h.activity == host_activity::blocked) blocked += h.end - h.start;
  }
  if (blocked > 0.0) row("Host blocked", time(blocked) + " in synchronous calls");
  return "<table class=\"summary\">\n" + rows + "</table>\n";
}

std::string why_list(const Timeline& t, const Metrics& m) {
  const std::vector<std::string> lines = detail::why_not_faster(t, m);
  if (lines.empty()) return "<p>No engine was left idle while work waited.</p>\n";
  std::string html = "<ul class=\"why\">\n";
  for (const std::string& line : lines) html += "<li>" + escape(line) + "</li>\n";
  return html + "</ul>\n";
}

}  // namespace

std::string to_html(const Timeline& timeline) {
  const Metrics metrics = compute_metrics(timeline);
  const std::string name = timeline.program_name.empty() ? "(unnamed)" : timeline.program_name;
  const std::string device = timeline.device.empty() ? "unknown" : timeline.device;
  std::string summary =
      fmt::format("<h1>{}</h1>\n<p class=\"sub\">device {} · {} ops · times in {}</p>\n", escape(name),
                  escape(device), timeline.spans.size(), escape(timeline.time_unit));
  summary += summary_table(timeline, metrics);
  summary += "<h2>Why not faster</h2>\n" + why_list(timeline, metrics);
  return detail::html_page(name, summary, {{&timeline, ""}});
}

}  // namespace overlap::io
