// The shared scalar readers of spec_fields.hpp: each checks its value's type
// and range and names the field, so the forms never repeat a check.
#include "spec_fields.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include "overlap/core/limits.hpp"

namespace overlap::io::spec {

namespace {

constexpr std::string_view kShareExpected = "a number with 0 < share <= 1";

// Numbers are read with std::from_chars, not yaml-cpp's convert<>, whose
// iostream extraction follows the process's global C++ locale (a host
// program's std::locale::global could make "1.5" read as 1) and, inlined
// into a Python extension built against another distribution's libstdc++,
// crashed inside the locale's facets. YAML 1.2's core schema: an optional
// sign, decimal digits, 0x and 0o prefixes for integers.
std::string_view without_plus(std::string_view text) {
  return text.size() > 1 && text.front() == '+' && text[1] != '-' ? text.substr(1) : text;
}

std::optional<double> scalar_double(std::string_view text) {
  text = without_plus(text);
  double value = 0.0;
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (status != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<long long> scalar_integer(std::string_view text) {
  text = without_plus(text);
  const bool negative = !text.empty() && text.front() == '-';
  std::string_view digits = negative ? text.substr(1) : text;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o')) {
    base = digits[1] == 'x' ? 16 : 8;
    digits.remove_prefix(2);
  }
  unsigned long long magnitude = 0;
  const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (status != std::errc() || end != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  constexpr auto largest = static_cast<unsigned long long>(std::numeric_limits<long long>::max());
  if (magnitude > largest + (negative ? 1U : 0U)) return std::nullopt;
  if (!negative) return static_cast<long long>(magnitude);
  return magnitude == largest + 1U ? std::numeric_limits<long long>::min()
                                   : -static_cast<long long>(magnitude);
}

}  // namespace

std::string join(const field_list& names) {
  std::string out;
  for (const std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string join_some(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 8;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) out += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > kShown) out += fmt::format(" and {} more", names.size() - kShown);
  return out;
}

std::string shown(std::string_view text) {
  constexpr std::size_t kLongest = 40;
  std::string out = "'";
  for (const char c : text.substr(0, kLongest)) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out + (text.size() > kLongest ? "...'" : "'");
}

std::string describe(const YAML::Node& node) {
  if (node.IsScalar()) return shown(node.Scalar());
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "an empty value";
}

void require_map(const Field& field, std::string_view expected) {
  if (!field.node().IsMap()) field.fail(describe(field.node()) + " is not a map", expected);
}

void require_list(const Field& field, std::string_view expected, bool allow_empty) {
  if (!field.node().IsSequence()) field.fail(describe(field.node()) + " is not a list", expected);
  if (!allow_empty && field.node().size() == 0) field.fail("an empty list", expected);
}

void check_fields(const Field& field, const field_list& allowed) {
  require_map(field, "a map with fields: " + join(allowed));
  std::set<std::string> seen;
  for (const auto& [key, value] : field.members()) {
    const std::string& name = key.node().Scalar();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      key.fail("unknown field " + shown(name), "one of: " + join(allowed));
    }
    if (!seen.insert(name).second)
      key.fail(fmt::format("field {} given twice", shown(name)), "each field once");
  }
}

std::string read_string(const Field& field) {
  if (!field.node().IsScalar()) field.fail(describe(field.node()) + " is not a string", "a non-empty string");
  if (field.node().Scalar().empty()) field.fail("an empty string", "a non-empty string");
  return field.node().Scalar();
}

double read_number(const Field& field, std::string_view expected) {
  const std::optional<double> value =
      field.node().IsScalar() ? scalar_double(field.node().Scalar()) : std::nullopt;
  if (!value) field.fail(describe(field.node()) + " is not a number", expected);
  return *value;
}

double read_time(const Field& field) {
  const double value = read_number(field, kTimeExpected);
  if (!limits::is_time(value)) {
    field.fail(fmt::format("{} is out of range", field.node().Scalar()), kTimeExpected);
  }
  return value;
}

double read_share(const Field& field) {
  const double value = read_number(field, kShareExpected);
  if (!(value > 0.0 && value <= 1.0)) {
    field.fail(fmt::format("{} is out of range", field.node().Scalar()), kShareExpected);
  }
  return value;
}

std::int64_t read_integer(const Field& field, std::int64_t min, std::int64_t max) {
  const std::string expected = max == std::numeric_limits<std::int64_t>::max()
                                   ? fmt::format("an integer >= {}", min)
                                   : fmt::format("an integer from {} to {}", min, max);
  const std::optional<long long> value =
      field.node().IsScalar() ? scalar_integer(field.node().Scalar()) : std::nullopt;
  if (!value) field.fail(describe(field.node()) + " is not an integer", expected);
  if (*value < min || *value > max) field.fail(fmt::format("{} is out of range", *value), expected);
  return *value;
}

std::uint32_t read_count(const Field& field) {
  return static_cast<std::uint32_t>(read_integer(field, 1, std::numeric_limits<std::uint32_t>::max()));
}

bool read_bool(const Field& field) {
  bool value = false;
  if (!field.node().IsScalar() || !YAML::convert<bool>::decode(field.node(), value)) {
    field.fail(describe(field.node()) + " is not a boolean", "true or false");
  }
  return value;
}

std::optional<std::uint64_t> parse_byte_count(std::string_view text) {
  const std::optional<std::uint64_t> bytes = parse_byte_size(text);
  if (bytes && *bytes > limits::max_bytes) return std::nullopt;
  return bytes;
}

std::uint64_t read_bytes(const Field& field) {
  std::optional<std::uint64_t> bytes;
  if (field.node().IsScalar()) bytes = parse_byte_count(field.node().Scalar());
  if (!bytes) field.fail(describe(field.node()) + " is not a byte count", kBytesExpected);
  return *bytes;
}

}  // namespace overlap::io::spec
