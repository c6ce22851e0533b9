// Line charts for report pages, drawn here as SVG rather than by the page's
// script: a sweep is a few dozen points, and a static figure prints as it is.
#include "html_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "html_page.hpp"
#include "overlap/core/error.hpp"

namespace overlap::io::detail {

namespace {

// The figure's size and the plot box inside it, in SVG units (CSS pixels at
// 100% zoom): room on the left for y labels, on the right for the legend.
constexpr double width = 880, height = 340;
constexpr double plot_left = 70, plot_right = 580, plot_top = 36, plot_bottom = 288;
constexpr std::array<std::string_view, 3> dashes = {"6 4", "2 3", "10 3 2 3"};
constexpr std::array<std::string_view, 8> colours = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                     "#b07aa1", "#76b7b2", "#edc948", "#9c755f"};

std::string px(double v) {
  return fmt::format("{:.2f}", v);
}

/// 1, 2 or 5 times a power of ten, about `span` / `count`.
double nice_step(double span, int count) {
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / power;
  return power * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
}

void require_finite(const HtmlChart& chart, std::string_view what, double value) {
  if (!std::isfinite(value))
    throw invalid_input(fmt::format("chart '{}': {} is not a finite number", chart.title, what));
}

/// Maps values to the plot box.
class Axes {
 public:
  explicit Axes(const HtmlChart& chart) : log_(chart.log_x) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    double x_lo = inf;
    double x_hi = -inf;
    double y_lo = inf;
    double y_hi = -inf;
    const auto take_x = [&](double x, std::string_view what) {
      require_finite(chart, what, x);
      if (log_ && x <= 0.0)
        throw invalid_input(
            fmt::format("chart '{}': {} is {} but the x axis is logarithmic (x > 0)", chart.title, what, x));
      x_lo = std::min(x_lo, along(x));
      x_hi = std::max(x_hi, along(x));
    };
    std::size_t points = 0;
    for (const HtmlChart::Series& s : chart.series) {
      for (const auto& [x, y] : s.points) {
        take_x(x, fmt::format("an x of series '{}'", s.name));
        require_finite(chart, fmt::format("a y of series '{}'", s.name), y);
        y_lo = std::min(y_lo, y);
        y_hi = std::max(y_hi, y);
        ++points;
      }
    }
    if (points == 0) throw invalid_input(fmt::format("chart '{}': no points to draw", chart.title));
    for (const auto& [x, label] : chart.x_ticks) take_x(x, fmt::format("the x of tick '{}'", label));
    for (const HtmlChart::Level& l : chart.levels) {
      require_finite(chart, fmt::format("level '{}'", l.name), l.y);
      y_lo = std::min(y_lo, l.y);
      y_hi = std::max(y_hi, l.y);
    }
    if (x_hi - x_lo <= 0.0) {
      x_lo -= 1.0;
      x_hi += 1.0;
    }
    const double pad = (x_hi - x_lo) * 0.04;  // keeps end points off the frame
    x_lo_ = x_lo - pad;
    x_hi_ = x_hi + pad;
    // The y axis spans the values, not 0 up: a sweep's points sit within a
    // few percent of each other, and from 0 they would draw as one line.
    const double y_span = y_hi - y_lo > 0.0 ? y_hi - y_lo : std::max(std::abs(y_hi), 1.0);
    y_step_ = nice_step(y_span * 1.1, 5);
    y_lo_ = std::floor((y_lo - 0.05 * y_span) / y_step_) * y_step_;
    if (y_lo >= 0.0) y_lo_ = std::max(y_lo_, 0.0);
    y_hi_ = std::ceil((y_hi + 0.05 * y_span) / y_step_) * y_step_;
  }

  [[nodiscard]] double along(double x) const { return log_ ? std::log2(x) : x; }
  [[nodiscard]] double x(double value) const {
    return plot_left + (along(value) - x_lo_) / (x_hi_ - x_lo_) * (plot_right - plot_left);
  }
  [[nodiscard]] double y(double value) const {
    return plot_bottom - (value - y_lo_) / (y_hi_ - y_lo_) * (plot_bottom - plot_top);
  }
  [[nodiscard]] double x_lo() const { return x_lo_; }
  [[nodiscard]] double x_hi() const { return x_hi_; }
  [[nodiscard]] double y_lo() const { return y_lo_; }
  [[nodiscard]] double y_hi() const { return y_hi_; }
  [[nodiscard]] double y_step() const { return y_step_; }

 private:
  bool log_;
  double x_lo_ = 0, x_hi_ = 1, y_lo_ = 0, y_hi_ = 1, y_step_ = 1;
};

std::string x_ticks(const HtmlChart& chart, const Axes& axes) {
  std::vector<std::pair<double, std::string>> ticks = chart.x_ticks;
  if (ticks.empty()) {
    // Evenly spaced in what the axis shows: powers of two on a log axis.
    const double step = chart.log_x ? std::max(1.0, std::round(nice_step(axes.x_hi() - axes.x_lo(), 6)))
                                    : nice_step(axes.x_hi() - axes.x_lo(), 6);
    for (double t = std::ceil(axes.x_lo() / step) * step; t <= axes.x_hi(); t += step) {
      const double value = chart.log_x ? std::exp2(t) : t;
      ticks.emplace_back(value, format_number(value));
    }
  }
  std::string svg;
  for (const auto& [value, label] : ticks) {
    const std::string x = px(axes.x(value));
    svg += fmt::format(R"(<line class="grid" x1="{0}" x2="{0}" y1="{1}" y2="{2}"/>)", x, px(plot_top),
                       px(plot_bottom + 4));
    svg += fmt::format(R"(<text class="tick-label" x="{}" y="{}">{}</text>)", x, px(plot_bottom + 17),
                       escape(label));
  }
  return svg + "\n";
}

std::string y_ticks(const Axes& axes) {
  std::string svg;
  const auto steps = static_cast<int>(std::lround((axes.y_hi() - axes.y_lo()) / axes.y_step()));
  for (int k = 0; k <= steps; ++k) {
    const double t = axes.y_lo() + k * axes.y_step();
    const std::string y = px(axes.y(t));
    svg += fmt::format(R"(<line class="grid" x1="{0}" x2="{1}" y1="{2}" y2="{2}"/>)", px(plot_left - 4),
                       px(plot_right), y);
    svg += fmt::format(R"(<text class="tick-label y" x="{}" y="{}">{}</text>)", px(plot_left - 8),
                       px(axes.y(t) + 4), escape(format_number(t)));
  }
  return svg + "\n";
}

std::string legend_entry(std::size_t row, const std::string& mark, const std::string& name) {
  const double y = plot_top + 6 + static_cast<double>(row) * 20;
  return fmt::format(
             R"SVG(<g class="legend-entry" transform="translate({},{})">{}<text x="26" y="4">{}</text></g>)SVG",
             px(plot_right + 16), px(y), mark, escape(name)) +
         "\n";
}

/// The label of the tick at `x`, when there is one ("4 MiB"), else the number.
std::string x_name(const HtmlChart& chart, double x) {
  for (const auto& [value, label] : chart.x_ticks) {
    if (value == x) return label;
  }
  return format_number(x);
}

}  // namespace

std::string svg_chart(const HtmlChart& chart) {
  const Axes axes(chart);
  std::string svg = fmt::format(
      R"(<figure class="chart"><svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" )"
      R"(width="{}" height="{}" role="img" aria-label="{}" data-log-x="{}" data-plot="{} {} {} {}" )"
      R"(data-x-domain="{} {}" data-y-domain="{} {}">)"
      "\n",
      width, height, width, height, escape(chart.title), chart.log_x ? 1 : 0, plot_left, plot_top, plot_right,
      plot_bottom, axes.x_lo(), axes.x_hi(), axes.y_lo(), axes.y_hi());
  svg += fmt::format(R"(<text class="chart-title" x="{}" y="20">{}</text>)", px(plot_left),
                     escape(chart.title)) +
         "\n";
  svg += y_ticks(axes) + x_ticks(chart, axes);
  svg += fmt::format(R"(<rect class="frame" x="{}" y="{}" width="{}" height="{}"/>)", px(plot_left),
                     px(plot_top), px(plot_right - plot_left), px(plot_bottom - plot_top)) +
         "\n";
  svg += fmt::format(R"(<text class="axis-label" x="{}" y="{}">{}</text>)", px((plot_left + plot_right) / 2),
                     px(height - 12), escape(chart.x_label));
  svg += fmt::format(R"SVG(<text class="axis-label" transform="translate(18,{}) rotate(-90)">{}</text>)SVG",
                     px((plot_top + plot_bottom) / 2), escape(chart.y_label)) +
         "\n";

  std::size_t row = 0;
  for (const HtmlChart::Level& l : chart.levels) {
    const std::string_view dash = dashes[row % dashes.size()];  // levels told apart without colour
    svg += fmt::format(
        R"(<line class="level" data-level="{0}" data-y="{1}" x1="{2}" x2="{3}" y1="{4}" y2="{4}" stroke-dasharray="{7}"><title>{0}: {5} {6}</title></line>)",
        escape(l.name), l.y, px(plot_left), px(plot_right), px(axes.y(l.y)), escape(format_number(l.y)),
        escape(chart.y_label), dash);
    svg +=
        "\n" +
        legend_entry(
            row++,
            fmt::format(R"(<line class="level" x1="0" x2="20" y1="0" y2="0" stroke-dasharray="{}"/>)", dash),
            fmt::format("{} {} {}", l.name, format_number(l.y), chart.y_label));
  }
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const HtmlChart::Series& s = chart.series[k];
    const std::string_view colour = colours[k % colours.size()];
    std::vector<std::pair<double, double>> points = s.points;
    std::sort(points.begin(), points.end());
    std::string line;
    for (const auto& [x, y] : points) line += fmt::format("{},{} ", px(axes.x(x)), px(axes.y(y)));
    if (!line.empty()) line.pop_back();
    svg += fmt::format(R"(<polyline class="series" data-series="{}" stroke="{}" points="{}"/>)",
                       escape(s.name), colour, line) +
           "\n";
    for (const auto& [x, y] : points) {
      svg += fmt::format(
          R"(<circle class="point" data-series="{0}" data-x="{1}" data-y="{2}" cx="{3}" cy="{4}" r="3.5" fill="{5}"><title>{0}, {6}: {7} {8}</title></circle>)",
          escape(s.name), x, y, px(axes.x(x)), px(axes.y(y)), colour, escape(x_name(chart, x)),
          escape(format_number(y)), escape(chart.y_label));
    }
    svg += "\n" +
           legend_entry(row++,
                        fmt::format(R"(<line x1="0" x2="20" y1="0" y2="0" stroke="{0}" stroke-width="2"/>)"
                                    R"(<circle cx="10" cy="0" r="3.5" fill="{0}"/>)",
                                    colour),
                        s.name);
  }
  return svg + "</svg></figure>\n";
}

}  // namespace overlap::io::detail
