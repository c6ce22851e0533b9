// `overlap bench`'s frames and pageable workloads (issue 12) as text and
// JSON, in the table format of the Pipeline workloads. CUDA-free (the
// results are plain data), so the tests need no GPU.
#pragma once

#if OVERLAP_HAS_CUDA

#include <nlohmann/json.hpp>
#include <string>

#include "overlap/bench/driver.hpp"

namespace overlap::cli {

/// The frames table (x the copy rate floor, x the hand-written ping-pong) and its summary lines.
[[nodiscard]] std::string frames_text(const bench::feed_result& f);
/// The pageable table (x the host copy floor, x the pinned Pipeline) and its summary lines.
[[nodiscard]] std::string pageable_text(const bench::pageable_result& p);

[[nodiscard]] nlohmann::ordered_json frames_json(const bench::feed_result& f);
[[nodiscard]] nlohmann::ordered_json pageable_json(const bench::pageable_result& p);

/// The row of `kind`; throws overlap::error naming it when it was not measured.
[[nodiscard]] const bench::variant_result& row_of(const std::vector<bench::variant_result>& rows,
                                                  bench::variant_kind kind);

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
