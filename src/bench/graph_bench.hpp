// The parts of `overlap bench`'s Graph rows (issue 13), each in its own
// file: (a) branches of small kernels (graph_branches_bench.cpp), (b) tiny
// kernels in chains and fans (graph_tiny_bench.cpp); graph_bench.cpp runs
// them and (c), the CPU-only DAG (dag_build_bench.cpp). Private to src/bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "overlap/bench/driver.hpp"
#include "run_clock.hpp"
#include "timed_rows.hpp"

namespace overlap::bench::detail {

/// (a): fills the branch fields and rows of `r` (announcing 6 steps: five
/// rows, then the recorded run the concurrency is counted in).
void measure_branches(const bench_config& config, run_clock& clock, const announce_row& announce,
                      int sm_count, graph_result& r);

/// (b): fills the tiny fields and rows of `r` (announcing 2 steps).
void measure_tiny(const bench_config& config, run_clock& clock, const announce_row& announce,
                  graph_result& r);

/// One timed Graph row's run: `main` waits for `start`, `issue` is timed on
/// the host's steady clock (the call alone), then `main` is synchronized.
/// Returns `info` with that host issue time.
run_info timed_issue(const cuda::event& start, const cuda::stream& main, const std::function<void()>& issue,
                     run_info info);

/// Throws wrong_output naming `what` and the first element of `got` that
/// differs from `want` (equal sizes).
void verify_bits(std::span<const std::uint32_t> got, std::span<const std::uint32_t> want,
                 const std::string& what);

/// Calls f(begin, end) on disjoint ranges covering [0, n), one per host
/// thread whatever n (parallel_for keeps small n on one thread; the
/// branches' reference is small but costs billions of rounds).
void spread_over_cores(std::size_t n, const std::function<void(std::size_t, std::size_t)>& f);

}  // namespace overlap::bench::detail
