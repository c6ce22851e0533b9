// The parts every HTML report shares: escaping, and the page around a
// report's own summary (style, zoom controls, legend, the SVG the inline
// script draws, and the runs' ops as one JSON block).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "overlap/core/timeline.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::io::detail {

/// Text for HTML: & < > " ' as entities.
[[nodiscard]] std::string escape(std::string_view text);

/// A Timeline drawn on the page, and what its lanes are called after the
/// stream or engine ("measured", "predicted"; empty for a lone run).
struct HtmlRun {
  const Timeline* timeline = nullptr;
  std::string name;
};

/// The whole page: `title` as its title and heading, `summary_html` (the
/// report's own tables and lists) above the chart, then the chart of `runs`:
/// a lane per stream and run, per engine and run, and the host thread of
/// each run, every run on one time axis.
[[nodiscard]] std::string html_page(const std::string& title, const std::string& summary_html,
                                    const std::vector<HtmlRun>& runs);
/// The same, with groups of ops to highlight: all of them at first, one
/// group when an element with data-group="k" in the summary is clicked; and
/// `regions` of the time axis shaded across the lanes and named in a strip
/// under them.
[[nodiscard]] std::string html_page(const std::string& title, const std::string& summary_html,
                                    const std::vector<HtmlRun>& runs,
                                    const std::vector<std::vector<op_id>>& highlight_groups,
                                    const std::vector<HtmlRegion>& regions = {});

}  // namespace overlap::io::detail
