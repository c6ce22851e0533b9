#include "overlap/core/byte_size.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <limits>
#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {

namespace {

// Exact products of up to 2^64 x 10^19 need more than 64 bits.
__extension__ using wide = unsigned __int128;

struct Unit {
  std::string_view name;
  std::uint64_t bytes;
};

constexpr std::array<Unit, 10> kUnits = {{
    {"", 1},
    {"B", 1},
    {"KB", 1000},
    {"MB", 1000ULL * 1000},
    {"GB", 1000ULL * 1000 * 1000},
    {"TB", 1000ULL * 1000 * 1000 * 1000},
    {"KiB", 1ULL << 10},
    {"MiB", 1ULL << 20},
    {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40},
}};

// A fraction longer than this is no size anyone means; it also keeps 10^digits in 64 bits.
constexpr std::size_t kMostFractionDigits = 18;

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::optional<std::uint64_t> unit_bytes(std::string_view name) {
  for (const Unit& unit : kUnits) {
    if (unit.name == name) return unit.bytes;
  }
  return std::nullopt;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  text = trim(text);
  std::size_t at = 0;
  while (at < text.size() && is_digit(text[at])) ++at;
  const std::string_view whole = text.substr(0, at);
  std::string_view fraction;
  if (at < text.size() && text[at] == '.') {
    const std::size_t begin = ++at;
    while (at < text.size() && is_digit(text[at])) ++at;
    fraction = text.substr(begin, at - begin);
  }
  if (whole.empty() || fraction.size() > kMostFractionDigits) return std::nullopt;
  const std::optional<std::uint64_t> unit = unit_bytes(trim(text.substr(at)));
  if (!unit) return std::nullopt;

  std::uint64_t count = 0;
  if (std::from_chars(whole.data(), whole.data() + whole.size(), count).ec != std::errc())
    return std::nullopt;
  std::uint64_t numerator = 0;  // the fraction's digits as an integer
  std::uint64_t denominator = 1;
  for (const char digit : fraction) {
    numerator = numerator * 10 + static_cast<std::uint64_t>(digit - '0');
    denominator *= 10;
  }
  const wide fraction_bytes = wide{numerator} * *unit;
  if (fraction_bytes % denominator != 0) return std::nullopt;  // a fraction of a byte
  const wide bytes = wide{count} * *unit + fraction_bytes / denominator;
  if (bytes > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::uint64_t parse_byte_size(std::string_view text, std::string_view field) {
  const std::optional<std::uint64_t> bytes = parse_byte_size(text);
  if (!bytes) {
    throw invalid_input(
        fmt::format("{}: '{}' is not a byte count (expected {})", field, text, kByteSizeExpected));
  }
  if (*bytes > limits::max_bytes) {
    throw invalid_input(
        fmt::format("{}: '{}' is over the limit of 1 TiB (more than any GPU or host holds)", field, text));
  }
  return *bytes;
}

std::string format_byte_size(std::uint64_t bytes) {
  constexpr std::array<std::pair<std::string_view, std::uint64_t>, 4> binary = {{
      {"TiB", 1ULL << 40},
      {"GiB", 1ULL << 30},
      {"MiB", 1ULL << 20},
      {"KiB", 1ULL << 10},
  }};
  for (const auto& [name, unit] : binary) {
    // Exact with at most two decimals: bytes x 100 is a multiple of the unit.
    if (bytes < unit || (wide{bytes} * 100) % unit != 0) continue;
    const auto hundredths = static_cast<std::uint64_t>((wide{bytes} * 100) / unit);
    std::string text = fmt::format("{}.{:02}", hundredths / 100, hundredths % 100);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return fmt::format("{} {}", text, name);
  }
  return fmt::format("{} B", bytes);
}

}  // namespace overlap
