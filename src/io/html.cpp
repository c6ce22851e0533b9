// The HTML report: one self-contained page (no network: inline style, inline
// SVG drawn by an inline script) with the summary of a Timeline as a table
// and its Gantt chart. The ops travel as one compact JSON block (tables for
// labels, items and sizes, start and duration to 7 significant digits) so
// that a run of 100,000 ops stays under 5 MB; the script draws the bars.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "html_renderer.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/io/exporters.hpp"
#include "summary_lines.hpp"

namespace overlap::io {

namespace {

using nlohmann::json;

constexpr std::string_view style = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: #555; margin: 0 0 14px; }
table.summary { border-collapse: collapse; }
table.summary th { text-align: left; font-weight: normal; color: #555; padding: 2px 16px 2px 0; }
table.summary td { padding: 2px 0; font-variant-numeric: tabular-nums; }
ul.why { margin: 0; padding-left: 20px; }
.controls { margin: 16px 0 6px; }
.controls input { width: 4em; }
.hint { color: #777; margin-left: 12px; }
.legend span.sw { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: -1px; }
svg#gantt { display: block; width: 100%; max-width: 1210px; user-select: none; }
.lane { fill: #fafafa; } .lane.odd { fill: #f0f0f0; }
.lane-label { font-size: 12px; text-anchor: end; fill: #333; }
.tick { stroke: #ddd; } .tick-label { font-size: 11px; text-anchor: middle; fill: #555; }
.unit { font-size: 11px; fill: #555; }
.bar { stroke: #fff; stroke-width: 0.5; }
.k-h2d { fill: #4e79a7; background: #4e79a7; } .k-d2h { fill: #f28e2b; background: #f28e2b; }
.k-d2d { fill: #b07aa1; background: #b07aa1; } .k-kernel { fill: #59a14f; background: #59a14f; }
.k-memset { fill: #9c755f; background: #9c755f; } .k-other { fill: #bab0ac; background: #bab0ac; }
.h-api_call { fill: #c9c9c9; background: #c9c9c9; } .h-blocked { fill: #e15759; background: #e15759; }
.h-work { fill: #76b7b2; background: #76b7b2; }
#tip { position: absolute; display: none; white-space: pre; background: #fff; border: 1px solid #999;
       padding: 4px 6px; font-size: 12px; pointer-events: none; box-shadow: 0 1px 4px #0003; }
@media print { .controls, .hint, #tip { display: none; } body { margin: 0; } }
)CSS";

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// 7 significant digits: enough for a bar's pixel, and short in the JSON.
double rounded(double value) {
  if (value == 0.0 || !std::isfinite(value)) return 0.0;
  return std::stod(fmt::format("{:.7g}", value));
}

std::string_view kind_of(const Span& s) {
  if (s.kind == op_kind::copy) {
    switch (s.direction.value_or(copy_direction::h2d)) {
      case copy_direction::h2d: return "h2d";
      case copy_direction::d2h: return "d2h";
      case copy_direction::d2d: return "d2d";
    }
  }
  if (s.kind == op_kind::kernel) return "kernel";
  if (s.kind == op_kind::memset) return "memset";
  return "other";
}

std::string_view kind_name(std::string_view kind) {
  if (kind == "h2d") return "H2D copy";
  if (kind == "d2h") return "D2H copy";
  if (kind == "d2d") return "D2D copy";
  return kind;
}

/// Indexes strings into a table, each once.
class StringTable {
 public:
  int index(const std::string& s) {
    const auto [it, added] = index_.try_emplace(s, static_cast<int>(strings_.size()));
    if (added) strings_.push_back(s);
    return it->second;
  }
  [[nodiscard]] const std::vector<std::string>& strings() const noexcept { return strings_; }

 private:
  std::map<std::string, int> index_;
  std::vector<std::string> strings_;
};

json page_data(const Timeline& t, std::vector<std::string>& kinds_present) {
  StringTable labels;
  StringTable items;
  StringTable kinds;
  StringTable engines;
  StringTable activities;
  std::map<std::uint64_t, int> byte_index;
  json byte_sizes = json::array();
  json ops = json::array();
  for (const Span& s : t.spans) {
    const std::string label = s.label.empty() ? std::string(to_string(s.kind)) : s.label;
    const int engine = s.unit == engine::none ? -1 : engines.index(std::string(to_string(s.unit)));
    // Most items are their chunk's number: -2 says so in two bytes.
    int item = -1;
    if (!s.item.empty()) item = s.chunk >= 0 && s.item == std::to_string(s.chunk) ? -2 : items.index(s.item);
    const auto [size, added] = byte_index.try_emplace(s.bytes, static_cast<int>(byte_sizes.size()));
    if (added) byte_sizes.push_back(s.bytes);
    const double start = rounded(s.start);
    ops.push_back(
        json::array({labels.index(label), item, start, rounded(rounded(s.end) - start),
                     kinds.index(std::string(kind_of(s))), s.stream, engine, size->second, s.op, s.chunk}));
  }
  json host = json::array();
  for (const HostSpan& h : t.host_spans) {
    if (h.end <= h.start) continue;
    host.push_back(json::array({labels.index(h.label), rounded(h.start), rounded(h.end),
                                activities.index(std::string(to_string(h.activity)))}));
  }
  json streams = json::array();
  for (const Stream& s : t.streams) streams.push_back(s.name);
  kinds_present = kinds.strings();
  return json{{"unit", t.time_unit},
              {"total", rounded(t.total())},
              {"labels", labels.strings()},
              {"items", items.strings()},
              {"bytes", std::move(byte_sizes)},
              {"kinds", kinds.strings()},
              {"engines", engines.strings()},
              {"activities", activities.strings()},
              {"streams", std::move(streams)},
              {"ops", std::move(ops)},
              {"host", std::move(host)}};
}

// Inside <script>, "</" would end the element early.
std::string script_safe(std::string text) {
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  return text;
}

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100.0);
}

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

std::string legend(const std::vector<std::string>& kinds, bool host) {
  std::string html = "<div class=\"legend\">";
  for (const std::string& k : kinds)
    html += fmt::format("<span class=\"sw k-{}\"></span>{}", k, escape(kind_name(k)));
  if (host) {
    html += R"(<span class="sw h-api_call"></span>host: issuing a call)"
            R"(<span class="sw h-blocked"></span>host: blocked)"
            R"(<span class="sw h-work"></span>host: work)";
  }
  return html + "</div>\n";
}

}  // namespace

std::string to_html(const Timeline& timeline) {
  const Metrics metrics = compute_metrics(timeline);
  std::vector<std::string> kinds;
  const json data = page_data(timeline, kinds);
  const std::string name = timeline.program_name.empty() ? "(unnamed)" : timeline.program_name;
  const std::string device = timeline.device.empty() ? "unknown" : timeline.device;
  std::string page;
  page.reserve(4096 + 48 * timeline.spans.size());
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page +=
      fmt::format("<title>overlap: {}</title>\n<style>{}</style>\n</head>\n<body>\n", escape(name), style);
  page += fmt::format("<h1>{}</h1>\n<p class=\"sub\">device {} · {} ops · times in {}</p>\n", escape(name),
                      escape(device), timeline.spans.size(), escape(timeline.time_unit));
  page += summary_table(timeline, metrics);
  page += "<h2>Why not faster</h2>\n" + why_list(timeline, metrics);
  page += R"(<div class="controls"><button id="zoom-all">Whole run</button> )"
          R"(<span id="first-chunks"><button id="zoom-first">First</button> )"
          R"(<input id="chunks" type="number" min="1" value="4"> chunks</span>)"
          R"(<span class="hint">drag across the chart to zoom</span></div>)"
          "\n";
  page += legend(kinds, !timeline.host_spans.empty());
  page +=
      "<svg id=\"gantt\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"timeline\"></svg>\n";
  page +=
      "<noscript><p>The timeline is drawn by the page's script; the summary above needs "
      "none.</p></noscript>\n";
  page += "<div id=\"tip\"></div>\n";
  page += R"(<script type="application/json" id="overlap-data">)" + script_safe(data.dump()) + "</script>\n";
  page += "<script>" + std::string(detail::html_renderer) + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace overlap::io
