// Issues a Pipeline's Program on real streams: copies, the user's stage,
// slot hand-over events, and (when recording) timing events around each op.
#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <limits>
#include <vector>

#include "overlap/check/races.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/nvtx.hpp"
#include "overlap/cuda/pipeline.hpp"

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
  shape.ring_depth = p.ring_depth;
  shape.kind = stream_kind::non_blocking;
  shape.h2d_bytes = r.input_elements * r.input_element_bytes;
  shape.h2d_chunk_bytes = p.chunk_input_elements * r.input_element_bytes;
  shape.d2h_bytes = p.output_elements * r.output_element_bytes;
  shape.d2h_chunk_bytes = p.chunk_output_elements * r.output_element_bytes;
  shape.kernel_time = 0.0;  // unknown until measured; present so the stage is in the program
  shape.memory = host_memory::pinned;
  return shape;
}

// Pageable memory makes every async copy synchronous: never silently slow.
void require_pinned(const void* pointer, std::size_t bytes, const char* name, pageable_memory policy,
                    std::vector<host_registration>& registrations) {
  if (bytes == 0) return;
  const auto* last = static_cast<const std::byte*>(pointer) + bytes - 1;
  if (is_pinned(pointer) && is_pinned(last)) return;
  if (policy == pageable_memory::register_in_place) {
    registrations.emplace_back(pointer, bytes);
    return;
  }
  throw invalid_input(
      fmt::format("{}: pageable host memory; cudaMemcpyAsync from it blocks the host and cannot overlap. "
                  "Allocate it with "
                  "cuda::pinned_buffer (cudaMallocHost), or set pipeline_options::pageable = "
                  "pageable_memory::register_in_place",
                  name));
}

}  // namespace

struct pipeline_engine::resources {
  std::vector<stream> streams;
  std::vector<event> slot_free;
  std::vector<device_buffer<std::byte>> slots_in;
  std::vector<device_buffer<std::byte>> slots_out;
  std::size_t slot_in_bytes = 0;
  std::size_t slot_out_bytes = 0;
  std::vector<event> timing;  // grown on demand, reused between runs

  // Keeps what fits the plan, rebuilds the rest.
  void prepare(const plan& p, std::size_t in_bytes, std::size_t out_bytes) {
    while (streams.size() < p.streams) streams.emplace_back(stream::options{stream_sync::non_blocking, 0});
    while (slot_free.size() < p.ring_depth) slot_free.emplace_back(event_timing::disabled);
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

  void reserve_timing(std::size_t count) {
    while (timing.size() < count) timing.emplace_back(event_timing::enabled);
  }
};

pipeline_engine::pipeline_engine() = default;
pipeline_engine::~pipeline_engine() = default;
pipeline_engine::pipeline_engine(pipeline_engine&&) noexcept = default;
pipeline_engine& pipeline_engine::operator=(pipeline_engine&&) noexcept = default;

namespace {

/// One run's issue loop, with everything it needs in reach.
class issuer {
 public:
  issuer(const erased_run& r, const plan& p, const PipelineShape& shape, const erased_stage& stage,
         bool record)
      : run_(r), plan_(p), shape_(shape), stage_(stage), record_(record) {}

  void issue(const Program& program, std::vector<stream>& streams, std::vector<event>& slot_free,
             std::vector<device_buffer<std::byte>>& in, std::vector<device_buffer<std::byte>>& out,
             std::vector<event>& timing) {
    const auto& ops = program.ops();
    std::size_t next_timing = 0;
    if (record_) timing[next_timing++].record(streams[0].view());  // t0
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.chunk >= 0) current_chunk_ = static_cast<std::size_t>(op.chunk);
      if (op.kind == op_kind::device_synchronize) break;  // the caller drains every stream
      const stream_view s = streams[*op.stream].view();
      if (op.kind == op_kind::event_record) {
        slot_free[*op.event].record(s);
        continue;
      }
      if (op.kind == op_kind::stream_wait_event) {
        slot_free[*op.event].wait_on(s);
        continue;
      }
      if (record_) timing[next_timing++].record(s);
      const std::size_t slot = current_chunk_ % plan_.ring_depth;
      issue_work(op, s, in[slot].data(), out[slot].data());
      if (record_) timing[next_timing++].record(s);
    }
  }

  [[nodiscard]] std::size_t current_chunk() const noexcept { return current_chunk_; }

 private:
  // The hot path: ~3 runtime calls per chunk. Context strings are built only
  // when a call fails, and the NVTX range names the op with a static string
  // plus the chunk as payload, so issuing stays a few microseconds per chunk.
  void issue_work(const Op& op, stream_view s, std::byte* d_in, std::byte* d_out) {
    const auto chunk = static_cast<std::uint32_t>(current_chunk_);
    const nvtx_range range(op.label.c_str(), current_chunk_);
    const auto fail_if = [&](cudaError_t status, const char* call) {
      if (status != cudaSuccess) {
        check(status, call, fmt::format("{} of chunk {} on stream {}", op.label, chunk, *op.stream + 1));
      }
    };
    if (op.kind == op_kind::copy && op.direction == copy_direction::h2d) {
      const ChunkExtent e = chunk_extent(shape_.h2d_bytes, shape_.chunks, shape_.h2d_chunk_bytes, chunk);
      fail_if(cudaMemcpyAsync(d_in, static_cast<const std::byte*>(run_.input) + e.offset, e.bytes,
                              cudaMemcpyHostToDevice, s.get()),
              "cudaMemcpyAsync");
    } else if (op.kind == op_kind::copy) {
      const ChunkExtent e = chunk_extent(shape_.d2h_bytes, shape_.chunks, shape_.d2h_chunk_bytes, chunk);
      fail_if(cudaMemcpyAsync(static_cast<std::byte*>(run_.output) + e.offset, d_out, e.bytes,
                              cudaMemcpyDeviceToHost, s.get()),
              "cudaMemcpyAsync");
    } else {
      const ChunkExtent in = chunk_extent(shape_.h2d_bytes, shape_.chunks, shape_.h2d_chunk_bytes, chunk);
      const ChunkExtent out = chunk_extent(shape_.d2h_bytes, shape_.chunks, shape_.d2h_chunk_bytes, chunk);
      stage_(d_in, in.bytes / run_.input_element_bytes, d_out, out.bytes / run_.output_element_bytes, s,
             current_chunk_);
      fail_if(cudaGetLastError(), "kernel launch in the stage");
    }
  }

  const erased_run& run_;
  const plan& plan_;
  const PipelineShape& shape_;
  const erased_stage& stage_;
  bool record_;
  std::size_t current_chunk_ = 0;
};

engine engine_of(const Op& op) {
  if (op.kind != op_kind::copy) return engine::compute;
  return op.direction == copy_direction::h2d ? engine::h2d_copy : engine::d2h_copy;
}

Timeline measured_timeline(const Program& program, const std::vector<event>& timing) {
  Timeline t;
  t.program_name = program.name;
  t.device = "measured";
  t.time_unit = "ms";
  t.streams = program.streams();
  std::size_t next = 1;  // timing[0] is t0
  const auto& ops = program.ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (!is_work_op(op.kind)) continue;
    Span span;
    span.op = static_cast<op_id>(i);
    span.kind = op.kind;
    if (op.kind == op_kind::copy) span.direction = op.direction;
    span.label = op.label;
    span.item = op.item;
    span.chunk = op.chunk;
    span.stream = *op.stream;
    span.unit = engine_of(op);
    span.bytes = op.bytes;
    span.start = timing[next++].elapsed_since(timing[0]);
    span.end = timing[next++].elapsed_since(timing[0]);
    span.solo_duration = span.end - span.start;
    t.spans.push_back(std::move(span));
  }
  return t;
}

// Waits for every stream; false if any of them failed.
bool drain(std::vector<stream>& streams) noexcept {
  bool all_ok = true;
  for (auto& s : streams) all_ok = cudaStreamSynchronize(s.get()) == cudaSuccess && all_ok;
  return all_ok;
}

}  // namespace

run_report pipeline_engine::run(const erased_run& r, const pipeline_options& options,
                                const erased_stage& stage) {
  const plan p = make_plan(r, options);
  run_report report;
  report.chunks = p.chunks;
  report.chunk_bytes = p.chunk_input_elements * r.input_element_bytes;
  report.streams = p.streams;
  report.ring_depth = p.ring_depth;
  if (r.input_elements == 0) return report;
  const PipelineShape shape = shape_of(p, r);
  report.program = make_pipeline_program(shape);
  if (options.check == program_check::on) check::require_race_free(report.program);

  std::vector<host_registration> registrations;
  require_pinned(r.input, r.input_elements * r.input_element_bytes, "input", options.pageable, registrations);
  require_pinned(r.output, shape.d2h_bytes, "output", options.pageable, registrations);

  if (!resources_) resources_ = std::make_unique<resources>();
  resources& res = *resources_;
  res.prepare(p, shape.h2d_chunk_bytes, shape.d2h_chunk_bytes);
  report.device_bytes = p.ring_depth * (res.slot_in_bytes + res.slot_out_bytes);
  const bool record = options.record == recording::on;
  if (record) res.reserve_timing(1 + 2 * 3 * p.chunks);

  issuer issue(r, p, shape, stage, record);
  const auto started = std::chrono::steady_clock::now();
  try {
    issue.issue(report.program, res.streams, res.slot_free, res.slots_in, res.slots_out, res.timing);
  } catch (const std::exception& e) {
    const std::size_t k = issue.current_chunk();
    const bool complete = drain(res.streams);
    const std::string state =
        k == 0     ? "no chunk had completed"
        : complete ? fmt::format("outputs of chunks 0..{} are complete", k - 1)
                   : "earlier outputs may be incomplete: the device reported an error while draining";
    std::throw_with_nested(pipeline_error(
        fmt::format("chunk {} of {} failed: {}; {}", k, p.chunks, e.what(), state), k, complete));
  }
  report.host_issue_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (!drain(res.streams)) {
    // Surface the asynchronous error with its name; the stream that failed first reports it.
    for (auto& s : res.streams)
      check(cudaStreamSynchronize(s.get()), "cudaStreamSynchronize", "draining the pipeline");
    check(cudaGetLastError(), "cudaGetLastError", "draining the pipeline");
  }
  if (record) report.timeline = measured_timeline(report.program, res.timing);
  return report;
}

}  // namespace overlap::cuda::detail
