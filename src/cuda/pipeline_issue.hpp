// What issuing a Pipeline's Program on real streams takes, shared by the
// direct run (pipeline_engine.cpp) and the graph capture (pipeline_graph.cpp).
// Private to src/cuda.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "overlap/core/pipeline_shape.hpp"
#include "overlap/core/program.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::cuda::detail {

/// The report fields a plan fixes: chunks, chunk bytes, streams, ring depth.
[[nodiscard]] run_report report_of(const plan& p, const erased_run& r);

/// The PipelineShape of a planned run; puts the Program it issues in
/// `report.program` and, when options.check says so, proves it race-free.
/// Makes no CUDA call.
[[nodiscard]] PipelineShape describe_run(const plan& p, const erased_run& r, const pipeline_options& options,
                                         run_report& report);

/// How the run reaches its host data: pinned as it is; or, for pageable
/// spans, registered in place (appending to `registrations`) or staged, as
/// options.pageable says (automatic resolved on options.model or the GPU's
/// built-in model); or throws invalid_input naming "input" or "output"
/// under pageable_memory::reject. Pageable memory makes every async copy
/// synchronous: never silently slow.
[[nodiscard]] host_path reach_host_data(const erased_run& r, const plan& p, const pipeline_options& options,
                                        std::vector<host_registration>& registrations);

/// A run ready to issue.
struct settled_run {
  plan p;
  PipelineShape shape;
  run_report report;
  /// Each chunk's bytes under a chunk schedule, listed once here rather
  /// than by every run (empty when the chunks are uniform).
  std::vector<ChunkBytes> extents;
  /// The next run is timed to learn the run's bound, and the layout then
  /// changes (layout_adaptation::from_first_run).
  bool learns_bound = false;
};

/// Everything before a run's first op, shared by run() and capture():
/// checks every argument (make_plan, no CUDA call), decides how to reach
/// the host data (reach_host_data, into `path`), times the stage when options.calibrate says so and
/// `calibration` holds no earlier fit (kept by the caller between runs),
/// and lets the planner decide the chunking when it should. The report has
/// the Program; an empty input returns before any CUDA call.
[[nodiscard]] settled_run settle_run(const erased_run& r, const pipeline_options& options,
                                     const erased_stage& stage, std::vector<host_registration>& registrations,
                                     std::optional<KernelFit>& calibration, host_path& path);

/// Milliseconds on the host's steady clock since `start`.
[[nodiscard]] double ms_since(std::chrono::steady_clock::time_point start);

struct staging_resources;

/// Streams, slot hand-over events and the device ring of chunk buffers.
struct pipeline_resources {
  pipeline_resources();
  ~pipeline_resources();  // where staging_resources is complete
  pipeline_resources(const pipeline_resources&) = delete;
  pipeline_resources& operator=(const pipeline_resources&) = delete;
  pipeline_resources(pipeline_resources&&) = delete;
  pipeline_resources& operator=(pipeline_resources&&) = delete;

  std::vector<stream> streams;
  std::vector<event> events;  ///< the Program's events (slot hand-overs), by event id
  std::vector<device_buffer<std::byte>> slots_in;
  std::vector<device_buffer<std::byte>> slots_out;
  std::size_t slot_in_bytes = 0;
  std::size_t slot_out_bytes = 0;
  std::vector<event> timing;  ///< grown on demand, reused between runs
  /// The stage's fitted cost, once calibrated (stage_calibration::on).
  std::optional<KernelFit> calibration;
  /// The last run's settled chunking and Program, and the sizes it is for.
  std::optional<settled_run> settled;
  erased_run settled_sizes;

  /// settle_run, remembered for the next run of the same sizes (a
  /// Pipeline's options never change): that run checks only its own spans
  /// and pinning, and skips planning and describing its Program, which
  /// would keep the device idle for tens to hundreds of microseconds per
  /// run (measured: 48 us at 16 chunks, 176 us at 64).
  const settled_run& settle(const erased_run& r, const pipeline_options& options, const erased_stage& stage,
                            std::vector<host_registration>& registrations, host_path& path);
  /// After a first run that learned its bound: the settled run of the
  /// layout that serves `bound` (adapted_options), kept for the later runs
  /// of the same sizes. The first run's own report is not touched.
  void adapt(const erased_run& r, const pipeline_options& options, const erased_stage& stage,
             run_bound bound);
  /// The feed and host copiers of staged runs, made by the first one.
  std::unique_ptr<staging_resources> staging;

  /// Keeps what fits the plan and the Program's events, rebuilds the rest.
  void prepare(const plan& p, const Program& program, std::size_t in_bytes, std::size_t out_bytes);
  /// At least `count` timing events.
  void reserve_timing(std::size_t count);
  /// The device bytes the ring holds.
  [[nodiscard]] std::size_t ring_bytes() const noexcept {
    return slots_in.size() * slot_in_bytes + slots_out.size() * slot_out_bytes;
  }
};

/// Whether the issue loop brackets each work op with timing events.
enum class op_timing { off, on };

/// One run's issue loop: every op of the Program, in order, on the
/// resources' streams. The chunk being issued is kept so a failure can name it.
class issuer {
 public:
  issuer(const erased_run& r, const settled_run& settled, const erased_stage& stage, op_timing timing)
      : run_(r),
        plan_(settled.p),
        shape_(settled.shape),
        extents_(settled.extents),
        stage_(stage),
        timing_(timing) {}

  /// Issues every op up to the final device_synchronize (the caller drains
  /// or joins the streams). Throws what the stage or a CUDA call throws.
  void issue(const Program& program, pipeline_resources& res);

  /// The chunk of the op issued last (or being issued when it threw).
  [[nodiscard]] std::size_t current_chunk() const noexcept { return current_chunk_; }

 private:
  void issue_work(const Op& op, stream_view s, std::byte* d_in, std::byte* d_out);
  [[nodiscard]] ChunkBytes extent(std::uint32_t chunk) const;

  const erased_run& run_;
  const plan& plan_;
  const PipelineShape& shape_;
  const std::vector<ChunkBytes>& extents_;  // under a chunk schedule
  const erased_stage& stage_;
  op_timing timing_;
  std::size_t current_chunk_ = 0;
};

/// Waits for every stream; false if any of them failed. Never throws.
bool drain(std::vector<stream>& streams) noexcept;

/// A settled run over pageable host data, copied through pinned slots: a
/// Feed whose items are the plan's chunks (pipeline_staged.cpp).
[[nodiscard]] run_report run_staged(const erased_run& r, const settled_run& settled,
                                    const pipeline_options& options, const erased_stage& stage,
                                    pipeline_resources& res);

}  // namespace overlap::cuda::detail
