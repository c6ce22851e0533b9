// libFuzzer target: the PyTorch profiler trace reader (read_pytorch_trace)
// and what an audit does next with what it read (capture, stream activity).
//
// Any bytes must give a RawTrace or one overlap::invalid_input naming the
// event and field; a trace that reads must capture into a Program (or be
// refused as one without CUDA activity, an invalid_input too). A crash, a
// sanitizer report, a hang or any other exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "overlap/core/error.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/stream_activity.hpp"
#include "overlap/trace/trace_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const overlap::trace::RawTrace trace = overlap::trace::read_pytorch_trace(bytes, "t.json");
    (void)overlap::trace::stream_activity(trace);
    (void)overlap::trace::capture(trace);
  } catch (const overlap::invalid_input&) {
    // The refusal a hostile trace gets: one line, exit 2 in the CLI.
  }
  return 0;
}
