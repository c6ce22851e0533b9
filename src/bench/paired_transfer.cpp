// The transfer-bound default Pipeline against the sweep's best configuration
// and the chunked floor, all three taken alternating run by run. The floor
// comes from the link sweep at the start of the workload, the default's row
// seconds later and the sweep's rows later still: on the lent H200s the
// link's rates moved by 5-8% between those moments within one bench run, so
// that the same layout measured 5.84 ms in the sweep and 6.32 ms as the
// default's row, and the verdicts (1.02x, within a row's spread) judged the
// drift instead of the Pipeline. Here each pair of runs is followed by a
// sweep of the link (one train per size and direction, the same sizes and
// buffers as the floor's), whose chunked floor that pair is judged against.
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "link_sweep.hpp"
#include "overlap/probe/link_peaks.hpp"
#include "workload_bench.hpp"

namespace overlap::bench::detail {

void workload_bench::measure_transfer_paired(workload_result& result) {
  announce_("default pipeline against the sweep's best and the chunked floor, alternating");
  const variant_result* swept = result.best_swept();
  if (!result.link || result.link->chunked.chunks == 0 || swept == nullptr) return;  // nothing to pair
  pipeline by_default(cuda::pipeline_options{});
  pipeline best(options_of(*swept));

  probe::link_peak_options sweep = sweep_options(config_.link);
  sweep.reps = 1;  // a train per size and direction after each pair: the link as it was then
  probe::link_sweeper sweeper(sweep);
  const double kernel_ms = result.link->chunked.kernel_ms;
  std::vector<double> chunked_ms;
  unsigned sweeps = 0;
  const std::function<void()> sweep_link = [&] {
    const link_floor now = link_floor_of(sweeper.measure(), bytes_, bytes_);
    const double ms = make_chunked_floor(now.points, bytes_, bytes_, kernel_ms).ms;
    if (sweeps++ >= config_.warmup) chunked_ms.push_back(ms);  // as the rows keep their timed runs only
  };

  std::vector<row_samples> rows(2);
  rows[0].result.kind = variant_kind::pipeline_default;
  rows[0].result.name = "pipeline (default), paired";
  rows[1].result.kind = variant_kind::pipeline;
  rows[1].result.name = swept->name + ", paired";
  std::vector<variant_result> measured =
      measure_rounds(config_.paired_reps, std::move(rows),
                     {pipeline_runner(by_default), pipeline_runner(best)}, true, {{}, sweep_link});
  paired_transfer paired;
  paired.pipeline = std::move(measured[0]);
  paired.best_swept = std::move(measured[1]);
  const std::vector<double>& default_ms = paired.pipeline.device_ms.samples;
  paired.to_best_swept = run_by_run(default_ms, paired.best_swept.device_ms.samples);
  paired.to_chunked_floor = run_by_run(default_ms, chunked_ms);
  paired.best_to_chunked_floor = run_by_run(paired.best_swept.device_ms.samples, chunked_ms);
  paired.chunked_floor_ms = summarize(std::move(chunked_ms));
  result.transfer_paired = std::move(paired);
}

}  // namespace overlap::bench::detail
