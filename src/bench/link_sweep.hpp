// The link floor of a transfer-bound workload, measured in the same run.
// Private to src/bench.
#pragma once

#include <cstddef>

#include "overlap/bench/link_floor.hpp"
#include "overlap/probe/link_peaks.hpp"

namespace overlap::bench::detail {

/// The probe's options for the sweep `sweep` describes.
[[nodiscard]] probe::link_peak_options sweep_options(const link_sweep& sweep);

/// The floor for moving `bytes_in` H2D and `bytes_out` D2H at the peaks
/// of a sweep, with the sweep's points (its chunked floor is left unset).
[[nodiscard]] link_floor link_floor_of(const probe::link_peaks& peaks, std::size_t bytes_in,
                                       std::size_t bytes_out);

/// Sweeps the link's copy rates on the current device as `sweep` says
/// (overlap::probe::measure_link_peaks) and makes the floor for moving
/// `bytes_in` H2D and `bytes_out` D2H. Throws cuda_error or invalid_input.
[[nodiscard]] link_floor measure_link_floor(const link_sweep& sweep, std::size_t bytes_in,
                                            std::size_t bytes_out);

}  // namespace overlap::bench::detail
