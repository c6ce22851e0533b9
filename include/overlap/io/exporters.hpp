// overlap::io exporters: a Timeline as people and tools read it.
//
// `summary` (times, speedup, engine use, the bound and the stalls that kept
// the run from it), `ascii` (the seeds' slot-by-slot timeline), `mermaid` (a
// Gantt block), `chrome` (Trace Event Format JSON for Perfetto and
// chrome://tracing), `json` (the Timeline itself, readable back) and `html`
// (one self-contained page: the summary as a table and the Gantt chart).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "overlap/core/timeline.hpp"

namespace overlap::io {

/// The output formats.
enum class format { summary, ascii, mermaid, chrome, json, html };

/// Parses a format name; empty optional if unknown.
[[nodiscard]] std::optional<format> parse_format(std::string_view name) noexcept;
/// Names of every format, for help and errors.
[[nodiscard]] std::vector<std::string> format_names();

[[nodiscard]] std::string to_summary(const Timeline& timeline);
[[nodiscard]] std::string to_ascii(const Timeline& timeline);
[[nodiscard]] std::string to_mermaid(const Timeline& timeline);
[[nodiscard]] std::string to_chrome_trace(const Timeline& timeline);
[[nodiscard]] std::string to_json(const Timeline& timeline);
/// One HTML page, no network needed: the summary table, the "why not
/// faster" lines, and the Gantt (a lane per stream, per engine and for the
/// host thread) drawn as SVG by an inline script from an embedded JSON block.
[[nodiscard]] std::string to_html(const Timeline& timeline);
/// A finding shown above a report's chart, its ops highlighted in it (the
/// CLI fills these from overlap::check, which io does not depend on).
struct HtmlFinding {
  std::string level;       ///< "error", "warning" or "info"
  std::string rule;        ///< e.g. "race"
  std::string message;     ///< what is wrong
  std::string fix;         ///< what to change; may be empty
  std::vector<op_id> ops;  ///< highlighted in the chart
  std::string cost;        ///< e.g. "time lost: 3 ms"; may be empty
};
/// The one-run report with `findings` listed above the chart; clicking one
/// highlights only its ops.
[[nodiscard]] std::string to_html(const Timeline& timeline, const std::vector<HtmlFinding>& findings);
/// A named stretch of a report's time axis, e.g. a run's startup, steady
/// state and teardown: shaded across every lane and named in a strip under
/// the chart (clicking it zooms to it), so a reader sees which part of the
/// run each finding is about.
struct HtmlRegion {
  std::string name;    ///< shown in the strip and in its tooltip
  double start = 0.0;  ///< in the Timeline's time unit
  double end = 0.0;    ///< after start; regions with end <= start are not drawn
};
/// What a one-run report with findings shows besides them (`overlap audit
/// --format html`: the verdict and the phases above a measured timeline).
struct HtmlReportOptions {
  std::string title;                ///< the heading; empty: the Timeline's program name
  std::vector<std::string> notes;   ///< lines of plain text under the heading, above the findings
  std::vector<HtmlRegion> regions;  ///< drawn on the chart, in order (each its own shade)
  /// The whole run's summary table (times, engine use, bound) under the
  /// findings; a report whose notes judge one part of the run turns it off,
  /// so that two different totals do not stand side by side.
  bool summary_table = true;
};
/// The report with findings, and with `options`' title, notes and regions.
[[nodiscard]] std::string to_html(const Timeline& timeline, const std::vector<HtmlFinding>& findings,
                                  const HtmlReportOptions& options);
/// Two runs of one Program on one page, e.g. a measured run and the
/// simulator's prediction of it: their metrics side by side, the total
/// error, the ops whose durations differ most (matched by op id), and both
/// Gantts on one axis, every lane drawn once per run.
[[nodiscard]] std::string to_html_comparison(const Timeline& reference, const Timeline& other,
                                             std::string_view reference_name = "measured",
                                             std::string_view other_name = "predicted");
/// A line chart on a report page, drawn as static SVG (no script needed):
/// e.g. a sweep's time against chunk size, one line per stream count, and
/// the floor as a level across it.
struct HtmlChart {
  /// One line of points, joined in x order.
  struct Series {
    std::string name;                               ///< shown in the legend and in each point's tooltip
    std::vector<std::pair<double, double>> points;  ///< (x, y), finite
  };
  /// A horizontal line across the chart: a floor, a baseline.
  struct Level {
    std::string name;  ///< shown in the legend with its value
    double y = 0.0;    ///< where it lies, in the y unit
  };
  std::string title;    ///< drawn above the chart; names it in errors
  std::string x_label;  ///< the x axis's caption, e.g. "chunk size"
  std::string y_label;  ///< the y unit, e.g. "ms"
  bool log_x = false;   ///< a log2 x axis (chunk sizes); every x must then be > 0
  /// Labelled x ticks; empty: evenly spaced ticks labelled with format_number.
  std::vector<std::pair<double, std::string>> x_ticks;
  std::vector<Series> series;  ///< the lines, each in a colour of its own
  std::vector<Level> levels;   ///< horizontal lines, told apart by their dashes
};
/// What a comparison page shows besides its two runs.
struct HtmlComparisonOptions {
  std::string reference_name = "measured";  ///< what the page calls the reference run
  std::string other_name = "predicted";     ///< what the page calls the other run
  std::string title;                        ///< the heading; empty: the reference's program name
  std::vector<std::string> notes;           ///< lines of plain text under the heading
  std::vector<HtmlChart> charts;            ///< drawn between the notes and the comparison
};
/// The comparison page with a title, notes and charts of its own (`overlap
/// bench --report`: the sweep above the best run measured and predicted).
/// Throws overlap::invalid_input for a chart with no points, a non-finite
/// value, or x <= 0 on a log axis.
[[nodiscard]] std::string to_html_comparison(const Timeline& reference, const Timeline& other,
                                             const HtmlComparisonOptions& options);
/// Reads back what to_json wrote; throws overlap::invalid_input.
[[nodiscard]] Timeline timeline_from_json(std::string_view text);

/// A time or ratio for people: at most 4 decimals (more for tiny values, so
/// 4 significant digits survive), no trailing zeros: 47.5, 80, 0.0123.
[[nodiscard]] std::string format_number(double value);

/// `text` safe inside HTML elements and attribute values (& < > " ').
[[nodiscard]] std::string html_escape(std::string_view text);

/// Dispatches on `what`.
[[nodiscard]] std::string render(const Timeline& timeline, format what);

}  // namespace overlap::io
