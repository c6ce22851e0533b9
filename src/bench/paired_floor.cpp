// The compute-bound default Pipeline against the kernel alone, the two rows
// alternating run by run. The floor's own rows run back to back with no
// check between runs, the Pipeline's seconds later with a NaN fill and a
// check around each: on the lent H200s the ratio of those medians moved
// by a few tenths of a percent from call to call, as much as the margin
// its verdict (1.01x) judges. Here both rows are prepared and checked alike.
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "workload_bench.hpp"

namespace overlap::bench::detail {

void workload_bench::measure_default_paired(workload_result& result) {
  announce_("default pipeline against the kernel alone, alternating");
  cuda::stream& s = streams_[0];
  // Uploaded again: the sweep's rows used the device buffers since.
  const runner kernel = kernel_alone(s, "input for the paired kernel floor");
  // Brings the kernel's output home after the timed run, so that it is checked like the Pipeline's.
  const std::function<void()> bring_home = [&] {
    copy(out_.data(), d_out_.data(), bytes_, cudaMemcpyDeviceToHost, s, "the paired kernel floor's output");
    s.synchronize();
  };
  pipeline p(cuda::pipeline_options{});
  std::vector<row_samples> rows(2);
  rows[0].result.kind = variant_kind::floor_kernel;
  rows[0].result.name = "floor: kernel alone, paired";
  rows[1].result.kind = variant_kind::pipeline_default;
  rows[1].result.name = "pipeline (default), paired";
  std::vector<variant_result> measured = measure_rounds(config_.paired_reps, std::move(rows),
                                                        {kernel, pipeline_runner(p)}, true, {bring_home, {}});
  paired_floor paired{std::move(measured[0]), std::move(measured[1]), {}};
  paired.ratio = run_by_run(paired.pipeline.device_ms.samples, paired.floor.device_ms.samples);
  result.default_paired = std::move(paired);
}

}  // namespace overlap::bench::detail
