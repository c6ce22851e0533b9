// libFuzzer target: the trace reader (trace::TraceReader, read_trace).
//
// An audit reads a running app's trace file in whatever pieces the file
// grows by. The bytes, cut at a point the input chooses and again at every
// 7th byte, must read exactly as the whole file does: the same records, or
// the same error (one overlap::invalid_input naming the line). A crash, a
// sanitizer report, a hang, any other exception or a difference is a
// finding. A trace that reads must then capture into a Program (or be
// refused with an invalid_input): the graph records' nodes, edges and clones,
// and the pointers kernels pass, are walked there. The same bytes are also
// read as a measuring run's file (`--accesses measured`) and joined to the
// trace, or to an empty one: its allocations, launches and ranges.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "overlap/core/error.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/measured_run.hpp"
#include "overlap/trace/trace_file.hpp"

namespace {

/// What a read gave, compact enough to compare: the error, or the counts and sums of its records.
std::string outcome(const std::string_view bytes, std::size_t piece, std::size_t first_cut) {
  try {
    overlap::trace::RawTrace t;
    if (piece == 0) {
      std::istringstream in{std::string(bytes)};
      t = overlap::trace::read_trace(in, "t.jsonl");
    } else {
      overlap::trace::TraceReader reader("t.jsonl");
      reader.feed(bytes.substr(0, first_cut));
      for (std::size_t at = first_cut; at < bytes.size(); at += piece) reader.feed(bytes.substr(at, piece));
      t = std::move(reader).finish();
    }
    std::uint64_t sum = 0;
    for (const overlap::trace::Call& c : t.calls) sum += c.corr + c.start + c.end + c.bytes;
    for (const overlap::trace::DeviceWork& w : t.work) sum += w.corr + w.start + w.end + w.bytes;
    return "v" + std::to_string(t.version) + " calls " + std::to_string(t.calls.size()) + " work " +
           std::to_string(t.work.size()) + " streams " + std::to_string(t.streams.size()) + " ranges " +
           std::to_string(t.ranges.size()) + " unknown " + std::to_string(t.unknown_records) + " complete " +
           std::to_string(static_cast<int>(t.complete)) + " sum " + std::to_string(sum);
  } catch (const overlap::invalid_input& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  const std::string whole = outcome(bytes, 0, 0);
  const std::string in_pieces = outcome(bytes, 7, cut);
  if (whole != in_pieces) {
    std::fprintf(stderr, "the trace read in pieces differs from the whole file\n  whole:  %s\n  pieces: %s\n",
                 whole.c_str(), in_pieces.c_str());
    std::abort();
  }
  overlap::trace::RawTrace trace;
  if (!whole.starts_with("error: ")) {
    std::istringstream in{std::string(bytes)};
    trace = overlap::trace::read_trace(in, "t.jsonl");
  }
  try {
    std::istringstream in{std::string(bytes)};
    (void)overlap::trace::join_measured_run(trace, in, "accesses.jsonl");
  } catch (const overlap::invalid_input&) {
    // Not a measuring run's file: refused as one.
  }
  if (!whole.starts_with("error: ")) {
    try {
      (void)overlap::trace::capture(trace);
    } catch (const overlap::invalid_input&) {
      // A trace that reads but cannot be captured (no CUDA work) is refused as one.
    }
  }
  return 0;
}
