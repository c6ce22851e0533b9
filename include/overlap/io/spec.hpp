// overlap::io spec files: stream programs written by hand.
//
// YAML (JSON is accepted too, being YAML) in one of two forms: a `pipeline:`
// shorthand (chunks or items, stage times or bytes, streams, issue order) or
// an explicit form (`streams:`, `events:`, `ops:`). Every error names the
// file, the line, the field and what was expected.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "overlap/core/program.hpp"

namespace overlap::io {

/// A parsed spec: the program and the device it asks for, if any.
struct Spec {
  Program program;                    ///< the stream program the spec describes
  std::optional<std::string> device;  ///< preset name or model file from `device:`
};

/// Parses spec text; `source` names it in errors ("seed004.yaml").
/// Throws overlap::invalid_input "source:line: field: problem (expected ...)".
[[nodiscard]] Spec parse_spec(std::string_view text, std::string_view source);
/// Reads and parses a spec file.
[[nodiscard]] Spec load_spec(const std::filesystem::path& path);

}  // namespace overlap::io
