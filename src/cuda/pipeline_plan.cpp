// Argument checks and chunking for Pipeline: plain C++, no CUDA call, so bad
// input is rejected before anything touches the device.
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/sim/plan.hpp"

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

/// The planner's chunk size and stream count for a run.
struct planned_chunking {
  std::size_t chunk_elements = 0;
  unsigned streams = 0;
};

// Chunk sizes the planner may try: powers of two from 256 KiB up to the
// input, each a whole number of ratio.in elements, and the whole input.
std::vector<std::uint64_t> candidate_sizes(std::size_t in_bytes, std::size_t unit_bytes) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = 256 * 1024; size < in_bytes; size *= 2) {
    const std::uint64_t rounded = size / unit_bytes * unit_bytes;
    if (rounded > 0 && (sizes.empty() || rounded != sizes.back())) sizes.push_back(rounded);
  }
  const std::uint64_t whole = (in_bytes + unit_bytes - 1) / unit_bytes * unit_bytes;
  if (sizes.empty() || whole != sizes.back()) sizes.push_back(whole);
  return sizes;
}

planned_chunking plan_with_model(const erased_run& run, const pipeline_options& o, const DeviceModel& model,
                                 std::size_t output_elements) {
  const std::size_t in_bytes = run.input_elements * run.input_element_bytes;
  const std::size_t unit_bytes = o.ratio.in * run.input_element_bytes;
  sim::Workload w;
  w.bytes_in = in_bytes;
  w.bytes_out = output_elements * run.output_element_bytes;
  w.kernel_cost = o.stage_cost;
  w.device_budget = o.device_budget_bytes;
  sim::PlanOptions po;
  po.chunk_sizes = candidate_sizes(in_bytes, unit_bytes);
  po.max_chunks = 1024;
  std::erase_if(po.chunk_sizes,
                [&](std::uint64_t size) { return (in_bytes + size - 1) / size > po.max_chunks; });
  po.max_streams =
      std::min(o.streams.value_or(8U), 8U);  // the chunk is planned for at most 8; given streams are kept
  po.orders = {issue_order::depth_first};    // the order Pipeline issues in
  po.schedules = false;                      // Pipeline cuts uniform chunks
  po.ring_factors = {1};
  // Planning a 256 MiB run takes tens of milliseconds: remember the last
  // answer, since a program runs the same sizes again and again.
  struct cache_entry {
    std::string key;
    planned_chunking answer;
  };
  static std::mutex mutex;
  static cache_entry last;
  std::string key = fmt::format("{}/{}/{}/{}/{}/{}/", w.bytes_in, w.bytes_out, unit_bytes, po.max_streams,
                                w.device_budget.value_or(0), o.ring_depth.value_or(0));
  if (w.kernel_cost) key += w.kernel_cost->to_json();
  key += model.to_json();
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (last.key == key) return last.answer;
  }
  sim::Plan result;
  try {
    result = sim::plan(w, model, po);
  } catch (const invalid_input& e) {
    // The planner names its own fields; say which option they came from.
    const std::string what = e.what();
    if (what.starts_with("device_budget:"))
      throw invalid_input("device_budget_bytes:" + what.substr(std::string("device_budget:").size()));
    throw;
  }
  planned_chunking answer{static_cast<std::size_t>(result.best.largest_chunk_bytes / run.input_element_bytes),
                          o.streams.value_or(result.best.streams)};
  const std::lock_guard<std::mutex> lock(mutex);
  last = {std::move(key), answer};
  return answer;
}

}  // namespace

plan make_plan(const erased_run& run, const pipeline_options& o, const DeviceModel* detected) {
  const std::size_t output_needed = required_output(run, o.ratio);
  require_spans(run, output_needed);
  plan p;
  p.streams = o.streams.value_or(automatic_streams);
  if (p.streams == 0)
    throw invalid_input("streams: 0 is out of range (expected >= 1, or empty for automatic)");
  const DeviceModel* model = o.model ? &*o.model : detected;
  std::optional<planned_chunking> planned;
  if (!o.chunk_bytes && o.chunking == automatic_chunking::planned && model != nullptr &&
      run.input_elements > 0 && (!o.streams || *o.streams > 0)) {
    planned = plan_with_model(run, o, *model, output_needed);
    p.streams = planned->streams;
  }
  p.ring_depth = o.ring_depth.value_or(p.streams);
  if (p.ring_depth < p.streams) {
    throw invalid_input(
        fmt::format("ring_depth: {} is out of range (expected >= streams = {})", p.ring_depth, p.streams));
  }
  p.chunk_input_elements = chunk_elements(run, o, p.ring_depth);
  if (planned) {
    // The planner sized its ring as one slot per stream; a deeper ring
    // shrinks the chunk to the budget as the fixed fraction does.
    p.chunk_input_elements = o.device_budget_bytes ? std::min(planned->chunk_elements, p.chunk_input_elements)
                                                   : planned->chunk_elements;
  }
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
