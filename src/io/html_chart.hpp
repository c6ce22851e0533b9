// A line chart of a report page as static SVG: no script draws it, so it
// prints, and a page that only holds charts still reads without JavaScript.
#pragma once

#include <string>

#include "overlap/io/exporters.hpp"

namespace overlap::io::detail {

/// `chart` as a <figure> holding its SVG. Every point is a <circle
/// class="point"> with data-series, data-x and data-y (its values) and a
/// title; every level a <line class="level"> with data-level and data-y; the
/// <svg> carries data-plot (the plot box: left top right bottom) and
/// data-x-domain / data-y-domain (the values at its edges, log2 of x on a
/// log axis), so a test can check each mark's place from the DOM alone.
/// Throws invalid_input for a chart with no points, a non-finite value, or
/// x <= 0 on a log axis.
[[nodiscard]] std::string svg_chart(const HtmlChart& chart);

}  // namespace overlap::io::detail
