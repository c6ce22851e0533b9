// The page `overlap bench --report FILE` writes: each workload's sweep as a
// chart (time against chunk size, a line per stream count, the floor and
// the sequential run as levels), then the best transfer-bound run as
// recorded with CUDA events beside the simulator's prediction of it.
#pragma once

#if OVERLAP_HAS_CUDA

#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap::cli {

/// The simulator's prediction of the best recorded run of `w`: the Program
/// that run issued, on `model`, each kernel timed as the measured
/// kernel-alone floor times its chunk's share of the input (the model has
/// copy rates but no kernel costs). Throws overlap::error when `w` holds no
/// recorded run.
[[nodiscard]] Timeline predict_best_run(const bench::workload_result& w, const DeviceModel& model);

/// The whole page. `verdicts` are the text report's PASS/FAIL lines;
/// `when` says when the run was made ("2026-11-23 14:05 UTC"); `model` is
/// the device model the best run is predicted on (a preset or a probed
/// model). Throws overlap::error when no workload holds a recorded run.
[[nodiscard]] std::string bench_report_html(const bench::bench_result& result,
                                            const std::vector<std::string>& verdicts, const std::string& when,
                                            const DeviceModel& model = DeviceModel::preset("h100"));

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
