// The `pipeline:` form of a spec: chunks or items, stage times or bytes,
// streams, issue order and the rest, read into a PipelineShape that
// make_pipeline_program turns into a Program.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/kernel_cost.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/core/program.hpp"
#include "spec_fields.hpp"
#include "spec_forms.hpp"

namespace overlap::io::spec {

namespace {

const field_list kPipelineFields = {
    "chunks", "items",          "streams",     "issue",  "stream_kind",  "stage_time",         "total_time",
    "bytes",  "chunk_schedule", "kernel_cost", "memory", "kernel_share", "synchronize_at_end", "devices"};

// A pipeline creates N streams of one kind; only one can be the legacy default.
constexpr std::pair<std::string_view, stream_kind> kPipelineStreamKinds[] = {
    {"blocking", stream_kind::blocking},
    {"non_blocking", stream_kind::non_blocking},
    {"per_thread_default", stream_kind::per_thread_default},
};

std::vector<std::string> read_item_names(const Field& field) {
  require_list(field, "a list of item names");
  std::vector<std::string> names;
  std::map<std::string, std::string> first_seen;  // name -> path of its first use
  for (const Field& element : field.elements()) {
    std::string name = read_string(element);
    const auto [previous, fresh] = first_seen.emplace(name, element.path());
    if (!fresh)
      element.fail(fmt::format("{} repeats {}", shown(name), previous->second), "unique item names");
    names.push_back(std::move(name));
  }
  return names;
}

void read_chunks(const Field& pipeline, PipelineShape& shape) {
  const std::optional<Field> chunks = pipeline.get("chunks");
  const std::optional<Field> items = pipeline.get("items");
  if (items) {
    shape.item_names = read_item_names(*items);
    shape.chunks = static_cast<std::uint32_t>(shape.item_names.size());
  }
  if (!chunks) return;
  const std::uint32_t count = read_count(*chunks);
  if (items && count != shape.chunks) {
    chunks->fail(fmt::format("{} does not match the {} items", count, shape.chunks),
                 "chunks equal to the number of items, or only one of them");
  }
  shape.chunks = count;
}

/// Reads {h2d, kernel, d2h} times, scaled by `factor` into the shape's totals.
void read_stage_times(const Field& field, double factor, PipelineShape& shape) {
  check_fields(field, {"h2d", "kernel", "d2h"});
  if (auto time = field.get("h2d")) shape.h2d_time = read_time(*time) * factor;
  if (auto time = field.get("kernel")) shape.kernel_time = read_time(*time) * factor;
  if (auto time = field.get("d2h")) shape.d2h_time = read_time(*time) * factor;
}

void read_times(const Field& pipeline, PipelineShape& shape) {
  const std::optional<Field> per_chunk = pipeline.get("stage_time");
  const std::optional<Field> total = pipeline.get("total_time");
  if (per_chunk && total) {
    const Field& later = per_chunk->line() > total->line() ? *per_chunk : *total;
    later.fail("both stage_time and total_time given", "one of them: stage_time per chunk or total_time");
  }
  if (per_chunk && !shape.chunk_schedule.empty()) {
    per_chunk->fail("stage_time with a chunk_schedule, whose chunks differ in size",
                    "total_time, split over the chunks in proportion to their bytes");
  }
  // stage_time is per chunk; the shape holds totals that it splits again.
  if (per_chunk) read_stage_times(*per_chunk, static_cast<double>(shape.chunks), shape);
  if (total) read_stage_times(*total, 1.0, shape);
}

void read_total_bytes(const Field& field, PipelineShape& shape) {
  check_fields(field, {"h2d", "d2h"});
  if (auto bytes = field.get("h2d")) shape.h2d_bytes = read_bytes(*bytes);
  if (auto bytes = field.get("d2h")) shape.d2h_bytes = read_bytes(*bytes);
}

/// chunk_schedule: [64 KiB, 128 KiB, ...]: the input bytes of each chunk.
void read_chunk_schedule(const Field& pipeline, const Field& field, PipelineShape& shape) {
  require_list(field, "a list of chunk sizes in bytes");
  for (const Field& element : field.elements()) {
    const std::uint64_t bytes = read_bytes(element);
    if (bytes == 0) element.fail("0 bytes", "a chunk size > 0");
    shape.chunk_schedule.push_back(bytes);
  }
  if (shape.chunk_schedule.size() > std::numeric_limits<std::uint32_t>::max()) {
    field.fail(fmt::format("{} chunks", shape.chunk_schedule.size()), "at most 4294967295 chunks");
  }
  const auto count = static_cast<std::uint32_t>(shape.chunk_schedule.size());
  for (const std::string_view key : {"chunks", "items"}) {
    if (pipeline.get(key) && shape.chunks != count) {
      field.fail(fmt::format("{} chunks, but {} says {}", count, key, shape.chunks),
                 "one entry per chunk, or no chunks: or items: beside it");
    }
  }
  shape.chunks = count;
}

/// The schedule sizes the input: it gives bytes.h2d, or must add up to it.
void check_schedule_total(const Field& pipeline, PipelineShape& shape) {
  if (shape.chunk_schedule.empty()) return;
  std::uint64_t sum = 0;
  for (const std::uint64_t bytes : shape.chunk_schedule) {
    if (bytes > std::numeric_limits<std::uint64_t>::max() - sum) {
      pipeline.require("chunk_schedule", "").fail("adds up to more than 2^64 bytes", "a total that fits");
    }
    sum += bytes;
  }
  const std::optional<Field> bytes = pipeline.get("bytes");
  if (!bytes || !bytes->get("h2d")) {
    shape.h2d_bytes = sum;
    return;
  }
  if (sum != shape.h2d_bytes) {
    pipeline.require("chunk_schedule", "")
        .fail(fmt::format("adds up to {} bytes", sum),
              fmt::format("the bytes.h2d total of {} bytes, or no bytes.h2d", shape.h2d_bytes));
  }
}

/// kernel_cost: {fixed_ms, ms_per_mib, wave_bytes}: each chunk's kernel
/// priced by its input bytes (overlap::KernelCost).
void read_kernel_cost(const Field& field, PipelineShape& shape) {
  check_fields(field, {"fixed_ms", "ms_per_mib", "wave_bytes"});
  KernelCost cost;
  cost.fixed_ms = read_time(field.require("fixed_ms", kTimeExpected));
  cost.ms_per_mib = read_time(field.require("ms_per_mib", kTimeExpected));
  if (auto wave = field.get("wave_bytes")) cost.wave_bytes = read_bytes(*wave);
  if (cost.fixed_ms == 0.0 && cost.ms_per_mib == 0.0) {
    field.fail("fixed_ms and ms_per_mib are both 0", "a kernel that takes time");
  }
  if (shape.kernel_time) {
    field.fail("given with a kernel time",
               "one of them: kernel_cost, or kernel under stage_time or total_time");
  }
  if (shape.h2d_bytes == 0) {
    field.fail("no input bytes to price", "bytes: {h2d: ...} or a chunk_schedule beside it");
  }
  shape.kernel_cost = cost;
}

issue_order read_issue_order(const Field& field) {
  const std::string text = read_string(field);
  try {
    return parse_issue_order(text);
  } catch (const invalid_input&) {
    field.fail(
        fmt::format("{} is not an issue order", shown(text)),
        "one of: depth, depth-first, depth_first, breadth, breadth-first, breadth_first, stage, stage-first, "
        "stage_first, stage-streams, stage_streams");
  }
}

PipelineShape read_pipeline_shape(const Field& pipeline) {
  check_fields(pipeline, kPipelineFields);
  PipelineShape shape;
  read_chunks(pipeline, shape);
  if (auto field = pipeline.get("chunk_schedule")) read_chunk_schedule(pipeline, *field, shape);
  if (auto field = pipeline.get("streams")) shape.streams = read_count(*field);
  if (auto field = pipeline.get("devices"))
    shape.devices = static_cast<std::uint32_t>(read_integer(*field, 1, limits::max_devices));
  if (auto field = pipeline.get("issue")) shape.order = read_issue_order(*field);
  if (auto field = pipeline.get("stream_kind")) shape.kind = read_choice(*field, kPipelineStreamKinds);
  read_times(pipeline, shape);
  if (auto field = pipeline.get("bytes")) read_total_bytes(*field, shape);
  check_schedule_total(pipeline, shape);
  if (auto field = pipeline.get("kernel_cost")) read_kernel_cost(*field, shape);
  if (auto field = pipeline.get("memory")) shape.memory = read_choice(*field, kMemories);
  if (auto field = pipeline.get("kernel_share")) shape.kernel_gpu_share = read_share(*field);
  if (auto field = pipeline.get("synchronize_at_end")) shape.synchronize_at_end = read_bool(*field);
  // A pipeline with no stage would be an empty program: surely a slip.
  if (!shape.h2d_time && !shape.kernel_time && !shape.d2h_time && shape.h2d_bytes == 0 &&
      shape.d2h_bytes == 0) {
    pipeline.fail("no stage has a time or bytes", "stage_time, total_time or bytes");
  }
  return shape;
}

}  // namespace

Program read_pipeline(const Field& pipeline) {
  const PipelineShape shape = read_pipeline_shape(pipeline);
  try {
    return make_pipeline_program(shape);
  } catch (const invalid_input& e) {
    pipeline.fail_raw(e.what());  // fields are checked above; this is a safety net
  }
}

}  // namespace overlap::io::spec
