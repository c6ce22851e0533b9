// libFuzzer target: the device-model loader on arbitrary JSON.
//
// A bad model must come back as an overlap::error; a crash, a sanitizer
// report, a hang or any other exception is a finding. What from_json accepts
// must then be usable: to_json must write it back readably (to the same text
// again), and the simulator, the checker and the summary must run on it,
// since `overlap simulate --device model.json` feeds a model file straight
// to them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "overlap/check/check.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

// Small, and touching every figure a model has: copies timed by the curves in
// both directions, pinned and pageable, a D2D copy and a memset, kernels that
// share the SMs, more streams than the default hardware queues, a host
// function, events, a synchronous copy on the legacy stream and every kind
// of host call.
constexpr std::string_view kProgram = R"(
name: every-model-figure
ops:
  - {op: host_alloc, time: 0.01}
  - {op: malloc}
  - {op: h2d, stream: s1, bytes: 1 MiB, writes: [a]}
  - {op: h2d, stream: s2, bytes: 300 KiB, memory: pageable, writes: [b]}
  - {op: kernel, stream: s1, time: 0.2, share: 0.5, reads: [a], writes: [a]}
  - {op: record, stream: s1, event: e1}
  - {op: wait, stream: s2, event: e1}
  - {op: kernel, stream: s2, time: 0.1, share: 0.75, reads: [a, b]}
  - {op: d2h, stream: s1, bytes: 4 MiB, writes: [a]}
  - {op: h2d, stream: s3, bytes: 64 MiB}
  - {op: d2d, stream: s4, bytes: 2 MiB}
  - {op: memset, stream: s5, bytes: 8 KiB}
  - {op: d2h, stream: s6, bytes: 1 B, memory: pageable}
  - {op: kernel, stream: s7, time: 0.01}
  - {op: kernel, stream: s8, time: 0.01}
  - {op: kernel, stream: s9, time: 0.01}
  - {op: host_func, stream: s2, time: 0.05}
  - {op: d2h, sync: true, bytes: 16 MiB}
  - {op: event_sync, event: e1}
  - {op: stream_sync, stream: s2}
  - {op: host_work, time: 0.3}
  - {op: free}
  - {op: device_sync}
  - {op: host_free}
streams: [s1, s2, {name: s3, kind: non_blocking}, s4, s5, s6, s7, s8, {name: s9, priority: 1}]
events: [e1]
)";

const overlap::Program& program() {
  static const overlap::Program parsed = overlap::io::parse_spec(kProgram, "device_model_fuzz.cpp").program;
  return parsed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  overlap::DeviceModel model;
  try {
    model = overlap::DeviceModel::from_json(text);
  } catch (const overlap::error&) {
    return 0;
  }

  // Not in a try: a model from_json accepted must write back and read back.
  const std::string written = model.to_json();
  const std::string rewritten = overlap::DeviceModel::from_json(written).to_json();
  if (rewritten != written) {
    std::fprintf(stderr, "DeviceModel JSON round trip differs\n--- written:\n%s\n--- rewritten:\n%s\n",
                 written.c_str(), rewritten.c_str());
    std::abort();
  }

  try {
    const overlap::Timeline timeline = overlap::sim::simulate(program(), model);
    (void)overlap::io::to_summary(timeline);
    (void)overlap::check::format_text(overlap::check::check_program(program(), model));
  } catch (const overlap::error&) {
    return 0;  // a model may lack what an op needs; saying so is fine
  }
  return 0;
}
