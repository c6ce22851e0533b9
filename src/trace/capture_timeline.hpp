// The measured Timeline of a captured Program: device spans from CUPTI's
// activity records, host spans from the calls' own times.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace::detail {

/// One span per stream op of `program` (in issue order) from the device work
/// records `work[op]` (indices into trace.work), host spans from `origin`.
/// Times are milliseconds from `t0` (nanoseconds, the trace's clock).
[[nodiscard]] Timeline measured_timeline(const Program& program, const RawTrace& trace,
                                         const std::vector<std::vector<std::size_t>>& work,
                                         const std::vector<OpOrigin>& origin, std::uint64_t t0);

/// The median of `values` (the upper one of an even count), or nothing when empty.
[[nodiscard]] std::optional<double> median(std::vector<double> values);

/// Fills calibration.kernel_start_latency and copy_start_latency from `t`:
/// for each device span, its start minus the latest of its call's return,
/// its stream's previous span's end and its engine's last end before it.
void measure_start_latencies(const Timeline& t, const std::vector<OpOrigin>& origin,
                             Calibration& calibration);

}  // namespace overlap::trace::detail
