// Argument checks and chunking for Pipeline: plain C++, no CUDA call, so bad
// input is rejected before anything touches the device.
#include <fmt/format.h>

#include <algorithm>

#include "overlap/core/error.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace overlap::cuda::detail {

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr unsigned automatic_streams = 4;

void require_spans(const erased_run& run, std::size_t required_output) {
  if (run.input == nullptr && run.input_elements > 0)
    throw invalid_input("input: null span with a nonzero size");
  if (run.output == nullptr && run.output_elements > 0)
    throw invalid_input("output: null span with a nonzero size");
  if (run.output_elements < required_output) {
    throw invalid_input(fmt::format("output: {} elements is too small for {} input elements (expected >= {})",
                                    run.output_elements, run.input_elements, required_output));
  }
}

std::size_t required_output(const erased_run& run, const output_ratio& ratio) {
  if (ratio.out == 0 || ratio.in == 0) {
    throw invalid_input(fmt::format(
        "ratio: {}/{} is out of range (expected positive output and input counts)", ratio.out, ratio.in));
  }
  if ((run.input_elements * ratio.out) % ratio.in != 0) {
    throw invalid_input(fmt::format("ratio: {} input elements do not give a whole number of outputs at {}/{}",
                                    run.input_elements, ratio.out, ratio.in));
  }
  return run.input_elements * ratio.out / ratio.in;
}

// Input elements per chunk: a multiple of ratio.in so each chunk's output is whole.
std::size_t chunk_elements(const erased_run& run, const pipeline_options& o, unsigned depth) {
  const std::size_t element = run.input_element_bytes;
  if (o.chunk_bytes) {
    const std::size_t bytes = *o.chunk_bytes;
    if (bytes == 0)
      throw invalid_input("chunk_bytes: 0 is out of range (expected > 0, or empty for automatic)");
    if (bytes % element != 0) {
      throw invalid_input(fmt::format(
          "chunk_bytes: {} is not a multiple of the input element size ({} bytes)", bytes, element));
    }
    const std::size_t elements = bytes / element;
    if (elements % o.ratio.in != 0) {
      throw invalid_input(
          fmt::format("chunk_bytes: {} elements per chunk do not give whole outputs at ratio {}/{} (expected "
                      "a multiple of {})",
                      elements, o.ratio.out, o.ratio.in, o.ratio.in));
    }
    return elements;
  }
  // 1/64 of the data keeps pipeline fill and drain near 3% of the run;
  // 1 MiB copies already reach ~85% of peak bandwidth on PCIe Gen5.
  std::size_t bytes = std::clamp(run.input_elements * element / 64, MiB, 16 * MiB);
  if (o.device_budget_bytes) {
    // The ring holds depth slots of input plus output.
    const double per_input_byte = 1.0 + static_cast<double>(o.ratio.out * run.output_element_bytes) /
                                            static_cast<double>(o.ratio.in * element);
    bytes = std::min(bytes, static_cast<std::size_t>(static_cast<double>(*o.device_budget_bytes) /
                                                     (depth * per_input_byte)));
  }
  const std::size_t unit = o.ratio.in;
  const std::size_t elements = bytes / element / unit * unit;
  if (elements == 0) {
    throw invalid_input(
        fmt::format("device_budget_bytes: {} bytes cannot hold {} ring slots of one chunk each",
                    o.device_budget_bytes.value_or(0), depth));
  }
  return elements;
}

}  // namespace

plan make_plan(const erased_run& run, const pipeline_options& o) {
  const std::size_t output_needed = required_output(run, o.ratio);
  require_spans(run, output_needed);
  plan p;
  p.streams = o.streams.value_or(automatic_streams);
  if (p.streams == 0)
    throw invalid_input("streams: 0 is out of range (expected >= 1, or empty for automatic)");
  p.ring_depth = o.ring_depth.value_or(p.streams);
  if (p.ring_depth < p.streams) {
    throw invalid_input(
        fmt::format("ring_depth: {} is out of range (expected >= streams = {})", p.ring_depth, p.streams));
  }
  p.chunk_input_elements = chunk_elements(run, o, p.ring_depth);
  p.chunk_output_elements = p.chunk_input_elements * o.ratio.out / o.ratio.in;
  p.output_elements = output_needed;
  if (o.device_budget_bytes) {
    const std::size_t ring = p.ring_depth * (p.chunk_input_elements * run.input_element_bytes +
                                             p.chunk_output_elements * run.output_element_bytes);
    if (ring > *o.device_budget_bytes) {
      throw invalid_input(fmt::format(
          "device_budget_bytes: the ring needs {} bytes ({} slots of chunk_bytes {}), over "
          "the budget of {}",
          ring, p.ring_depth, p.chunk_input_elements * run.input_element_bytes, *o.device_budget_bytes));
    }
  }
  p.chunks = (run.input_elements + p.chunk_input_elements - 1) / p.chunk_input_elements;
  return p;
}

}  // namespace overlap::cuda::detail
