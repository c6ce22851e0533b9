// Argument checks and chunking for Pipeline: plain C++, no CUDA call, so bad
// input is rejected before anything touches the device.
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/sim/plan.hpp"

namespace overlap::cuda::detail {

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr unsigned automatic_streams = 4;
// An upload, a download and three kernel streams: with one, a chunk's
// kernel cannot start before the last one's final wave ends (a compute-bound
// run took 1.26x the kernel alone on an H100; three: 1.007x).
constexpr unsigned automatic_stage_streams = 5;

// per_stage unless the caller asked for round-robin streams or something
// this assignment does not serve (the planner's round-robin search, a Feed
// of staged slots).
issue_order resolve_order(const pipeline_options& o) {
  switch (o.assignment) {
    case stream_assignment::round_robin: return issue_order::depth_first;
    case stream_assignment::per_stage: return issue_order::stage_streams;
    case stream_assignment::automatic: break;
  }
  const bool may_stage = o.pageable == pageable_memory::stage || o.pageable == pageable_memory::automatic;
  return o.streams || plans_chunking(o) || may_stage ? issue_order::depth_first : issue_order::stage_streams;
}

void require_spans(const erased_run& run, std::size_t required_output) {
  require_non_null(run);
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
std::size_t chunk_elements(const erased_run& run, const pipeline_options& o, unsigned depth,
                           issue_order order) {
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
  // 1 MiB copies already reach ~85% of peak bandwidth on PCIe Gen5. Per
  // stage, copies cost ~4.5 us each even back to back on one engine, and a
  // run pays its first upload and last download alone: 8 MiB balances the
  // two for 256 MiB on an H100 (bench/RESULTS.md, issue 11, part 5).
  std::size_t bytes = order == issue_order::stage_streams
                          ? std::clamp(run.input_elements * element / 32, MiB, 8 * MiB)
                          : std::clamp(run.input_elements * element / 64, MiB, 16 * MiB);
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

// An explicit schedule, checked entry by entry, as input elements per chunk.
std::vector<std::size_t> schedule_elements(const erased_run& run, const pipeline_options& o) {
  if (o.chunk_bytes) {
    throw invalid_input(fmt::format(
        "chunk_schedule: given with chunk_bytes = {} (expected one way to size the chunks)", *o.chunk_bytes));
  }
  const std::size_t element = run.input_element_bytes;
  const std::size_t input_bytes = run.input_elements * element;
  std::vector<std::size_t> elements;
  elements.reserve(o.chunk_schedule.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < o.chunk_schedule.size(); ++i) {
    const std::size_t bytes = o.chunk_schedule[i];
    if (bytes == 0)
      throw invalid_input(fmt::format("chunk_schedule[{}]: 0 is out of range (expected > 0)", i));
    if (bytes % element != 0) {
      throw invalid_input(
          fmt::format("chunk_schedule[{}]: {} is not a multiple of the input element size ({} bytes)", i,
                      bytes, element));
    }
    const std::size_t count = bytes / element;
    if (i + 1 < o.chunk_schedule.size() && count % o.ratio.in != 0) {
      throw invalid_input(
          fmt::format("chunk_schedule[{}]: {} elements do not give whole outputs at ratio {}/{} (expected a "
                      "multiple of {})",
                      i, count, o.ratio.out, o.ratio.in, o.ratio.in));
    }
    if (count > run.input_elements - total) {
      throw invalid_input(fmt::format(
          "chunk_schedule: entries 0..{} add up to more than the input's {} bytes", i, input_bytes));
    }
    total += count;
    elements.push_back(count);
  }
  if (total != run.input_elements) {
    throw invalid_input(fmt::format("chunk_schedule: adds up to {} bytes (expected the input's {} bytes)",
                                    total * element, input_bytes));
  }
  return elements;
}

/// The planner's chunking for a run.
struct planned_chunking {
  std::size_t chunk_elements = 0;     ///< uniform chunks, or the schedule's largest
  std::vector<std::size_t> schedule;  ///< input elements per chunk when they vary
  unsigned streams = 0;
};

// The planner's schedule (bytes per chunk) in whole units of `unit`
// elements: each boundary between chunks rounded to the nearest unit, the
// last chunk taking the rest, chunks that vanish dropped.
std::vector<std::size_t> aligned_schedule(const std::vector<std::uint64_t>& bytes, std::size_t total_elements,
                                          std::size_t element_bytes, std::size_t unit) {
  std::vector<std::size_t> elements;
  std::uint64_t prefix_bytes = 0;
  std::size_t done = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    prefix_bytes += bytes[i];
    std::size_t boundary = total_elements;
    if (i + 1 < bytes.size()) {
      const std::uint64_t unit_bytes = element_bytes * unit;
      boundary = std::min<std::size_t>(total_elements, (prefix_bytes + unit_bytes / 2) / unit_bytes * unit);
    }
    if (boundary > done) {
      elements.push_back(boundary - done);
      done = boundary;
    }
  }
  return elements;
}

// Chunk sizes the planner may try: powers of two from 256 KiB up to the
// input, each a whole number of ratio.in elements, and the whole input.
std::vector<std::uint64_t> candidate_sizes(std::size_t in_bytes, std::size_t unit_bytes) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = std::uint64_t{256} * 1024; size < in_bytes; size *= 2) {
    const std::uint64_t rounded = size / unit_bytes * unit_bytes;
    if (rounded > 0 && (sizes.empty() || rounded != sizes.back())) sizes.push_back(rounded);
  }
  const std::uint64_t whole = (in_bytes + unit_bytes - 1) / unit_bytes * unit_bytes;
  if (sizes.empty() || whole != sizes.back()) sizes.push_back(whole);
  return sizes;
}

planned_chunking plan_with_model(const erased_run& run, const pipeline_options& o, const DeviceModel& model,
                                 const std::optional<KernelCost>& stage_cost, std::size_t output_elements) {
  const std::size_t in_bytes = run.input_elements * run.input_element_bytes;
  const std::size_t unit_bytes = o.ratio.in * run.input_element_bytes;
  sim::Workload w;
  w.bytes_in = in_bytes;
  w.bytes_out = output_elements * run.output_element_bytes;
  w.kernel_cost = stage_cost;
  w.device_budget = o.device_budget_bytes;
  sim::PlanOptions po;
  po.chunk_sizes = candidate_sizes(in_bytes, unit_bytes);
  po.max_chunks = 1024;
  std::erase_if(po.chunk_sizes,
                [&](std::uint64_t size) { return (in_bytes + size - 1) / size > po.max_chunks; });
  po.max_streams =
      std::min(o.streams.value_or(8U), 8U);  // the chunk is planned for at most 8; given streams are kept
  po.orders = {issue_order::depth_first};    // the order Pipeline issues in
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
  planned_chunking answer;
  answer.streams = o.streams.value_or(result.best.streams);
  if (result.best.shape.chunk_schedule.empty()) {
    answer.chunk_elements =
        static_cast<std::size_t>(result.best.largest_chunk_bytes / run.input_element_bytes);
  } else {
    answer.schedule = aligned_schedule(result.best.shape.chunk_schedule, run.input_elements,
                                       run.input_element_bytes, o.ratio.in);
    answer.chunk_elements = *std::max_element(answer.schedule.begin(), answer.schedule.end());
  }
  const std::lock_guard<std::mutex> lock(mutex);
  last = {std::move(key), answer};
  return answer;
}

}  // namespace

pageable_memory resolve_pageable(pageable_memory policy, std::size_t pageable_bytes,
                                 const DeviceModel* model) {
  if (policy != pageable_memory::automatic) return policy;
  if (model == nullptr || model->host_staging.empty() || !model->host_register_ms_per_gib ||
      !model->host_unregister_ms_per_gib) {
    return pageable_memory::stage;
  }
  const double gib = static_cast<double>(pageable_bytes) / static_cast<double>(std::size_t{1} << 30);
  const double register_ms = gib * (*model->host_register_ms_per_gib + *model->host_unregister_ms_per_gib);
  double best_gbps = 0.0;
  for (const StagingPoint& p : model->host_staging) best_gbps = std::max(best_gbps, p.gigabytes_per_second);
  const double stage_ms = static_cast<double>(pageable_bytes) / (best_gbps * 1e6);
  return register_ms < stage_ms ? pageable_memory::register_in_place : pageable_memory::stage;
}

std::optional<std::size_t> staged_chunk_bytes(const erased_run& run, const pipeline_options& options) {
  if (options.chunk_bytes || !options.chunk_schedule.empty() || plans_chunking(options) ||
      options.device_budget_bytes) {
    return std::nullopt;
  }
  // Measured on an H100, 256 MiB each way: 8 MiB chunks 9.3-10.4 ms, the
  // round-robin default's 4 MiB 14.2-15.6, 1 MiB 31-37 (bench/RESULTS.md,
  // issue 12 part 4): a staged chunk pays a host copy round and a hand-off
  // each way on top of its copies.
  const std::size_t unit = run.input_element_bytes * options.ratio.in;
  if (unit == 0) return std::nullopt;  // make_plan names the bad ratio or element size
  const std::size_t bytes = std::clamp(run.input_elements * run.input_element_bytes / 32, MiB, 8 * MiB);
  return std::max(unit, bytes / unit * unit);
}

unsigned staging_threads(const DeviceModel* model) {
  unsigned threads = std::max(std::thread::hardware_concurrency(), 2U);
  if (model != nullptr && !model->host_staging.empty()) {
    const auto best = std::max_element(model->host_staging.begin(), model->host_staging.end(),
                                       [](const StagingPoint& a, const StagingPoint& b) {
                                         return a.gigabytes_per_second < b.gigabytes_per_second;
                                       });
    threads = std::min(threads, best->threads);
  }
  return std::clamp(threads / 2, 1U, 8U);
}

void require_non_null(const erased_run& run) {
  if (run.input == nullptr && run.input_elements > 0)
    throw invalid_input("input: null span with a nonzero size");
  if (run.output == nullptr && run.output_elements > 0)
    throw invalid_input("output: null span with a nonzero size");
}

plan make_plan(const erased_run& run, const pipeline_options& o, const DeviceModel* detected,
               chunk_planning planning, const KernelCost* calibrated_stage) {
  const std::size_t output_needed = required_output(run, o.ratio);
  require_spans(run, output_needed);
  plan p;
  p.order = resolve_order(o);
  const bool per_stage = p.order == issue_order::stage_streams;
  p.streams = o.streams.value_or(per_stage ? automatic_stage_streams : automatic_streams);
  if (p.streams == 0)
    throw invalid_input("streams: 0 is out of range (expected >= 1, or empty for automatic)");
  if (per_stage && p.streams < 3) {
    throw invalid_input(fmt::format(
        "streams: {} is out of range for stream_assignment::per_stage (expected >= 3: an upload, a kernel "
        "and a download stream)",
        p.streams));
  }
  if (!o.chunk_schedule.empty()) p.schedule = schedule_elements(run, o);
  const DeviceModel* model = o.model ? &*o.model : detected;
  std::optional<planned_chunking> planned;
  if (planning == chunk_planning::allowed && plans_chunking(o) && model != nullptr &&
      run.input_elements > 0) {
    planned = plan_with_model(run, o, *model,
                              calibrated_stage ? std::optional<KernelCost>(*calibrated_stage) : o.stage_cost,
                              output_needed);
    if (!per_stage) p.streams = planned->streams;  // per stage, streams are roles, not the planner's count
  }
  p.ring_depth = o.ring_depth.value_or(p.streams);
  if (p.ring_depth < p.streams) {
    throw invalid_input(
        fmt::format("ring_depth: {} is out of range (expected >= streams = {})", p.ring_depth, p.streams));
  }
  const double out_per_in_byte = static_cast<double>(o.ratio.out * run.output_element_bytes) /
                                 static_cast<double>(o.ratio.in * run.input_element_bytes);
  const auto ring_fits = [&](std::size_t chunk_elements) {
    if (!o.device_budget_bytes) return true;
    const double slot =
        static_cast<double>(chunk_elements * run.input_element_bytes) * (1.0 + out_per_in_byte);
    return static_cast<double>(p.ring_depth) * slot <= static_cast<double>(*o.device_budget_bytes);
  };
  if (!p.schedule.empty()) {
    p.chunk_input_elements = *std::max_element(p.schedule.begin(), p.schedule.end());
  } else {
    p.chunk_input_elements = chunk_elements(run, o, p.ring_depth, p.order);
    if (planned && !planned->schedule.empty() && ring_fits(planned->chunk_elements)) {
      p.schedule = planned->schedule;
      p.chunk_input_elements = planned->chunk_elements;
    } else if (planned) {
      // The planner sized its ring as one slot per stream; a deeper ring
      // shrinks the chunk to the budget as the fixed fraction does.
      p.chunk_input_elements = o.device_budget_bytes
                                   ? std::min(planned->chunk_elements, p.chunk_input_elements)
                                   : planned->chunk_elements;
    }
  }
  p.chunk_output_elements = p.chunk_input_elements * o.ratio.out / o.ratio.in;
  p.output_elements = output_needed;
  if (o.device_budget_bytes) {
    const std::size_t ring = p.ring_depth * (p.chunk_input_elements * run.input_element_bytes +
                                             p.chunk_output_elements * run.output_element_bytes);
    if (ring > *o.device_budget_bytes) {
      throw invalid_input(fmt::format(
          "device_budget_bytes: the ring needs {} bytes ({} slots of {} {}), over the budget of {}", ring,
          p.ring_depth, o.chunk_schedule.empty() ? "chunk_bytes" : "the largest chunk of chunk_schedule,",
          p.chunk_input_elements * run.input_element_bytes, *o.device_budget_bytes));
    }
  }
  p.chunks = p.schedule.empty() ? (run.input_elements + p.chunk_input_elements - 1) / p.chunk_input_elements
                                : p.schedule.size();
  return p;
}

}  // namespace overlap::cuda::detail
