#include "overlap/core/pipeline_shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "overlap/core/error.hpp"

namespace overlap {

namespace {

/// The three stages every chunk passes through, in stream order.
enum class stage : std::uint8_t { h2d, kernel, d2h };

void require_at_least_one(std::uint32_t value, std::string_view field) {
  if (value < 1) throw invalid_input(fmt::format("{}: {} is out of range (expected >= 1)", field, value));
}

void require_total_time(const std::optional<double>& value, std::string_view field) {
  if (value && !(std::isfinite(*value) && *value >= 0.0)) {
    throw invalid_input(fmt::format("{}: {} is not a time (expected a finite number >= 0)", field, *value));
  }
}

void require_item_names(const PipelineShape& shape) {
  const std::vector<std::string>& names = shape.item_names;
  if (names.empty()) return;
  if (names.size() != shape.chunks) {
    throw invalid_input(fmt::format("item_names: {} names for {} chunks (expected none or one per chunk)",
                                    names.size(), shape.chunks));
  }
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) {
      throw invalid_input(fmt::format("item_names[{}]: empty (expected a non-empty name)", i));
    }
    if (!seen.insert(names[i]).second) {
      throw invalid_input(fmt::format("item_names[{}]: '{}' repeats (expected unique names)", i, names[i]));
    }
  }
}

void validate(const PipelineShape& shape) {
  require_at_least_one(shape.chunks, "chunks");
  require_at_least_one(shape.streams, "streams");
  require_item_names(shape);
  // Program allows one legacy default stream; say so in terms of the shape.
  if (shape.kind == stream_kind::legacy_default && shape.streams > 1) {
    throw invalid_input(fmt::format(
        "kind: legacy_default with {} streams (expected 1 stream, or another kind)", shape.streams));
  }
  require_total_time(shape.h2d_time, "h2d_time");
  require_total_time(shape.kernel_time, "kernel_time");
  require_total_time(shape.d2h_time, "d2h_time");
  if (!(shape.kernel_gpu_share > 0.0 && shape.kernel_gpu_share <= 1.0)) {
    throw invalid_input(fmt::format("kernel_gpu_share: {} is out of range (expected 0 < share <= 1)",
                                    shape.kernel_gpu_share));
  }
}

/// Stages with something to do: a copy needs a time or bytes, a kernel a time.
std::vector<stage> present_stages(const PipelineShape& shape) {
  std::vector<stage> stages;
  if (shape.h2d_time || shape.h2d_bytes > 0) stages.push_back(stage::h2d);
  if (shape.kernel_time) stages.push_back(stage::kernel);
  if (shape.d2h_time || shape.d2h_bytes > 0) stages.push_back(stage::d2h);
  return stages;
}

/// Even split of `total` bytes; the first `total % chunks` chunks carry one
/// byte more, so the chunks always add up to the total.
std::uint64_t chunk_bytes(std::uint64_t total, std::uint32_t chunks, std::uint32_t chunk) {
  const std::uint64_t base = total / chunks;
  return base + (chunk < total % chunks ? 1 : 0);
}

std::optional<double> chunk_time(const std::optional<double>& total, std::uint32_t chunks) {
  if (!total) return std::nullopt;
  return *total / static_cast<double>(chunks);
}

std::string item_name(const PipelineShape& shape, std::uint32_t chunk) {
  return shape.item_names.empty() ? std::to_string(chunk) : shape.item_names[chunk];
}

void issue_stage(Program& program, const PipelineShape& shape, stage which, std::uint32_t chunk,
                 stream_id stream) {
  switch (which) {
    case stage::h2d:
      program.copy(stream, copy_direction::h2d, chunk_bytes(shape.h2d_bytes, shape.chunks, chunk),
                   shape.memory, chunk_time(shape.h2d_time, shape.chunks));
      break;
    case stage::kernel:
      program.kernel(stream, *chunk_time(shape.kernel_time, shape.chunks), shape.kernel_gpu_share);
      break;
    case stage::d2h:
      program.copy(stream, copy_direction::d2h, chunk_bytes(shape.d2h_bytes, shape.chunks, chunk),
                   shape.memory, chunk_time(shape.d2h_time, shape.chunks));
      break;
  }
  Op& op = program.last();
  op.item = item_name(shape, chunk);
  op.chunk = static_cast<std::int64_t>(chunk);
}

}  // namespace

issue_order parse_issue_order(std::string_view text) {
  if (text == "depth" || text == "depth-first" || text == "depth_first") return issue_order::depth_first;
  if (text == "breadth" || text == "breadth-first" || text == "breadth_first")
    return issue_order::breadth_first;
  throw invalid_input(
      fmt::format("issue: '{}' is not an issue order (expected depth-first or breadth-first)", text));
}

std::string_view to_string(issue_order order) noexcept {
  return order == issue_order::depth_first ? "depth_first" : "breadth_first";
}

Program make_pipeline_program(const PipelineShape& shape) {
  validate(shape);
  Program program;
  program.name = shape.name;
  program.time_unit = shape.time_unit;
  std::vector<stream_id> streams;
  for (std::uint32_t s = 0; s < shape.streams; ++s) {
    streams.push_back(program.add_stream(fmt::format("Stream{}", s + 1), shape.kind));
  }
  // Depth-first is breadth-first with rounds of one chunk: each round issues
  // every stage of its chunks before the next stage, then moves on.
  const std::uint32_t round = shape.order == issue_order::depth_first ? 1 : shape.streams;
  const std::vector<stage> stages = present_stages(shape);
  for (std::uint64_t first = 0; first < shape.chunks; first += round) {
    const auto end = static_cast<std::uint32_t>(std::min<std::uint64_t>(shape.chunks, first + round));
    for (const stage which : stages) {
      for (auto chunk = static_cast<std::uint32_t>(first); chunk < end; ++chunk) {
        issue_stage(program, shape, which, chunk, streams[chunk % shape.streams]);
      }
    }
  }
  if (shape.synchronize_at_end) program.synchronize_device();
  return program;
}

}  // namespace overlap
