// A Pipeline run over pageable host data, staged through pinned slots: a
// Feed whose items are the plan's chunks. Its producer copies chunk k of
// the input into a slot with a pool of host threads while earlier chunks
// are on the device; its consumer copies each result out of its slot into
// the output likewise; the user's stage runs in between. Both host copies
// overlap the DMA in both directions, so the run goes at the host's copy
// rate (docs/hardware.md: ~30 GB/s with 8 threads) instead of the ~10 GB/s of
// cudaMemcpyAsync from pageable memory.
#include <fmt/format.h>

#include <exception>
#include <utility>

#include "host_copier.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/feed_shape.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/feed.hpp"
#include "pipeline_issue.hpp"

namespace overlap::cuda::detail {

/// A feed sized for one plan's chunks, and a host copier per direction.
struct staging_resources {
  // The input goes into the pinned slots through the cache, where the
  // upload soon reads it; the results go into the caller's pageable output
  // with streaming stores, which skip reading memory that is only
  // overwritten. On the lent H100's host (medians of 5 runs of `overlap
  // bench --only pageable`): 10.39 ms, against 11.09 with memcpy both ways
  // and 10.26 streaming both ways; streaming into the slots alone was the
  // slowest, 11.5 and 14.0 (bench/RESULTS.md, issue 12 part 4).
  staging_resources(std::size_t slot_elements_, unsigned slots_, unsigned threads)
      : slot_elements(slot_elements_),
        slots(slots_),
        in(threads, host_stores::cached),
        out(threads, host_stores::streaming) {}

  std::size_t slot_elements;
  unsigned slots;
  feed_engine feed;
  host_copier in;
  host_copier out;
};

pipeline_resources::pipeline_resources() = default;
pipeline_resources::~pipeline_resources() = default;

run_report run_staged(const erased_run& r, const settled_run& settled, const pipeline_options& options,
                      const erased_stage& stage, pipeline_resources& res) {
  const plan& p = settled.p;
  if (options.record == recording::on) {
    throw invalid_input(
        "record: a run staged through pinned slots has no measured Timeline yet; pin the buffers "
        "(cuda::pinned_buffer), set pipeline_options::pageable = pageable_memory::register_in_place, or "
        "leave recording off");
  }
  // A feed's slots are fixed when it first runs: a new chunk size or ring needs a new one.
  if (!res.staging || res.staging->slot_elements != p.chunk_input_elements ||
      res.staging->slots != p.ring_depth) {
    res.staging.reset();
    const DeviceModel* model = options.model ? &*options.model : &builtin_model_of_current_device();
    res.staging =
        std::make_unique<staging_resources>(p.chunk_input_elements, p.ring_depth, staging_threads(model));
  }
  staging_resources& st = *res.staging;
  const std::vector<ChunkBytes> extents = chunk_bytes(settled.shape);
  const auto* input = static_cast<const std::byte*>(r.input);
  auto* output = static_cast<std::byte*>(r.output);

  feed_options fo;
  fo.slot_elements = p.chunk_input_elements;
  fo.slots = p.ring_depth;
  fo.ratio = options.ratio;
  // The host copy threads keep every core busy; polling wake-ups would
  // take turns from them (measured: 3-9% slower runs, bench/RESULTS.md).
  fo.wait = feed_wait::block;
  const feed_layout layout{p.chunk_input_elements, r.input_element_bytes, r.output_element_bytes,
                           options.ratio};
  feed_report fed;
  try {
    fed = st.feed.run(
        layout, fo,
        [&](void* slot, std::size_t, std::size_t k) -> std::optional<std::size_t> {
          if (k == extents.size()) return std::nullopt;
          const ChunkExtent e = extents[k].in;
          st.in.copy(slot, input + e.offset, e.bytes);
          return e.bytes / r.input_element_bytes;
        },
        stage,
        [&](const void* slot, std::size_t, std::size_t k) {
          const ChunkExtent e = extents[k].out;
          st.out.copy(output + e.offset, slot, e.bytes);
        });
  } catch (const feed_error& e) {
    std::throw_with_nested(pipeline_error(
        fmt::format("chunk {} of {} failed while staging pageable memory through pinned slots: {}", e.item(),
                    p.chunks, e.what()),
        e.item(), true));
  }
  run_report report = settled.report;
  report.host = host_path::staged;
  report.host_issue_ms = fed.host_issue_ms;
  // Each slot holds a chunk in and out, on the device and pinned on the host.
  report.device_bytes = std::size_t{p.ring_depth} * (p.chunk_input_elements * r.input_element_bytes +
                                                     p.chunk_output_elements * r.output_element_bytes);
  // What ran: the Feed's issue, with its measured host copy times.
  FeedShape shape = std::move(fed.shape);
  shape.name = "cuda::Pipeline (staged)";
  if (!shape.items.empty()) report.program = make_feed_program(shape);
  return report;
}

}  // namespace overlap::cuda::detail
