// The shared scalar readers of spec_fields.hpp: each checks its value's type
// and range and names the field, so the forms never repeat a check.
#include "spec_fields.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "overlap/core/limits.hpp"

namespace overlap::io::spec {

namespace {

constexpr std::string_view kShareExpected = "a number with 0 < share <= 1";

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
  double value = 0.0;
  if (!field.node().IsScalar() || !YAML::convert<double>::decode(field.node(), value)) {
    field.fail(describe(field.node()) + " is not a number", expected);
  }
  return value;
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
  long long value = 0;
  if (!field.node().IsScalar() || !YAML::convert<long long>::decode(field.node(), value)) {
    field.fail(describe(field.node()) + " is not an integer", expected);
  }
  if (value < min || value > max) field.fail(fmt::format("{} is out of range", value), expected);
  return value;
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
