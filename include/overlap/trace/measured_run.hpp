// `--accesses measured`: joining the measuring run to the traced run.
//
// The Compute Sanitizer API, which measures what kernels touch, takes
// CUPTI's one callback subscriber, so the app runs twice: once measured
// (libovl_measure.so writes accesses.PID.jsonl: the app's allocations and
// each launch's byte intervals, in the order they happened), then traced.
// The runs are joined by order, not by address: the k-th launch of a kernel
// in one is the k-th launch of that kernel in the other, and an address at
// some offset in the k-th allocation of a size and kind is at that offset
// in the other. A program that does the same work both times (most do)
// joins whole; where the runs differ, the launches left unjoined keep their
// inferred accesses, and the join says how many.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

#include "overlap/trace/trace_file.hpp"

namespace overlap::trace {

/// How the measuring run joined the traced one.
struct MeasuredJoin {
  std::uint64_t measured_launches = 0;  ///< launches the measuring run recorded
  /// Kernel launch calls of the traced run (not under capture) and the
  /// kernel nodes its graph launches ran.
  std::uint64_t traced_launches = 0;
  std::uint64_t joined = 0;   ///< traced launches given their counterpart's accesses
  std::uint64_t inexact = 0;  ///< joined launches whose tables overflowed (hulls, not exact)
  std::uint64_t outside = 0;  ///< measured intervals in none of the app's allocations (dropped)
};

/// Reads the measuring run's file from `in` (`source` names it in errors)
/// and sets `trace.measured` for each launch call it joins, and
/// `trace.measured_nodes` for each kernel node of a graph launch (joined by
/// kernel and order among the graphs' kernel nodes, anchored to the
/// arguments the node was made with). Throws
/// overlap::invalid_input naming the line for a malformed file.
MeasuredJoin join_measured_run(RawTrace& trace, std::istream& in, std::string_view source);

/// The `accesses` records of `trace.measured` (docs/trace-format.md), one
/// line each, for the raw trace a measured audit keeps.
[[nodiscard]] std::string measured_records(const RawTrace& trace);

}  // namespace overlap::trace
