#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "html_page.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::io {

namespace {

constexpr std::array<std::pair<std::string_view, format>, 6> format_table{{
    {"summary", format::summary},
    {"ascii", format::ascii},
    {"mermaid", format::mermaid},
    {"chrome", format::chrome},
    {"json", format::json},
    {"html", format::html},
}};

}  // namespace

std::optional<format> parse_format(std::string_view name) noexcept {
  for (const auto& [text, value] : format_table) {
    if (text == name) return value;
  }
  return std::nullopt;
}

std::vector<std::string> format_names() {
  std::vector<std::string> names;
  names.reserve(std::size(format_table));
  for (const auto& entry : format_table) names.emplace_back(entry.first);
  return names;
}

std::string html_escape(std::string_view text) {
  return detail::escape(text);
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  const double magnitude = std::abs(value);
  // Past 15 digits the decimals say nothing: 1.5e+18, never a wall of digits.
  if (magnitude >= 1e15) return fmt::format("{:.4g}", value);
  int decimals = 4;
  // Below 1, keep 4 significant digits rather than rounding 0.000123 to 0.0001.
  if (magnitude > 0.0 && magnitude < 1.0) {
    const int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
    decimals = std::clamp(3 - exponent, 4, 15);
  }
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

std::string render(const Timeline& timeline, format what) {
  switch (what) {
    case format::summary: return to_summary(timeline);
    case format::ascii: return to_ascii(timeline);
    case format::mermaid: return to_mermaid(timeline);
    case format::chrome: return to_chrome_trace(timeline);
    case format::json: return to_json(timeline);
    case format::html: return to_html(timeline);
  }
  return to_summary(timeline);
}

}  // namespace overlap::io
