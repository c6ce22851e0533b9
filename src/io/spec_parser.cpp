// Spec files -> Program, the top level: the YAML is loaded, the top-level
// fields checked, and the program read by its form (spec_forms.hpp: the
// `pipeline:` shorthand or the explicit ops: list). Field and the scalar
// readers that every part shares are in spec_fields.hpp.
#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/io/spec.hpp"
#include "spec_fields.hpp"
#include "spec_forms.hpp"

namespace overlap::io {

namespace {

using spec::check_fields;
using spec::Field;
using spec::field_list;
using spec::read_explicit;
using spec::read_pipeline;
using spec::read_string;
using spec::require_map;

const field_list kTopFields = {"name", "time_unit", "device", "devices", "pipeline",
                               "ops",  "streams",   "events", "buffers"};
constexpr std::string_view kTopExpected = "a map with name, time_unit, device, and pipeline: or ops:";

Program read_program(const Field& root) {
  const std::optional<Field> pipeline = root.get("pipeline");
  const std::optional<Field> ops = root.get("ops");
  if (pipeline && ops) {
    const Field& later = pipeline->line() > ops->line() ? *pipeline : *ops;
    later.fail("both pipeline: and ops: given", "exactly one of them");
  }
  if (!pipeline && !ops) root.fail("neither pipeline: nor ops: given", "exactly one of them");
  if (ops) return read_explicit(root, *ops);
  // A pipeline makes its own streams; declarations would be silently unused.
  for (const std::string_view key : {"streams", "events", "buffers"}) {
    if (auto field = root.get(key)) {
      field->fail("not allowed with pipeline:", "it only with ops:; a pipeline makes its own streams");
    }
  }
  if (auto field = root.get("devices"))
    field->fail("not allowed beside pipeline:",
                "devices: inside pipeline: (the GPUs its chunks spread over)");
  return read_pipeline(*pipeline);
}

Spec read_spec(const Field& root) {
  if (root.node().IsNull()) root.fail("the file is empty", kTopExpected);
  require_map(root, kTopExpected);
  check_fields(root, kTopFields);
  Spec spec;
  spec.program = read_program(root);
  if (auto name = root.get("name")) spec.program.name = read_string(*name);
  if (auto unit = root.get("time_unit")) spec.program.time_unit = read_string(*unit);
  if (auto device = root.get("device")) spec.device = read_string(*device);
  return spec;
}

[[noreturn]] void fail_yaml(const YAML::Exception& e, const std::string& source) {
  const int line = e.mark.is_null() ? 1 : e.mark.line + 1;
  throw invalid_input(
      fmt::format("{}:{}: syntax error: {} (expected well-formed YAML or JSON)", source, line, e.msg));
}

}  // namespace

Spec parse_spec(std::string_view text, std::string_view source) {
  const std::string source_name(source);
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return read_spec(Field(source_name, root, "", 1));
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own text for it is "bad file".
    throw invalid_input(
        fmt::format("{}:{}: syntax error: lists and maps nested too deep (expected a few levels: "
                    "a spec nests 4)",
                    source_name, e.mark.is_null() ? 1 : e.mark.line + 1));
  } catch (const YAML::Exception& e) {
    fail_yaml(e, source_name);
  }
}

Spec load_spec(const std::filesystem::path& path) {
  const std::string text = limits::read_file(
      path.string(), limits::max_spec_file_bytes, "spec file",
      "yaml-cpp needs ~100 bytes of memory per byte; write long pipelines in the pipeline: form");
  return parse_spec(text, path.string());
}

}  // namespace overlap::io
