// The page around every HTML report: one file with no network (inline style,
// inline SVG drawn by an inline script). The ops of every run travel as one
// compact JSON block so that 100,000 ops and their host spans stay under
// 5 MB: a run's ops and host spans column by column; tables for labels,
// items and sizes; host labels that differ only by a number
// ("cudaMemcpyAsync(H2D 17, Stream2)") as a shared template and the number;
// times as whole multiples of a decimal quantum (about 1/2^24 of the run),
// each start a step from the one before; op ids, chunks and a template's
// numbers as steps too. The script (html_renderer.hpp) turns the columns
// back into rows on load.
#include "html_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "html_renderer.hpp"

namespace overlap::io::detail {

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
svg#gantt { display: block; width: 100%; max-width: 1210px; height: auto; user-select: none; }
.lane { fill: #fafafa; } .lane.odd { fill: #f0f0f0; }
.lane-label { font-size: 12px; text-anchor: end; fill: #333; }
.tick { stroke: #ddd; } .tick-label { font-size: 11px; text-anchor: middle; fill: #555; }
.unit { font-size: 11px; fill: #555; text-anchor: end; }
.bar { stroke: #fff; stroke-width: 0.5; } .bar.merged, .bar.thin { stroke: none; }
.bar.hl { stroke: #000; stroke-width: 2; } .bar.dim { opacity: 0.3; }
ul.findings li { cursor: pointer; margin-bottom: 6px; } .level-error { color: #b00020; font-weight: bold; }
.level-warning { color: #a15c00; font-weight: bold; } .level-info { color: #555; font-weight: bold; }
.k-h2d { fill: #4e79a7; background: #4e79a7; } .k-d2h { fill: #f28e2b; background: #f28e2b; }
.k-d2d { fill: #b07aa1; background: #b07aa1; } .k-kernel { fill: #59a14f; background: #59a14f; }
.k-memset { fill: #9c755f; background: #9c755f; } .k-other { fill: #bab0ac; background: #bab0ac; }
.k-mixed { fill: #6b6b6b; background: #6b6b6b; }
.h-api_call { fill: #c9c9c9; background: #c9c9c9; } .h-blocked { fill: #e15759; background: #e15759; }
.h-work { fill: #76b7b2; background: #76b7b2; }
#tip { position: absolute; display: none; white-space: pre; background: #fff; border: 1px solid #999;
       padding: 4px 6px; font-size: 12px; pointer-events: none; box-shadow: 0 1px 4px #0003; }
table.summary.compare td { padding-right: 16px; }
table.errors { border-collapse: collapse; font-size: 13px; }
table.errors th, table.errors td { padding: 2px 12px 2px 0; text-align: right; font-variant-numeric: tabular-nums; }
table.errors th:first-child, table.errors td:first-child { text-align: left; }
figure.chart { margin: 8px 0 12px; } svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { font-size: 12px; fill: #333; } svg.chart .chart-title { font-size: 14px; font-weight: 600; }
svg.chart .tick-label { text-anchor: middle; fill: #555; } svg.chart .tick-label.y { text-anchor: end; }
svg.chart .axis-label { text-anchor: middle; fill: #555; } svg.chart .grid { stroke: #e4e4e4; }
svg.chart .frame { fill: none; stroke: #999; } svg.chart .series { fill: none; stroke-width: 2; }
svg.chart .level { stroke: #222; stroke-width: 1.5; }
ul.notes { margin: 0 0 8px; padding-left: 20px; }
.region { fill-opacity: 0.22; } .region-edge { stroke: #555; stroke-dasharray: 3 3; }
.region-strip { fill-opacity: 0.75; cursor: zoom-in; } .region-label { font-size: 12px; text-anchor: middle; fill: #222; pointer-events: none; }
.region-0 { fill: #f1c232; } .region-1 { fill: #6fa8dc; } .region-2 { fill: #b4a7d6; } .region-3 { fill: #93c47d; }
@media print { .controls, .hint, #tip { display: none; } body { margin: 0; } }
)CSS";

// 7 significant digits: enough for a bar's pixel, and short in the JSON.
// fmt and from_chars ignore the locale, unlike stod.
double rounded(double value) {
  if (value == 0.0 || !std::isfinite(value)) return 0.0;
  const std::string text = fmt::format("{:.7g}", value);
  double result = value;
  std::from_chars(text.data(), text.data() + text.size(), result);
  return result;
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
  if (kind == "kernel") return "Kernel";
  if (kind == "memset") return "Memset";
  return "Other";
}

/// Indexes values into a table, each once.
template <typename T>
class Table {
 public:
  int index(const T& value) {
    const auto [it, added] = index_.try_emplace(value, static_cast<int>(values_.size()));
    if (added) values_.push_back(value);
    return it->second;
  }
  [[nodiscard]] const std::vector<T>& values() const noexcept { return values_; }

 private:
  std::map<T, int> index_;
  std::vector<T> values_;
};

/// The decimal quantum of a page whose runs last `total`: the power of ten
/// at or below total / 2^24, so that a time is a whole number of at most
/// eight or nine digits and a bar keeps its place to far below a pixel at
/// any zoom the page offers.
double time_quantum(double total) {
  if (!(total > 0.0) || !std::isfinite(total)) return 1.0;
  return std::pow(10.0, std::floor(std::log10(total / 16777216.0)));
}

/// `label` as (before, number, after) where it holds a number standing
/// apart (not part of a word such as "Stream1") that reads back the same
/// (no leading zero, at most 15 digits); nothing otherwise.
struct NumberedLabel {
  std::string before, after;
  std::int64_t number = 0;
};
std::optional<NumberedLabel> numbered(const std::string& label) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (std::size_t at = 0; at < label.size(); ++at) {
    if (!digit(label[at]) || (at > 0 && word(label[at - 1]))) continue;
    std::size_t end = at;
    while (end < label.size() && digit(label[end])) ++end;
    if (end < label.size() && word(label[end])) {
      at = end;
      continue;
    }
    const std::size_t length = end - at;
    if (length > 15 || (length > 1 && label[at] == '0')) return std::nullopt;
    NumberedLabel n{label.substr(0, at), label.substr(end), 0};
    std::from_chars(label.data() + at, label.data() + end, n.number);
    return n;
  }
  return std::nullopt;
}

/// Everything the script draws from, for every run.
class PageData {
 public:
  /// For runs that last at most `total` (the longest of them).
  explicit PageData(double total) : quantum_(time_quantum(total)), total_(total) {}

  json run(const HtmlRun& r) {
    const Timeline& t = *r.timeline;
    json ops = op_columns(t);
    json host = host_columns(t);
    if (t.streams.size() > streams_.size()) {
      streams_.clear();
      for (const Stream& s : t.streams) streams_.push_back(s.name);
    }
    unit_ = t.time_unit;
    return json{
        {"name", r.name}, {"ops", std::move(ops)}, {"host", std::move(host)}, {"threads", t.host_threads}};
  }

  [[nodiscard]] json finish(json runs, const std::vector<std::vector<op_id>>& groups,
                            const std::vector<HtmlRegion>& regions) const {
    // [name, start, end]; empty ones are dropped here, so the script need not.
    json spans = json::array();
    for (const HtmlRegion& r : regions)
      if (r.end > r.start) spans.push_back(json::array({r.name, rounded(r.start), rounded(r.end)}));
    json templates = json::array();
    for (const auto& [before, after] : templates_.values()) templates.push_back(json::array({before, after}));
    return json{{"unit", unit_},
                {"quantum", quantum_},
                {"templates", std::move(templates)},
                {"highlight", groups},
                {"regions", std::move(spans)},
                {"total", rounded(total_)},
                {"labels", labels_.values()},
                {"items", items_.values()},
                {"bytes", bytes_.values()},
                {"kinds", kinds_.values()},
                {"engines", engines_.values()},
                {"activities", activities_.values()},
                {"streams", streams_},
                {"runs", std::move(runs)}};
  }

  [[nodiscard]] const std::vector<std::string>& kinds() const noexcept { return kinds_.values(); }
  [[nodiscard]] const std::vector<std::string>& activities() const noexcept { return activities_.values(); }

 private:
  // Columns, not rows: a row per op would spend its brackets and commas
  // 100,000 times over.
  struct OpColumns {
    std::vector<std::int64_t> label;
    std::vector<std::int64_t> item;      ///< -1 none, -2 the chunk's number, else in `items`
    std::vector<std::int64_t> start;     ///< steps from the op before
    std::vector<std::int64_t> duration;  ///< quanta
    std::vector<std::int64_t> kind;
    std::vector<std::int64_t> stream;
    std::vector<std::int64_t> engine;  ///< -1 none
    std::vector<std::int64_t> size;
    std::vector<std::int64_t> op;     ///< steps from the op before
    std::vector<std::int64_t> chunk;  ///< steps from the op before (from -1)
  };

  json op_columns(const Timeline& t) {
    OpColumns c;
    std::int64_t last_start = 0;
    std::int64_t last_op = 0;
    std::int64_t last_chunk = -1;
    for (const Span& s : t.spans) {
      c.label.push_back(labels_.index(s.label.empty() ? std::string(to_string(s.kind)) : s.label));
      // Most items are their chunk's number: -2 says so in two bytes.
      std::int64_t item = -1;
      if (!s.item.empty())
        item = s.chunk >= 0 && s.item == std::to_string(s.chunk) ? -2 : items_.index(s.item);
      c.item.push_back(item);
      const std::int64_t from = steps(s.start);
      c.start.push_back(from - last_start);
      c.duration.push_back(steps(s.end) - from);
      c.kind.push_back(kinds_.index(std::string(kind_of(s))));
      c.stream.push_back(static_cast<std::int64_t>(s.stream));
      c.engine.push_back(s.unit == engine::none ? -1 : engines_.index(std::string(to_string(s.unit))));
      c.size.push_back(bytes_.index(s.bytes));
      c.op.push_back(static_cast<std::int64_t>(s.op) - last_op);
      c.chunk.push_back(s.chunk - last_chunk);
      last_start = from;
      last_op = static_cast<std::int64_t>(s.op);
      last_chunk = s.chunk;
    }
    return json{{"label", c.label}, {"item", c.item},     {"start", c.start},   {"duration", c.duration},
                {"kind", c.kind},   {"stream", c.stream}, {"engine", c.engine}, {"size", c.size},
                {"op", c.op},       {"chunk", c.chunk}};
  }

  struct HostColumns {
    /// Its index in `labels`; -1, the label of the span before; -2 - k,
    /// template k with the next entry of `numbers`.
    std::vector<std::int64_t> label;
    std::vector<std::int64_t> numbers;  ///< steps from the number the template took last
    std::vector<std::int64_t> start;    ///< steps from the end of the span before
    std::vector<std::int64_t> duration;
    std::vector<std::int64_t> activity;
    std::vector<std::int64_t> thread;
  };

  json host_columns(const Timeline& t) {
    HostColumns c;
    std::map<int, std::int64_t> last_number;
    const std::string* last_label = nullptr;
    std::int64_t last_end = 0;
    bool threads = false;
    for (const HostSpan& h : t.host_spans) {
      if (h.end <= h.start) continue;
      if (last_label != nullptr && *last_label == h.label) {
        c.label.push_back(-1);
      } else if (const auto n = numbered(h.label)) {
        const int k = templates_.index({n->before, n->after});
        c.label.push_back(-2 - k);
        c.numbers.push_back(n->number - last_number[k]);
        last_number[k] = n->number;
      } else {
        c.label.push_back(labels_.index(h.label));
      }
      last_label = &h.label;
      const std::int64_t from = steps(h.start);
      const std::int64_t end = steps(h.end);
      c.start.push_back(from - last_end);
      c.duration.push_back(end - from);
      c.activity.push_back(activities_.index(std::string(to_string(h.activity))));
      c.thread.push_back(static_cast<std::int64_t>(h.thread));
      threads = threads || h.thread != 0;
      last_end = end;
    }
    json host{{"label", c.label},
              {"numbers", c.numbers},
              {"start", c.start},
              {"duration", c.duration},
              {"activity", c.activity}};
    if (threads) host["thread"] = c.thread;  // all 0 (one host thread) when left out
    return host;
  }

  /// `time` as a whole number of quanta.
  [[nodiscard]] std::int64_t steps(double time) const { return std::llround(time / quantum_); }

  double quantum_;
  Table<std::string> labels_, items_, kinds_, engines_, activities_;
  Table<std::pair<std::string, std::string>> templates_;
  Table<std::uint64_t> bytes_;
  std::vector<std::string> streams_;
  double total_;
  std::string unit_ = "ms";
};

// Inside <script>, "</" would end the element early.
std::string script_safe(std::string text) {
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  return text;
}

std::string_view activity_name(std::string_view activity) {
  if (activity == "api_call") return "host: issuing a call";
  if (activity == "blocked") return "host: blocked";
  return "host: work";
}

// Only what the chart shows: the kinds of its ops and its host activities.
std::string legend(const std::vector<std::string>& kinds, const std::vector<std::string>& activities) {
  std::string html = "<div class=\"legend\">";
  for (const std::string& k : kinds)
    html += fmt::format("<span class=\"sw k-{}\"></span>{}", k, escape(kind_name(k)));
  for (const std::string& a : activities)
    html += fmt::format("<span class=\"sw h-{}\"></span>{}", a, escape(activity_name(a)));
  // Shown by the script only while a merged bar holds several kinds, none most of it.
  html += R"(<span id="mixed-legend" style="display: none"><span class="sw k-mixed"></span>several kinds )"
          R"((zoom in to tell them apart)</span>)";
  return html + "</div>\n";
}

}  // namespace

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

std::string html_page(const std::string& title, const std::string& summary_html,
                      const std::vector<HtmlRun>& runs) {
  return html_page(title, summary_html, runs, {});
}

std::string html_page(const std::string& title, const std::string& summary_html,
                      const std::vector<HtmlRun>& runs,
                      const std::vector<std::vector<op_id>>& highlight_groups,
                      const std::vector<HtmlRegion>& regions) {
  double total = 0.0;
  for (const HtmlRun& r : runs) total = std::max(total, r.timeline->total());
  PageData data(total);
  json run_data = json::array();
  std::size_t spans = 0;
  for (const HtmlRun& r : runs) {
    run_data.push_back(data.run(r));
    spans += r.timeline->spans.size();
  }
  std::string page;
  page.reserve(8192 + 48 * spans);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page +=
      fmt::format("<title>overlap: {}</title>\n<style>{}</style>\n</head>\n<body>\n", escape(title), style);
  page += summary_html;
  page += R"(<div class="controls"><button id="zoom-all">Whole run</button> )"
          R"(<span id="first-chunks"><button id="zoom-first">First</button> )"
          R"(<input id="chunks" type="number" min="1" value="4"> chunks</span>)"
          R"(<span class="hint">drag across the chart to zoom</span></div>)"
          "\n";
  page += legend(data.kinds(), data.activities());
  page += R"(<svg id="gantt" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="timeline"></svg>)"
          "\n<noscript><p>The timeline is drawn by the page's script; the tables above need "
          "none.</p></noscript>\n"
          R"(<div id="tip"></div>)"
          "\n";
  // Names are any bytes (a spec reads back names that are not UTF-8), but
  // JSON is UTF-8: bytes that are not become U+FFFD rather than an exception.
  page += R"(<script type="application/json" id="overlap-data">)" +
          script_safe(data.finish(std::move(run_data), highlight_groups, regions)
                          .dump(-1, ' ', false, json::error_handler_t::replace)) +
          "</script>\n";
  page += "<script>" + std::string(html_renderer) + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace overlap::io::detail
