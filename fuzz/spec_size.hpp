// The size guard of the spec targets. A few bytes of `pipeline: {chunks:
// 600000}` or `streams: 1000000` make a program the parser rightly accepts
// (up to limits::max_ops and max_streams) but that takes the instrumented
// build far past libFuzzer's 2 s an input, or its 2 GiB, to build, write
// back, simulate and export: that is a timeout without a bug. The targets
// skip such specs, before parsing (the pipeline's counts, read as parse_spec
// reads them) and after (the program's ops and streams, whatever made them).
// Big programs are not the point of fuzzing; odd ones are.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "overlap/core/error.hpp"
#include "overlap/core/program.hpp"
#include "overlap/io/spec.hpp"

namespace overlap::fuzz {

/// Ops plus streams a target runs well within 2 s (about 0.5 s on one core
/// with ASan, UBSan and libFuzzer's coverage, for spec_pipeline).
inline constexpr std::uint64_t kMaxProgramSize = 500;

/// Ops plus streams the `pipeline:` of `text` asks for; 0 for anything else,
/// which parse_spec reads (or refuses) as it comes.
inline std::uint64_t pipeline_size(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception&) {
    return 0;
  }
  if (!root.IsMap()) return 0;
  const YAML::Node pipeline = static_cast<const YAML::Node&>(root)["pipeline"];
  if (!pipeline || !pipeline.IsMap()) return 0;
  const auto count = [&pipeline](const char* key) -> std::uint64_t {
    const YAML::Node field = pipeline[key];
    long long value = 0;  // YAML::convert<long long>, as spec_fields.cpp's read_integer
    if (field && field.IsScalar() && YAML::convert<long long>::decode(field, value) && value > 0)
      return static_cast<std::uint64_t>(value);
    if (field && field.IsSequence()) return field.size();
    return 1;
  };
  // Counts past 2^32 are refused by the parser (and would overflow here).
  const std::uint64_t most = std::uint64_t{1} << 32;
  const std::uint64_t chunks =
      std::min(most, std::max({count("chunks"), count("items"), count("chunk_schedule")}));
  return 3 * chunks + std::min(most, count("streams"));
}

/// True for a spec text, and then its program, of at most kMaxProgramSize.
inline bool small_enough(std::string_view text) {
  return pipeline_size(text) <= kMaxProgramSize;
}
inline bool small_enough(const Program& program) {
  return program.ops().size() + program.streams().size() <= kMaxProgramSize;
}

/// The spec `text` parses to when it is small enough on both counts; nothing
/// when it is not, or when parse_spec refuses it (an expected outcome).
inline std::optional<io::Spec> parse_small_spec(std::string_view text) {
  if (!small_enough(text)) return std::nullopt;
  try {
    io::Spec spec = io::parse_spec(text, "fuzz.yaml");
    if (!small_enough(spec.program)) return std::nullopt;
    return spec;
  } catch (const error&) {
    return std::nullopt;
  }
}

}  // namespace overlap::fuzz
