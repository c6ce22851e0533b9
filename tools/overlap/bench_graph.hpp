// `overlap bench`'s cuda::Graph rows (issue 13) as text and JSON, in the
// table format of the other workloads: (a) branches of small kernels
// against the longest branch alone and one stream, (b) tiny kernels issued
// directly and replayed, (c) the random DAG built and mapped on the CPU.
// CUDA-free (the results are plain data), so the tests need no GPU.
#pragma once

#if OVERLAP_HAS_CUDA

#include <nlohmann/json.hpp>
#include <string>

#include "overlap/bench/driver.hpp"

namespace overlap::cli {

/// The median ratios the Graph verdicts and summary lines are made of,
/// computed within one run.
struct graph_ratios {
  double graph_to_alone = 0.0;         ///< Graph::run / the longest branch alone (target <= 1.2)
  double one_stream_speedup = 0.0;     ///< one stream / Graph::run (target >= 3)
  double graph_to_hand = 0.0;          ///< Graph::run / hand-written streams (target <= 1)
  double replay_to_alone = 0.0;        ///< the replayed Graph / the longest branch alone
  double direct_us_per_node = 0.0;     ///< (b) Graph::run's host cost per node, us
  double replay_us_per_node = 0.0;     ///< (b) the replay's host cost per node, us
  double replay_to_direct_host = 0.0;  ///< replay / direct host cost per node (target <= 0.5)
};

/// The ratios of `g`; throws overlap::error when a row they need was not measured.
[[nodiscard]] graph_ratios ratios_of(const bench::graph_result& g);

/// The three Graph tables and their summary lines.
[[nodiscard]] std::string graph_text(const bench::graph_result& g);

/// The JSON report's "graph" object: "branches", "tiny" and "dag".
[[nodiscard]] nlohmann::ordered_json graph_json(const bench::graph_result& g);

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
