// libFuzzer target: the spec parser on arbitrary text.
//
// A bad spec must come back as an overlap::error naming the problem; a crash,
// a sanitizer report, a hang or any other exception is a finding. A spec that
// parses must also survive io::to_spec: spec_writer.hpp promises that
// parse_spec reads the written text back to an equal program, and Program has
// no operator==, so the check is that writing the re-read program gives the
// same text again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "overlap/core/error.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/io/spec_writer.hpp"
#include "spec_size.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<overlap::io::Spec> parsed = overlap::fuzz::parse_small_spec(text);
  if (!parsed) return 0;
  overlap::io::Spec& spec = *parsed;

  std::string written;
  try {
    written = overlap::io::to_spec(spec.program);
  } catch (const overlap::invalid_input&) {
    return 0;  // the few programs no spec can express (spec_writer.hpp lists them)
  }
  // Not in a try: text to_spec wrote must parse.
  const overlap::io::Spec again = overlap::io::parse_spec(written, "written.yaml");
  const std::string rewritten = overlap::io::to_spec(again.program);
  if (rewritten != written) {
    std::fprintf(stderr, "to_spec round trip differs\n--- written:\n%s\n--- rewritten:\n%s\n",
                 written.c_str(), rewritten.c_str());
    std::abort();
  }
  return 0;
}
