// libFuzzer target: timeline JSON read back (io::timeline_from_json) and drawn
// by every exporter.
//
// The simulator only ever makes well-formed timelines; a timeline file can
// hold anything the reader accepts (spans out of order, overlapping, far
// apart, waiting for ops that do not exist), and each exporter must draw it
// or refuse it with an overlap::error. A crash, a sanitizer report, a hang or
// any other exception is a finding. An accepted timeline must also write back
// to JSON that reads back to the same JSON.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  overlap::Timeline timeline;
  try {
    timeline = overlap::io::timeline_from_json(text);
  } catch (const overlap::error&) {
    return 0;
  }

  // Not in a try: what was read must write back and read back.
  const std::string json = overlap::io::to_json(timeline);
  const std::string json_again = overlap::io::to_json(overlap::io::timeline_from_json(json));
  if (json_again != json) {
    std::fprintf(stderr, "timeline JSON round trip differs\n--- written:\n%s\n--- rewritten:\n%s\n",
                 json.c_str(), json_again.c_str());
    std::abort();
  }

  // By name, so that a format added later is fuzzed too.
  for (const std::string& name : overlap::io::format_names()) {
    try {
      (void)overlap::io::render(timeline, overlap::io::parse_format(name).value());
    } catch (const overlap::error&) {
    }
  }
  try {
    (void)overlap::io::to_html_comparison(timeline, timeline);
  } catch (const overlap::error&) {
  }
  return 0;
}
