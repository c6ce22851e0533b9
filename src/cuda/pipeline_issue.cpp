#include "pipeline_issue.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <limits>

#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/nvtx.hpp"
#include "pipeline_calibrate.hpp"

namespace overlap::cuda::detail {

namespace {

PipelineShape shape_of(const plan& p, const erased_run& r) {
  if (p.chunks > std::numeric_limits<std::uint32_t>::max()) {
    throw invalid_input(fmt::format("chunk_bytes: {} chunks is too many (expected < 2^32)", p.chunks));
  }
  PipelineShape shape;
  shape.name = "cuda::Pipeline";
  shape.chunks = static_cast<std::uint32_t>(p.chunks);
  shape.streams = p.streams;
  shape.order = p.order;
  shape.ring_depth = p.ring_depth;
  shape.kind = stream_kind::non_blocking;
  shape.h2d_bytes = r.input_elements * r.input_element_bytes;
  shape.d2h_bytes = p.output_elements * r.output_element_bytes;
  if (p.schedule.empty()) {
    shape.h2d_chunk_bytes = p.chunk_input_elements * r.input_element_bytes;
    shape.d2h_chunk_bytes = p.chunk_output_elements * r.output_element_bytes;
  } else {
    // Each chunk's output is its input's share of d2h_bytes, which is whole
    // elements: every chunk but the last holds whole units of ratio.in.
    shape.chunk_schedule.reserve(p.schedule.size());
    for (const std::size_t elements : p.schedule)
      shape.chunk_schedule.push_back(elements * r.input_element_bytes);
  }
  shape.kernel_time = 0.0;  // unknown until measured; present so the stage is in the program
  shape.memory = host_memory::pinned;
  return shape;
}

bool pinned_range(const void* pointer, std::size_t bytes) {
  if (bytes == 0) return true;
  const auto* last = static_cast<const std::byte*>(pointer) + bytes - 1;
  return is_pinned(pointer) && is_pinned(last);
}

[[noreturn]] void reject_pageable(const char* name) {
  throw invalid_input(fmt::format(
      "{}: pageable host memory; cudaMemcpyAsync from it blocks the host and cannot overlap. "
      "Allocate it with cuda::pinned_buffer (cudaMallocHost), or set pipeline_options::pageable to "
      "pageable_memory::stage (copy it through pinned slots), register_in_place or automatic",
      name));
}

}  // namespace

run_report report_of(const plan& p, const erased_run& r) {
  run_report report;
  report.chunks = p.chunks;
  report.chunk_bytes = p.chunk_input_elements * r.input_element_bytes;
  report.chunk_schedule.reserve(p.schedule.size());
  for (const std::size_t elements : p.schedule)
    report.chunk_schedule.push_back(elements * r.input_element_bytes);
  report.streams = p.streams;
  report.assignment =
      p.order == issue_order::stage_streams ? stream_assignment::per_stage : stream_assignment::round_robin;
  report.ring_depth = p.ring_depth;
  return report;
}

PipelineShape describe_run(const plan& p, const erased_run& r, const pipeline_options& options,
                           run_report& report) {
  PipelineShape shape = shape_of(p, r);
  report.program = make_pipeline_program(shape);
  if (options.check == program_check::on) check::require_race_free(report.program);
  return shape;
}

host_path reach_host_data(const erased_run& r, const plan& p, const pipeline_options& options,
                          std::vector<host_registration>& registrations) {
  const std::size_t in_bytes = r.input_elements * r.input_element_bytes;
  const std::size_t out_bytes = p.output_elements * r.output_element_bytes;
  const bool in_pinned = pinned_range(r.input, in_bytes);
  const bool out_pinned = pinned_range(r.output, out_bytes);
  if (in_pinned && out_pinned) return host_path::pinned;
  const std::size_t pageable = (in_pinned ? 0 : in_bytes) + (out_pinned ? 0 : out_bytes);
  const DeviceModel* model = nullptr;
  if (options.pageable == pageable_memory::automatic)
    model = options.model ? &*options.model : &builtin_model_of_current_device();
  switch (resolve_pageable(options.pageable, pageable, model)) {
    case pageable_memory::register_in_place:
      if (!in_pinned) registrations.emplace_back(r.input, in_bytes);
      if (!out_pinned) registrations.emplace_back(r.output, out_bytes);
      return host_path::registered;
    case pageable_memory::stage:
    case pageable_memory::automatic:  // resolved above; listed for the compiler
      return host_path::staged;
    case pageable_memory::reject: break;
  }
  reject_pageable(in_pinned ? "output" : "input");
}

settled_run settle_run(const erased_run& r, const pipeline_options& options, const erased_stage& stage,
                       std::vector<host_registration>& registrations, std::optional<KernelFit>& calibration,
                       host_path& path) {
  // Checked first with the fixed fraction, so that planning (tens of
  // milliseconds) runs once, after the stage is calibrated.
  settled_run s{make_plan(r, options, nullptr, chunk_planning::deferred), {}, {}, {}};
  s.report = report_of(s.p, r);
  if (r.input_elements == 0) return s;
  path = reach_host_data(r, s.p, options, registrations);
  if (path == host_path::staged) {
    if (const std::optional<std::size_t> bytes = staged_chunk_bytes(r, options)) {
      pipeline_options staged = options;
      staged.chunk_bytes = *bytes;
      s.p = make_plan(r, staged, nullptr, chunk_planning::deferred);
      s.report = report_of(s.p, r);
    }
  }
  // A given stage_cost wins: calibrating would only be thrown away.
  if (options.calibrate == stage_calibration::on && !options.stage_cost && !calibration) {
    try {
      calibration = calibrate_stage(r, options.ratio, stage);
    } catch (const std::exception& e) {
      std::throw_with_nested(pipeline_error(
          fmt::format("calibrating the stage failed before any chunk was issued: {}", e.what()), 0, true));
    }
  }
  if (plans_chunking(options)) {
    const KernelCost* calibrated = calibration && !options.stage_cost ? &calibration->cost : nullptr;
    s.p = make_plan(r, options, options.model ? &*options.model : chunking_model(options),
                    chunk_planning::allowed, calibrated);
    s.report = report_of(s.p, r);
  }
  // Described (and race-checked) once, with the chunking settled.
  s.shape = describe_run(s.p, r, options, s.report);
  if (!s.shape.chunk_schedule.empty()) s.extents = chunk_bytes(s.shape);
  s.report.stage_cost = calibration;
  return s;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void pipeline_resources::prepare(const plan& p, const Program& program, std::size_t in_bytes,
                                 std::size_t out_bytes) {
  while (streams.size() < p.streams) streams.emplace_back(stream::options{stream_sync::non_blocking, 0});
  while (events.size() < program.events().size()) events.emplace_back(event_timing::disabled);
  if (slots_in.size() != p.ring_depth || slot_in_bytes < in_bytes || slot_out_bytes < out_bytes) {
    slots_in.clear();
    slots_out.clear();
    for (unsigned k = 0; k < p.ring_depth; ++k) {
      slots_in.emplace_back(in_bytes, streams[0].view());
      slots_out.emplace_back(out_bytes, streams[0].view());
    }
    slot_in_bytes = in_bytes;
    slot_out_bytes = out_bytes;
    // Allocated in stream order on stream 0; other streams use them next.
    streams[0].synchronize();
  }
}

const settled_run& pipeline_resources::settle(const erased_run& r, const pipeline_options& options,
                                              const erased_stage& stage,
                                              std::vector<host_registration>& registrations,
                                              host_path& path) {
  const erased_run& last = settled_sizes;
  if (settled && last.input_elements == r.input_elements &&
      last.input_element_bytes == r.input_element_bytes && last.output_elements == r.output_elements &&
      last.output_element_bytes == r.output_element_bytes) {
    require_non_null(r);
    if (r.input_elements > 0) path = reach_host_data(r, settled->p, options, registrations);
    return *settled;
  }
  settled.reset();  // a run that fails to settle leaves nothing to reuse
  settled = settle_run(r, options, stage, registrations, calibration, path);
  settled->learns_bound = r.input_elements > 0 && adapts_layout(options, settled->p, path);
  settled_sizes = {nullptr, r.input_elements,  r.input_element_bytes,
                   nullptr, r.output_elements, r.output_element_bytes};
  return *settled;
}

void pipeline_resources::adapt(const erased_run& r, const pipeline_options& options,
                               const erased_stage& stage, run_bound bound) {
  if (!settled) return;
  if (bound != run_bound::balanced) {
    const pipeline_options next =
        adapted_options(options, bound, settled->p, r.input_elements, r.input_element_bytes);
    // Pinned data (adapts_layout): nothing is registered, the path stays pinned.
    std::vector<host_registration> none;
    host_path path = host_path::pinned;
    try {
      settled_run s = settle_run(r, next, stage, none, calibration, path);
      s.report.bound = bound;
      settled = std::move(s);
      return;
    } catch (const invalid_input&) {
      // The run that just succeeded is not failed for a second layout that
      // does not fit (none is known to): its own layout stays, as balanced's does.
    }
  }
  settled->learns_bound = false;
  settled->report.bound = bound;
}

void pipeline_resources::reserve_timing(std::size_t count) {
  while (timing.size() < count) timing.emplace_back(event_timing::enabled);
}

void issuer::issue(const Program& program, pipeline_resources& res) {
  const auto& ops = program.ops();
  const bool timed = timing_ == op_timing::on;
  std::size_t next_timing = 0;
  if (timed) res.timing[next_timing++].record(res.streams[0].view());  // t0
  for (const Op& op : ops) {
    if (op.chunk >= 0) current_chunk_ = static_cast<std::size_t>(op.chunk);
    if (op.kind == op_kind::device_synchronize) break;  // the caller drains or joins every stream
    const stream_view s = res.streams[*op.stream].view();
    if (op.kind == op_kind::event_record) {
      res.events[*op.event].record(s);
      continue;
    }
    if (op.kind == op_kind::stream_wait_event) {
      res.events[*op.event].wait_on(s);
      continue;
    }
    if (timed) res.timing[next_timing++].record(s);
    const std::size_t slot = current_chunk_ % plan_.ring_depth;
    issue_work(op, s, res.slots_in[slot].data(), res.slots_out[slot].data());
    if (timed) res.timing[next_timing++].record(s);
  }
}

// The hot path: ~3 runtime calls per chunk. Context strings are built only
// when a call fails, and the NVTX range names the op with a static string
// plus the chunk as payload, so issuing costs little beyond the runtime calls.
void issuer::issue_work(const Op& op, stream_view s, std::byte* d_in, std::byte* d_out) {
  const auto chunk = static_cast<std::uint32_t>(current_chunk_);
  const nvtx_range range(op.label.c_str(), current_chunk_);
  const auto fail_if = [&](cudaError_t status, const char* call) {
    if (status != cudaSuccess) {
      check(status, call, fmt::format("{} of chunk {} on stream {}", op.label, chunk, *op.stream + 1));
    }
  };
  const ChunkBytes e = extent(chunk);
  if (op.kind == op_kind::copy && op.direction == copy_direction::h2d) {
    fail_if(cudaMemcpyAsync(d_in, static_cast<const std::byte*>(run_.input) + e.in.offset, e.in.bytes,
                            cudaMemcpyHostToDevice, s.get()),
            "cudaMemcpyAsync");
  } else if (op.kind == op_kind::copy) {
    fail_if(cudaMemcpyAsync(static_cast<std::byte*>(run_.output) + e.out.offset, d_out, e.out.bytes,
                            cudaMemcpyDeviceToHost, s.get()),
            "cudaMemcpyAsync");
  } else {
    stage_(d_in, e.in.bytes / run_.input_element_bytes, d_out, e.out.bytes / run_.output_element_bytes, s,
           current_chunk_);
    fail_if(cudaGetLastError(), "kernel launch in the stage");
  }
}

ChunkBytes issuer::extent(std::uint32_t chunk) const {
  if (!extents_.empty()) return extents_[chunk];
  return {chunk_extent(shape_.h2d_bytes, shape_.chunks, shape_.h2d_chunk_bytes, chunk),
          chunk_extent(shape_.d2h_bytes, shape_.chunks, shape_.d2h_chunk_bytes, chunk)};
}

bool drain(std::vector<stream>& streams) noexcept {
  bool all_ok = true;
  for (auto& s : streams) all_ok = cudaStreamSynchronize(s.get()) == cudaSuccess && all_ok;
  return all_ok;
}

}  // namespace overlap::cuda::detail
