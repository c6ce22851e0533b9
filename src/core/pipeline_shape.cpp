#include "overlap/core/pipeline_shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {

namespace {

/// The three stages every chunk passes through, in stream order.
enum class stage : std::uint8_t { h2d, kernel, d2h };

void require_at_least_one(std::uint32_t value, std::string_view field) {
  if (value < 1) throw invalid_input(fmt::format("{}: {} is out of range (expected >= 1)", field, value));
}

void require_total_time(const std::optional<double>& value, std::string_view field) {
  if (value && !limits::is_time(*value)) {
    throw invalid_input(
        fmt::format("{}: {} is not a time (expected {})", field, *value, limits::time_expected));
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

// Overflow-safe sum of a schedule: stops counting once past `limit`.
std::uint64_t saturating_sum(const std::vector<std::uint64_t>& sizes) {
  std::uint64_t sum = 0;
  for (const std::uint64_t size : sizes) {
    sum = size > std::numeric_limits<std::uint64_t>::max() - sum ? std::numeric_limits<std::uint64_t>::max()
                                                                 : sum + size;
  }
  return sum;
}

// Checked on the shape as given, before its chunk count is taken from the schedule.
void validate_schedule(const PipelineShape& shape) {
  const std::vector<std::uint64_t>& schedule = shape.chunk_schedule;
  if (schedule.empty()) return;
  for (const auto& [field, bytes] : {std::pair{"h2d_chunk_bytes", shape.h2d_chunk_bytes},
                                     std::pair{"d2h_chunk_bytes", shape.d2h_chunk_bytes}}) {
    if (bytes != 0) {
      throw invalid_input(fmt::format(
          "chunk_schedule: given with {} = {} (expected one way to size the chunks)", field, bytes));
    }
  }
  if (schedule.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw invalid_input(fmt::format("chunk_schedule: {} chunks is out of range (expected at most {})",
                                    schedule.size(), std::numeric_limits<std::uint32_t>::max()));
  }
  if (shape.chunks != 1 && shape.chunks != schedule.size()) {
    throw invalid_input(
        fmt::format("chunks: {} does not match the {} entries of chunk_schedule (expected {}, "
                    "or chunks left at 1)",
                    shape.chunks, schedule.size(), schedule.size()));
  }
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    if (schedule[i] == 0) {
      throw invalid_input(fmt::format("chunk_schedule[{}]: 0 is out of range (expected > 0 bytes)", i));
    }
  }
  const std::uint64_t sum = saturating_sum(schedule);
  if (sum != shape.h2d_bytes) {
    throw invalid_input(
        fmt::format("chunk_schedule: adds up to {} bytes (expected h2d_bytes = {})",
                    sum == std::numeric_limits<std::uint64_t>::max() ? "more than 2^64" : std::to_string(sum),
                    shape.h2d_bytes));
  }
}

void validate_kernel_cost(const PipelineShape& shape) {
  if (!shape.kernel_cost) return;
  if (shape.kernel_time) {
    throw invalid_input("kernel_cost: given with kernel_time (expected one of them)");
  }
  if (shape.h2d_bytes == 0) {
    throw invalid_input(
        "kernel_cost: h2d_bytes is 0 (expected input bytes: the curve prices each chunk by its input)");
  }
  shape.kernel_cost->validate("kernel_cost");
}

void validate(const PipelineShape& shape) {
  require_at_least_one(shape.chunks, "chunks");
  require_at_least_one(shape.streams, "streams");
  if (shape.devices < 1 || shape.devices > limits::max_devices) {
    throw invalid_input(
        fmt::format("devices: {} is out of range (expected 1 to {})", shape.devices, limits::max_devices));
  }
  require_item_names(shape);
  // Program allows one legacy default stream; say so in terms of the shape.
  if (shape.kind == stream_kind::legacy_default && shape.streams > 1) {
    throw invalid_input(fmt::format(
        "kind: legacy_default with {} streams (expected 1 stream, or another kind)", shape.streams));
  }
  require_total_time(shape.h2d_time, "h2d_time");
  require_total_time(shape.kernel_time, "kernel_time");
  require_total_time(shape.d2h_time, "d2h_time");
  validate_kernel_cost(shape);
  if (shape.order == issue_order::stage_first && shape.ring_depth != 0 &&
      shape.ring_depth < effective_chunks(shape)) {
    throw invalid_input(fmt::format(
        "ring_depth: {} is out of range for stage-first issue (expected 0 or >= chunks = {}: every chunk "
        "holds its slot until its D2H, which comes after every kernel)",
        shape.ring_depth, effective_chunks(shape)));
  }
  if (shape.order == issue_order::stage_streams && shape.streams < 3) {
    throw invalid_input(fmt::format(
        "streams: {} is out of range for stage-streams issue (expected >= 3: an upload stream, a kernel "
        "stream and a download stream)",
        shape.streams));
  }
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
  if (shape.kernel_time || shape.kernel_cost) stages.push_back(stage::kernel);
  if (shape.d2h_time || shape.d2h_bytes > 0) stages.push_back(stage::d2h);
  return stages;
}

// Output offsets follow the input's: the output before a chunk is the same
// share of d2h_bytes as the input before it is of h2d_bytes, rounded down,
// so every chunk gets its share and the chunks add up to the total exactly.
std::uint64_t proportional_offset(std::uint64_t in_offset, std::uint64_t in_total, std::uint64_t out_total) {
  __extension__ using wide = unsigned __int128;  // in_offset x out_total needs up to 128 bits
  return static_cast<std::uint64_t>(wide{in_offset} * out_total / in_total);
}

std::string item_name(const PipelineShape& shape, std::uint32_t chunk) {
  return shape.item_names.empty() ? std::to_string(chunk) : shape.item_names[chunk];
}

/// A stream, buffer or event name: as it always was on one device, "gpuN."
/// before it on several.
std::string on_device(const PipelineShape& shape, device_id device, std::string name) {
  return shape.devices == 1 ? name : fmt::format("gpu{}.{}", device, name);
}

/// Streams, slot events and the ring layout shared by every op of a build.
// With several devices chunk c runs on device c mod devices, as that
// device's chunk c / devices (its "local" index): each device has its own
// streams (device-major in `streams`), ring of slots and slot events.
struct Layout {
  const PipelineShape& shape;  // with chunks settled (the schedule's size when it has one)
  std::vector<ChunkBytes> extents;
  std::vector<stream_id> streams;
  std::vector<event_id> slot_free;  // one per slot and device when slots pass between streams
  std::uint32_t depth = 1;

  [[nodiscard]] std::uint32_t devices() const { return shape.devices; }
  [[nodiscard]] device_id device_of(std::uint32_t chunk) const { return chunk % shape.devices; }
  [[nodiscard]] std::uint32_t local(std::uint32_t chunk) const { return chunk / shape.devices; }
  [[nodiscard]] std::uint32_t slot(std::uint32_t chunk) const { return local(chunk) % depth; }
  /// The slot's index among every device's slots (for slot_free).
  [[nodiscard]] std::uint32_t slot_index(std::uint32_t chunk) const {
    return device_of(chunk) * depth + slot(chunk);
  }
  [[nodiscard]] stream_id stream_of(std::uint32_t chunk) const {
    return streams[device_of(chunk) * shape.streams + local(chunk) % shape.streams];
  }
  [[nodiscard]] bool slots_change_stream() const { return depth % shape.streams != 0; }
  /// Whether a later chunk takes over `chunk`'s slot: `depth` of its device's chunks later.
  [[nodiscard]] bool slot_reused(std::uint32_t chunk) const {
    return std::uint64_t{chunk} + std::uint64_t{depth} * shape.devices < shape.chunks;
  }
  /// A device buffer's name: "d_in_0", or "gpu1.d_in_0" on several devices.
  [[nodiscard]] std::string buffer(std::string_view name, std::uint32_t chunk) const {
    return on_device(shape, device_of(chunk), fmt::format("{}_{}", name, slot(chunk)));
  }
  [[nodiscard]] ChunkExtent in(std::uint32_t chunk) const { return extents[chunk].in; }
  [[nodiscard]] ChunkExtent out(std::uint32_t chunk) const { return extents[chunk].out; }

  /// A stage's share of its total time: even, or by input bytes under a schedule.
  [[nodiscard]] std::optional<double> chunk_time(const std::optional<double>& total,
                                                 std::uint32_t chunk) const {
    if (!total) return std::nullopt;
    if (shape.chunk_schedule.empty()) return *total / static_cast<double>(shape.chunks);
    return *total * (static_cast<double>(in(chunk).bytes) / static_cast<double>(shape.h2d_bytes));
  }

  [[nodiscard]] double kernel_time(std::uint32_t chunk) const {
    if (shape.kernel_cost) return shape.kernel_cost->time(in(chunk).bytes);
    return *chunk_time(shape.kernel_time, chunk);
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
  // Chunk c's bytes sit at the start of its slot's buffers; under a varying
  // schedule every slot is sized for the largest chunk (see ring_bytes).
  const ChunkExtent in = layout.in(chunk);
  const ChunkExtent out = layout.out(chunk);
  const ChunkExtent host_in = host_extent(in, chunk);
  const ChunkExtent host_out = host_extent(out, chunk);
  const std::string d_in = layout.buffer("d_in", chunk);
  const std::string d_out = layout.buffer("d_out", chunk);
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

// The fraction of the SMs a chunk's kernel keeps busy. With a cost curve it
// is the curve's per-byte work over the launch's whole time: the fixed part
// and a partial last wave leave SMs idle for other streams' kernels
// (DeviceModel::kernels_share_sms); otherwise the shape's kernel_gpu_share.
double kernel_share(const PipelineShape& shape, const Layout& layout, std::uint32_t chunk) {
  if (!shape.kernel_cost) return shape.kernel_gpu_share;
  const std::uint64_t bytes = layout.in(chunk).bytes;
  const double total = shape.kernel_cost->time(bytes);
  if (!(total > 0.0)) return shape.kernel_gpu_share;
  const double work =
      shape.kernel_cost->ms_per_mib * static_cast<double>(bytes) / static_cast<double>(1 << 20);
  return std::clamp(work / total, 0.01, 1.0) * shape.kernel_gpu_share;
}

void issue_stage(Program& program, const Layout& layout, stage which, std::uint32_t chunk, stream_id stream) {
  const PipelineShape& shape = layout.shape;
  switch (which) {
    case stage::h2d:
      program.copy(stream, copy_direction::h2d, layout.in(chunk).bytes, shape.memory,
                   layout.chunk_time(shape.h2d_time, chunk));
      break;
    case stage::kernel:
      program.kernel(stream, layout.kernel_time(chunk), kernel_share(shape, layout, chunk));
      break;
    case stage::d2h:
      program.copy(stream, copy_direction::d2h, layout.out(chunk).bytes, shape.memory,
                   layout.chunk_time(shape.d2h_time, chunk));
      break;
  }
  Op& op = program.last();
  op.item = item_name(shape, chunk);
  op.chunk = static_cast<std::int64_t>(chunk);
  if (shape.declare_accesses) declare_accesses(op, layout, which, chunk);
}

// A chunk taking over a slot last used on another stream waits for it.
void wait_for_slot(Program& program, const Layout& layout, std::uint32_t chunk) {
  if (!layout.slots_change_stream() || layout.local(chunk) < layout.depth) return;
  program.wait(layout.stream_of(chunk), layout.slot_free[layout.slot_index(chunk)]);
}

// ... and the chunk before it in the slot says when it is done with it.
void release_slot(Program& program, const Layout& layout, std::uint32_t chunk) {
  if (!layout.slots_change_stream() || !layout.slot_reused(chunk)) return;
  program.record(layout.slot_free[layout.slot_index(chunk)], layout.stream_of(chunk));
}

// Stage streams: the upload stream first, the kernel streams, the download
// stream last. Each present stage waits for the one before it through the
// chunk's slot events, so a stage stream never blocks on another engine
// except for the chunk it needs.
void build_stage_streams(Program& program, const Layout& layout, const std::vector<stage>& stages) {
  const PipelineShape& shape = layout.shape;
  const std::uint32_t kernel_streams = shape.streams - 2;
  std::vector<event_id> ready_in;
  std::vector<event_id> ready_out;
  std::vector<event_id> slot_free;
  for (std::uint32_t d = 0; d < layout.devices(); ++d) {
    for (std::uint32_t k = 0; k < layout.depth; ++k) {
      ready_in.push_back(program.add_event(on_device(shape, d, fmt::format("slot{}_in", k))));
      ready_out.push_back(program.add_event(on_device(shape, d, fmt::format("slot{}_out", k))));
      slot_free.push_back(program.add_event(on_device(shape, d, fmt::format("slot{}_free", k))));
    }
  }
  // Each device's streams: its upload stream first, its kernel streams, its download stream last.
  const auto stream_for = [&](stage which, std::uint32_t chunk) {
    const std::size_t first = std::size_t{layout.device_of(chunk)} * shape.streams;
    switch (which) {
      case stage::h2d: return layout.streams[first];
      case stage::kernel: return layout.streams[first + 1 + layout.local(chunk) % kernel_streams];
      case stage::d2h: return layout.streams[first + shape.streams - 1];
    }
    return layout.streams[first];
  };
  const auto ready_after = [&](stage which, std::uint32_t slot) {
    return which == stage::h2d ? ready_in[slot] : ready_out[slot];
  };
  for (std::uint32_t chunk = 0; chunk < shape.chunks; ++chunk) {
    const std::uint32_t slot = layout.slot_index(chunk);
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const stream_id stream = stream_for(stages[i], chunk);
      if (i == 0 && layout.local(chunk) >= layout.depth) program.wait(stream, slot_free[slot]);
      if (i > 0) program.wait(stream, ready_after(stages[i - 1], slot));
      issue_stage(program, layout, stages[i], chunk, stream);
      if (i + 1 < stages.size()) {
        program.record(ready_after(stages[i], slot), stream);
      } else if (layout.slot_reused(chunk)) {
        program.record(slot_free[slot], stream);
      }
    }
  }
}

}  // namespace

issue_order parse_issue_order(std::string_view text) {
  if (text == "depth" || text == "depth-first" || text == "depth_first") return issue_order::depth_first;
  if (text == "breadth" || text == "breadth-first" || text == "breadth_first")
    return issue_order::breadth_first;
  if (text == "stage" || text == "stage-first" || text == "stage_first") return issue_order::stage_first;
  if (text == "stage-streams" || text == "stage_streams") return issue_order::stage_streams;
  throw invalid_input(fmt::format(
      "issue: '{}' is not an issue order (expected depth-first, breadth-first, stage-first or stage-streams)",
      text));
}

std::string_view to_string(issue_order order) noexcept {
  switch (order) {
    case issue_order::depth_first: return "depth_first";
    case issue_order::breadth_first: return "breadth_first";
    case issue_order::stage_first: return "stage_first";
    case issue_order::stage_streams: return "stage_streams";
  }
  return "depth_first";
}

std::uint32_t effective_ring_depth(const PipelineShape& shape) noexcept {
  if (shape.ring_depth != 0) return shape.ring_depth;
  return shape.order == issue_order::stage_first ? std::max(effective_chunks(shape), shape.streams)
                                                 : shape.streams;
}

std::uint32_t effective_chunks(const PipelineShape& shape) noexcept {
  return shape.chunk_schedule.empty() ? shape.chunks
                                      : static_cast<std::uint32_t>(shape.chunk_schedule.size());
}

std::vector<ChunkBytes> chunk_bytes(const PipelineShape& shape) {
  const std::uint32_t chunks = effective_chunks(shape);
  std::vector<ChunkBytes> extents;
  extents.reserve(chunks);
  if (shape.chunk_schedule.empty()) {
    for (std::uint32_t c = 0; c < chunks; ++c) {
      extents.push_back({chunk_extent(shape.h2d_bytes, chunks, shape.h2d_chunk_bytes, c),
                         chunk_extent(shape.d2h_bytes, chunks, shape.d2h_chunk_bytes, c)});
    }
    return extents;
  }
  std::uint64_t in_offset = 0;
  std::uint64_t out_offset = 0;
  for (const std::uint64_t bytes : shape.chunk_schedule) {
    const std::uint64_t out_end = proportional_offset(in_offset + bytes, shape.h2d_bytes, shape.d2h_bytes);
    extents.push_back({{in_offset, bytes}, {out_offset, out_end - out_offset}});
    in_offset += bytes;
    out_offset = out_end;
  }
  return extents;
}

std::uint64_t ring_bytes(const PipelineShape& shape) {
  std::uint64_t largest_in = 0;
  std::uint64_t largest_out = 0;
  for (const ChunkBytes& chunk : chunk_bytes(shape)) {
    largest_in = std::max(largest_in, chunk.in.bytes);
    largest_out = std::max(largest_out, chunk.out.bytes);
  }
  return std::uint64_t{effective_ring_depth(shape)} * (largest_in + largest_out);
}

std::vector<std::uint64_t> uniform_schedule(std::uint64_t total, std::uint64_t chunk) {
  if (total == 0) throw invalid_input("uniform_schedule: total is 0 bytes (expected > 0)");
  if (chunk == 0) throw invalid_input("uniform_schedule: chunk is 0 bytes (expected > 0)");
  std::vector<std::uint64_t> schedule(total / chunk, chunk);
  if (total % chunk != 0) schedule.push_back(total % chunk);
  return schedule;
}

std::vector<std::uint64_t> ramp_schedule(std::uint64_t total, std::uint64_t small, std::uint64_t large) {
  if (total == 0) throw invalid_input("ramp_schedule: total is 0 bytes (expected > 0)");
  if (small == 0 || small > large) {
    throw invalid_input(fmt::format(
        "ramp_schedule: small = {} and large = {} bytes (expected 0 < small <= large)", small, large));
  }
  // Grow by doubling while a matching step down at the end still fits.
  std::vector<std::uint64_t> up;
  std::uint64_t left = total;
  for (std::uint64_t step = small; step < large && left / 2 >= step; step *= 2) {
    up.push_back(step);
    left -= 2 * step;
  }
  std::vector<std::uint64_t> schedule = up;
  schedule.insert(schedule.end(), left / large, large);
  // The way down, with what is left over slotted in where it keeps the
  // sizes falling, so no odd-sized chunk interrupts the steady state.
  std::vector<std::uint64_t> down(up.rbegin(), up.rend());
  if (left % large != 0) {
    const std::uint64_t rest = left % large;
    down.insert(std::find_if(down.begin(), down.end(), [rest](std::uint64_t step) { return step < rest; }),
                rest);
  }
  schedule.insert(schedule.end(), down.begin(), down.end());
  return schedule;
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

namespace {

/// The Program of a shape whose chunk count is settled.
Program build_program(const PipelineShape& shape) {
  validate(shape);
  // Refused before anything is allocated for them.
  if (const std::uint64_t ops = std::uint64_t{shape.chunks} * 3; ops > limits::max_ops) {
    throw invalid_input(fmt::format(
        "chunks: {} chunks make at least {} ops (a timeline of about {:.0f} GB), over the limit of {} ops in "
        "a program (use fewer, larger chunks: past a few thousand the timeline looks the same)",
        shape.chunks, ops, static_cast<double>(ops * limits::timeline_bytes_per_op) / 1e9, limits::max_ops));
  }
  limits::require_at_most(std::uint64_t{shape.streams} * shape.devices, limits::max_streams, "streams",
                          "streams", "a program's streams are declared one by one");
  Program program;
  program.name = shape.name;
  program.time_unit = shape.time_unit;
  const std::size_t streams = std::size_t{shape.streams} * shape.devices;
  program.reserve(streams, 3 * static_cast<std::size_t>(shape.chunks));
  Layout layout{shape, chunk_bytes(shape), {}, {}, effective_ring_depth(shape)};
  for (device_id d = 0; d < shape.devices; ++d) {
    for (std::uint32_t s = 0; s < shape.streams; ++s) {
      layout.streams.push_back(
          program.add_stream(on_device(shape, d, fmt::format("Stream{}", s + 1)), shape.kind, 0, d));
    }
  }
  const std::vector<stage> stages = present_stages(shape);
  const auto synchronize_every_device = [&] {
    for (device_id d = 0; d < shape.devices; ++d) program.synchronize_device(d);
  };
  if (shape.order == issue_order::stage_streams) {
    build_stage_streams(program, layout, stages);
    if (shape.synchronize_at_end) synchronize_every_device();
    return program;
  }
  if (layout.slots_change_stream()) {
    for (device_id d = 0; d < shape.devices; ++d) {
      for (std::uint32_t k = 0; k < layout.depth; ++k)
        layout.slot_free.push_back(program.add_event(on_device(shape, d, fmt::format("slot{}_free", k))));
    }
  }
  // Depth-first is breadth-first with rounds of one chunk: each round issues
  // every stage of its chunks before the next stage, then moves on.
  // Stage-first is one round of every chunk. On several devices a
  // breadth-first round gives each device its streams' worth.
  const std::uint32_t round = shape.order == issue_order::depth_first     ? 1
                              : shape.order == issue_order::breadth_first ? shape.streams * shape.devices
                                                                          : shape.chunks;
  for (std::uint64_t first = 0; first < shape.chunks; first += round) {
    const auto end = static_cast<std::uint32_t>(std::min<std::uint64_t>(shape.chunks, first + round));
    for (auto chunk = static_cast<std::uint32_t>(first); chunk < end; ++chunk)
      wait_for_slot(program, layout, chunk);
    for (const stage which : stages) {
      for (auto chunk = static_cast<std::uint32_t>(first); chunk < end; ++chunk)
        issue_stage(program, layout, which, chunk, layout.stream_of(chunk));
    }
    for (auto chunk = static_cast<std::uint32_t>(first); chunk < end; ++chunk)
      release_slot(program, layout, chunk);
  }
  if (shape.synchronize_at_end) synchronize_every_device();
  return program;
}

}  // namespace

Program make_pipeline_program(const PipelineShape& shape) {
  validate_schedule(shape);
  PipelineShape settled = shape;  // a schedule says how many chunks there are
  settled.chunks = effective_chunks(shape);
  return build_program(settled);
}

}  // namespace overlap
