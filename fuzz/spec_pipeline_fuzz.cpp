// libFuzzer target: spec -> simulate -> check -> every exporter, as `overlap
// simulate` and `overlap check` chain them.
//
// Only parsing, simulating and checking may refuse a program (with an
// overlap::error). Once the simulator has made a timeline, every exporter must
// render it and the JSON must read back to the same JSON: an exception there
// is a finding, as are crashes, sanitizer reports and hangs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/check/check.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"
#include "spec_size.hpp"

namespace {

// `device:` may name a model file, and the fuzzer must not make the target
// read arbitrary paths (/dev/zero); presets it may choose, else h100, the
// default of `overlap check`.
const overlap::DeviceModel& model_for(const std::optional<std::string>& device) {
  static const std::map<std::string, overlap::DeviceModel, std::less<>> presets = [] {
    std::map<std::string, overlap::DeviceModel, std::less<>> all;
    for (const std::string& name : overlap::DeviceModel::preset_names())
      all.emplace(name, overlap::DeviceModel::preset(name));
    return all;
  }();
  const auto found = device ? presets.find(*device) : presets.end();
  return found != presets.end() ? found->second : presets.at("h100");
}

// The findings above the chart, as `overlap check --format html` shows them.
std::vector<overlap::io::HtmlFinding> html_findings(const overlap::check::Report& report) {
  std::vector<overlap::io::HtmlFinding> findings;
  for (const overlap::check::Finding& f : report.findings) {
    overlap::io::HtmlFinding h;
    h.level = std::string(overlap::check::to_string(f.level));
    h.rule = f.rule;
    h.message = f.message;
    h.fix = f.fix;
    for (const overlap::check::OpRef& ref : f.ops) h.ops.push_back(ref.id);
    if (f.time_lost) h.cost = "time lost: " + overlap::io::format_number(*f.time_lost);
    findings.push_back(std::move(h));
  }
  return findings;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<overlap::io::Spec> parsed = overlap::fuzz::parse_small_spec(text);
  if (!parsed) return 0;
  overlap::io::Spec& spec = *parsed;
  const overlap::DeviceModel& model = model_for(spec.device);

  overlap::Timeline timeline;
  overlap::check::Report report;
  try {
    timeline = overlap::sim::simulate(spec.program, model);
    report = overlap::check::check_program(spec.program, model);
  } catch (const overlap::error&) {
    return 0;  // e.g. a copy with bytes but no time on the unit model
  }

  // By name, so that a format added later is fuzzed too.
  for (const std::string& name : overlap::io::format_names()) {
    (void)overlap::io::render(timeline, overlap::io::parse_format(name).value());
  }
  (void)overlap::check::format_text(report);
  (void)overlap::check::format_json(report);
  (void)overlap::io::to_html(timeline, html_findings(report));

  const std::string json = overlap::io::to_json(timeline);
  const overlap::Timeline read_back = overlap::io::timeline_from_json(json);
  const std::string json_again = overlap::io::to_json(read_back);
  if (json_again != json) {
    std::fprintf(stderr, "timeline JSON round trip differs\n--- written:\n%s\n--- rewritten:\n%s\n",
                 json.c_str(), json_again.c_str());
    std::abort();
  }
  (void)overlap::io::to_html_comparison(timeline, read_back);
  return 0;
}
