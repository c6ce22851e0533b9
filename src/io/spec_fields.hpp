// Internal to the spec reader: what its files share (spec_parser.cpp and the two forms,
// spec_pipeline_form.cpp and spec_explicit_form.cpp). Spec files -> Program:
// the YAML tree is walked once; every value is read through a Field, which
// knows the file, line and field path to blame, so every error is one line a
// user can act on without a stack trace.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "overlap/core/byte_size.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/core/program.hpp"

namespace overlap::io::spec {

using field_list = std::vector<std::string_view>;

inline constexpr std::string_view kTimeExpected = limits::time_expected;
inline constexpr std::string_view kBytesExpected =
    "a byte count from 0 to 1 TiB, optionally with a unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";

/// "a, b, c": names listed in a message.
std::string join(const field_list& names);

/// The same for names from the input, cut after the first few ("a, b, c and 99997 more"): a message stays one
/// readable line however many names a program declares.
std::string join_some(const std::vector<std::string>& names);

/// User text quoted for a message: errors are one line, so a multi-line
/// or long scalar is escaped and cut.
std::string shown(std::string_view text);

/// How a node looks, for "X is not a Y" messages.
std::string describe(const YAML::Node& node);

/// A node together with what to blame when it is wrong: the source, the
/// field path ("ops[3].time") and the line. Map members carry the line of
/// their key, because an empty value's own mark points at the next token.
class Field {
 public:
  Field(const std::string& source, const YAML::Node& node, std::string path, int line)
      : source_(&source), node_(node), path_(std::move(path)), line_(line) {}

  [[nodiscard]] const YAML::Node& node() const noexcept { return node_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int line() const noexcept { return line_; }

  [[noreturn]] void fail(std::string_view problem, std::string_view expected) const {
    fail_raw(fmt::format("{} (expected {})", problem, expected));
  }
  /// For messages that already say what was expected (Program's own checks).
  [[noreturn]] void fail_raw(std::string_view message) const {
    throw invalid_input(
        fmt::format("{}:{}: {}: {}", *source_, line_, path_.empty() ? "top level" : path_, message));
  }
  /// A required member is absent: blame its would-be path on this map's line.
  [[noreturn]] void fail_missing(std::string_view key, std::string_view expected) const {
    Field(*source_, YAML::Node(), member_path(key), line_).fail("required", expected);
  }

  /// Member `key` of a map, or nothing when absent (an empty value is present).
  [[nodiscard]] std::optional<Field> get(std::string_view key) const {
    for (const auto& member : node_) {
      if (member.first.IsScalar() && member.first.Scalar() == key) {
        return Field(*source_, member.second, member_path(key), line_of(member.first));
      }
    }
    return std::nullopt;
  }

  [[nodiscard]] Field require(std::string_view key, std::string_view expected) const {
    std::optional<Field> member = get(key);
    if (!member) fail_missing(key, expected);
    return *member;
  }

  /// Elements of a list (the caller has checked that it is one).
  [[nodiscard]] std::vector<Field> elements() const {
    std::vector<Field> out;
    std::size_t index = 0;
    for (const auto& element : node_) {
      out.emplace_back(*source_, element, fmt::format("{}[{}]", path_, index++), line_of(element));
    }
    return out;
  }

  /// Members of a map as (key, value), keys being scalars.
  [[nodiscard]] std::vector<std::pair<Field, Field>> members() const {
    std::vector<std::pair<Field, Field>> out;
    for (const auto& member : node_) {
      const int key_line = line_of(member.first);
      const std::string key = member.first.IsScalar() ? member.first.Scalar() : std::string();
      Field key_field(*source_, member.first, path_, key_line);
      if (!member.first.IsScalar())
        key_field.fail(describe(member.first) + " is not a field name", "a plain key");
      out.emplace_back(key_field, Field(*source_, member.second, member_path(key), key_line));
    }
    return out;
  }

 private:
  [[nodiscard]] std::string member_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }
  [[nodiscard]] int line_of(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? line_ : mark.line + 1;
  }

  const std::string* source_;
  YAML::Node node_;
  std::string path_;
  int line_;
};

// ---- scalar readers: each checks type and range and names the field ----

void require_map(const Field& field, std::string_view expected);

/// Declarations may be empty (`events: []`); things to do may not.
void require_list(const Field& field, std::string_view expected, bool allow_empty = false);

/// Rejects keys outside `allowed` and keys given twice (yaml-cpp keeps both).
void check_fields(const Field& field, const field_list& allowed);

std::string read_string(const Field& field);
double read_number(const Field& field, std::string_view expected);
double read_time(const Field& field);
double read_share(const Field& field);
std::int64_t read_integer(const Field& field, std::int64_t min, std::int64_t max);

/// Counts of chunks and streams: at least one, and within Program's ids.
std::uint32_t read_count(const Field& field);

bool read_bool(const Field& field);

/// "4096", "64 KiB", "1.5GiB": humans write sizes with units. Nothing for
/// a size over limits::max_bytes, so no sum of them overflows.
std::optional<std::uint64_t> parse_byte_count(std::string_view text);

std::uint64_t read_bytes(const Field& field);

template <typename T, std::size_t N>
T read_choice(const Field& field, const std::pair<std::string_view, T> (&choices)[N]) {
  field_list names;
  for (const auto& [name, value] : choices) {
    if (field.node().IsScalar() && field.node().Scalar() == name) return value;
    names.push_back(name);
  }
  field.fail(describe(field.node()) + " is not allowed here", "one of: " + join(names));
}

/// `memory:` of a pipeline and of a copy op.
inline constexpr std::pair<std::string_view, host_memory> kMemories[] = {
    {"pinned", host_memory::pinned},
    {"pageable", host_memory::pageable},
};

}  // namespace overlap::io::spec
