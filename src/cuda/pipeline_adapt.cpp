// The automatic layout's second guess (layout_adaptation::from_first_run):
// which runs adapt, how a measured first run names its bound, and the
// options of the layout each bound takes. Plain C++, no CUDA call, so the
// rules are tested without a GPU; pipeline_engine.cpp measures and applies them.
#include <algorithm>
#include <cstdint>

#include "overlap/core/pipeline_shape.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace overlap::cuda {

std::string_view to_string(run_bound bound) noexcept {
  switch (bound) {
    case run_bound::copies: return "copies";
    case run_bound::balanced: return "balanced";
    case run_bound::stage: return "stage";
  }
  return "balanced";
}

}  // namespace overlap::cuda

namespace overlap::cuda::detail {

namespace {

// Streams of the adapted layouts: an upload, a download and the kernel
// streams. One kernel stream when the copies bound the run: spreading its
// tiny kernels over three cost the copies 2-6% in a raw CUDA loop and the
// Pipeline 1-2.5% (8 MiB chunks, 256 MiB each way, H200s, bench/RESULTS.md
// issue 38). Five when the stage does: with the ramp's twice-as-large middle
// chunks, 1.0035-1.0051x the kernel alone against 1.0083-1.0121x for the
// fixed layout in the same four calls on one H200 (less on others).
constexpr unsigned copy_bound_streams = 3;
constexpr unsigned stage_bound_streams = 7;

// A plan needs this many chunks before a second layout can differ from it.
constexpr std::size_t fewest_adapted_chunks = 4;

}  // namespace

bool adapts_layout(const pipeline_options& o, const plan& p, host_path path) noexcept {
  const bool automatic = !o.chunk_bytes && o.chunk_schedule.empty() && !o.streams && !o.ring_depth &&
                         !o.device_budget_bytes && o.chunking == automatic_chunking::fixed_fraction &&
                         o.calibrate == stage_calibration::off;
  return o.adapt == layout_adaptation::from_first_run && automatic && p.order == issue_order::stage_streams &&
         path == host_path::pinned && p.schedule.empty() && p.chunks >= fewest_adapted_chunks;
}

run_bound bound_of(double stage_ms, double h2d_ms, double d2h_ms) noexcept {
  const double copies = std::max(h2d_ms, d2h_ms);
  if (stage_ms > copies) return run_bound::stage;
  // Below half, one kernel stream keeps up even if each kernel then waits
  // for the last wave of the one before it.
  if (stage_ms < 0.5 * copies) return run_bound::copies;
  return run_bound::balanced;
}

pipeline_options adapted_options(const pipeline_options& options, run_bound bound, const plan& first,
                                 std::size_t input_elements, std::size_t element_bytes) {
  pipeline_options next = options;
  next.adapt = layout_adaptation::off;  // the second layout is the last
  next.assignment = stream_assignment::per_stage;
  switch (bound) {
    case run_bound::balanced: return next;
    case run_bound::copies:
      next.streams = copy_bound_streams;
      next.chunk_bytes = first.chunk_input_elements * element_bytes;
      return next;
    case run_bound::stage: break;
  }
  next.streams = stage_bound_streams;
  // The ramp in whole units of ratio.in elements (a chunk's output stays
  // whole); elements past the last whole unit join the last chunk.
  const std::size_t unit = std::max<std::size_t>(options.ratio.in, 1);
  const std::size_t units = input_elements / unit;
  const std::size_t chunk_units = std::max<std::size_t>(first.chunk_input_elements / unit, 1);
  const std::uint64_t small = std::max<std::size_t>(chunk_units / 4, 1);
  const std::uint64_t large = std::max<std::uint64_t>(2 * chunk_units, small);
  if (units == 0) return next;  // nothing whole to ramp: the first layout's chunking stays
  next.chunk_schedule.clear();
  for (const std::uint64_t u : ramp_schedule(units, small, large))
    next.chunk_schedule.push_back(static_cast<std::size_t>(u) * unit * element_bytes);
  next.chunk_schedule.back() += (input_elements - units * unit) * element_bytes;
  return next;
}

}  // namespace overlap::cuda::detail
