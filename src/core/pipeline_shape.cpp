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

// A fixed chunk size must cut the total into exactly `chunks` pieces.
void require_fixed_split(std::uint64_t total, std::uint64_t fixed, std::uint32_t chunks,
                         std::string_view field) {
  if (fixed == 0) return;
  const std::uint64_t needed = (total + fixed - 1) / fixed;
  if (needed != chunks) {
    throw invalid_input(fmt::format("{}: {} bytes cut {} bytes into {} chunks (expected chunks = {})", field,
                                    fixed, total, needed, chunks));
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
  if (shape.ring_depth != 0 && shape.ring_depth < shape.streams) {
    throw invalid_input(fmt::format("ring_depth: {} is out of range (expected 0 or >= streams = {})",
                                    shape.ring_depth, shape.streams));
  }
  require_fixed_split(shape.h2d_bytes, shape.h2d_chunk_bytes, shape.chunks, "h2d_chunk_bytes");
  require_fixed_split(shape.d2h_bytes, shape.d2h_chunk_bytes, shape.chunks, "d2h_chunk_bytes");
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

std::optional<double> chunk_time(const std::optional<double>& total, std::uint32_t chunks) {
  if (!total) return std::nullopt;
  return *total / static_cast<double>(chunks);
}

std::string item_name(const PipelineShape& shape, std::uint32_t chunk) {
  return shape.item_names.empty() ? std::to_string(chunk) : shape.item_names[chunk];
}

/// Streams, slot events and the ring layout shared by every op of a build.
struct Layout {
  const PipelineShape& shape;
  std::vector<stream_id> streams;
  std::vector<event_id> slot_free;  // one per slot when slots pass between streams
  std::uint32_t depth = 1;

  [[nodiscard]] std::uint32_t slot(std::uint32_t chunk) const { return chunk % depth; }
  [[nodiscard]] stream_id stream_of(std::uint32_t chunk) const { return streams[chunk % streams.size()]; }
  [[nodiscard]] bool slots_change_stream() const { return depth % streams.size() != 0; }
  [[nodiscard]] ChunkExtent in(std::uint32_t chunk) const {
    return chunk_extent(shape.h2d_bytes, shape.chunks, shape.h2d_chunk_bytes, chunk);
  }
  [[nodiscard]] ChunkExtent out(std::uint32_t chunk) const {
    return chunk_extent(shape.d2h_bytes, shape.chunks, shape.d2h_chunk_bytes, chunk);
  }
};

// A size of 0 means "unknown": the access covers the whole buffer.
Access access(std::string buffer, std::uint64_t offset, std::uint64_t bytes, access_mode mode) {
  Access a{std::move(buffer), offset, std::nullopt, mode};
  if (bytes > 0) a.size = bytes;
  return a;
}

// Without bytes the host extents are unknown, but chunks still cover
// disjoint parts of the host buffers: stand in one byte per chunk.
ChunkExtent host_extent(ChunkExtent extent, std::uint32_t chunk) {
  return extent.bytes > 0 ? extent : ChunkExtent{chunk, 1};
}

void declare_accesses(Op& op, const Layout& layout, stage which, std::uint32_t chunk) {
  const std::uint32_t slot = layout.slot(chunk);
  const ChunkExtent in = layout.in(chunk);
  const ChunkExtent out = layout.out(chunk);
  const ChunkExtent host_in = host_extent(in, chunk);
  const ChunkExtent host_out = host_extent(out, chunk);
  const std::string d_in = fmt::format("d_in_{}", slot);
  const std::string d_out = fmt::format("d_out_{}", slot);
  switch (which) {
    case stage::h2d:
      op.accesses = {access("host_in", host_in.offset, host_in.bytes, access_mode::read),
                     access(d_in, 0, in.bytes, access_mode::write)};
      break;
    case stage::kernel:
      op.accesses = {access(d_in, 0, in.bytes, access_mode::read),
                     access(d_out, 0, out.bytes, access_mode::write)};
      break;
    case stage::d2h:
      op.accesses = {access(d_out, 0, out.bytes, access_mode::read),
                     access("host_out", host_out.offset, host_out.bytes, access_mode::write)};
      break;
  }
}

void issue_stage(Program& program, const Layout& layout, stage which, std::uint32_t chunk) {
  const PipelineShape& shape = layout.shape;
  const stream_id stream = layout.stream_of(chunk);
  switch (which) {
    case stage::h2d:
      program.copy(stream, copy_direction::h2d, layout.in(chunk).bytes, shape.memory,
                   chunk_time(shape.h2d_time, shape.chunks));
      break;
    case stage::kernel:
      program.kernel(stream, *chunk_time(shape.kernel_time, shape.chunks), shape.kernel_gpu_share);
      break;
    case stage::d2h:
      program.copy(stream, copy_direction::d2h, layout.out(chunk).bytes, shape.memory,
                   chunk_time(shape.d2h_time, shape.chunks));
      break;
  }
  Op& op = program.last();
  op.item = item_name(shape, chunk);
  op.chunk = static_cast<std::int64_t>(chunk);
  if (shape.declare_accesses) declare_accesses(op, layout, which, chunk);
}

// A chunk taking over a slot last used on another stream waits for it.
void wait_for_slot(Program& program, const Layout& layout, std::uint32_t chunk) {
  if (!layout.slots_change_stream() || chunk < layout.depth) return;
  program.wait(layout.stream_of(chunk), layout.slot_free[layout.slot(chunk)]);
}

// ... and the chunk before it in the slot says when it is done with it.
void release_slot(Program& program, const Layout& layout, std::uint32_t chunk) {
  if (!layout.slots_change_stream() || chunk + layout.depth >= layout.shape.chunks) return;
  program.record(layout.slot_free[layout.slot(chunk)], layout.stream_of(chunk));
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

std::uint32_t effective_ring_depth(const PipelineShape& shape) noexcept {
  return shape.ring_depth == 0 ? shape.streams : shape.ring_depth;
}

ChunkExtent chunk_extent(std::uint64_t total, std::uint32_t chunks, std::uint64_t fixed,
                         std::uint32_t chunk) noexcept {
  if (fixed > 0) {
    const std::uint64_t offset = std::min(total, fixed * chunk);
    return {offset, std::min(fixed, total - offset)};
  }
  // Even split: the first total % chunks chunks carry one byte more, so the
  // chunks always add up to the total.
  const std::uint64_t base = total / chunks;
  const std::uint64_t extra = total % chunks;
  return {base * chunk + std::min<std::uint64_t>(chunk, extra), base + (chunk < extra ? 1 : 0)};
}

Program make_pipeline_program(const PipelineShape& shape) {
  validate(shape);
  Program program;
  program.name = shape.name;
  program.time_unit = shape.time_unit;
  Layout layout{shape, {}, {}, effective_ring_depth(shape)};
  for (std::uint32_t s = 0; s < shape.streams; ++s) {
    layout.streams.push_back(program.add_stream(fmt::format("Stream{}", s + 1), shape.kind));
  }
  if (layout.slots_change_stream()) {
    for (std::uint32_t k = 0; k < layout.depth; ++k)
      layout.slot_free.push_back(program.add_event(fmt::format("slot{}_free", k)));
  }
  // Depth-first is breadth-first with rounds of one chunk: each round issues
  // every stage of its chunks before the next stage, then moves on.
  const std::uint32_t round = shape.order == issue_order::depth_first ? 1 : shape.streams;
  const std::vector<stage> stages = present_stages(shape);
  for (std::uint64_t first = 0; first < shape.chunks; first += round) {
    const auto end = static_cast<std::uint32_t>(std::min<std::uint64_t>(shape.chunks, first + round));
    for (auto chunk = static_cast<std::uint32_t>(first); chunk < end; ++chunk)
      wait_for_slot(program, layout, chunk);
    for (const stage which : stages) {
      for (auto chunk = static_cast<std::uint32_t>(first); chunk < end; ++chunk)
        issue_stage(program, layout, which, chunk);
    }
    for (auto chunk = static_cast<std::uint32_t>(first); chunk < end; ++chunk)
      release_slot(program, layout, chunk);
  }
  if (shape.synchronize_at_end) program.synchronize_device();
  return program;
}

}  // namespace overlap
