// `overlap bench --devices`: the several-GPU section (issue 37) as text and
// JSON, and the rows its verdicts read. CUDA-free (the results are plain
// data), so the tests need no GPU.
#pragma once

#if OVERLAP_HAS_CUDA

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"

namespace overlap::cli {

/// The GPUs `--devices` names: "all" (every visible GPU), a count N (the
/// first N), or a list of ordinals ("0,2"). `visible` is how many GPUs
/// there are. Throws invalid_input naming --devices.
[[nodiscard]] std::vector<int> parse_device_set(const std::string& text, int visible);

/// The row of `kind` on `gpus` GPUs, or nullptr.
[[nodiscard]] const bench::variant_result* find_devices_row(const bench::devices_workload_result& w,
                                                            bench::variant_kind kind, unsigned gpus) noexcept;

/// The row of `kind` on `gpus` GPUs; throws overlap::error naming it when it was not measured.
[[nodiscard]] const bench::variant_result& devices_row_of(const bench::devices_workload_result& w,
                                                          bench::variant_kind kind, unsigned gpus);

/// The most GPUs a job ran on.
[[nodiscard]] unsigned max_gpus(const bench::devices_workload_result& w) noexcept;

/// Each job's table (per GPU count: the floor, the default Pipeline, the
/// best hand-written loop; x its floor, x the same row on one GPU) and a
/// summary line per GPU count over one.
[[nodiscard]] std::string devices_text(const bench::devices_result& d);

/// The same as JSON: "gpus" (each GPU), "workloads" (rows and the hand sweep).
[[nodiscard]] nlohmann::ordered_json devices_json(const bench::devices_result& d);

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
