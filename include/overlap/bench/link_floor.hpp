// The transfer-bound floor from the host<->device link's peak rates.
//
// Two whole-buffer copies started together are not a floor: their time
// includes each copy's start-up and the moment the second one joins, and
// sits several percent above what the link sustains. The floor here is
//
//   max(bytes in / peak H2D, bytes out / peak D2H, all bytes / peak both-directions)
//
// with the peaks measured by a size sweep (overlap::probe::measure_link_peaks)
// in the same run, so no schedule of those copies can beat it.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace overlap::bench {

/// The size sweep that measures the link's peak rates (see
/// overlap/probe/link_peaks.hpp, which it is passed to).
struct link_sweep {
  /// Bytes per copy, each timed as trains of copies of that size.
  std::vector<std::size_t> sizes = {std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{16} << 20,
                                    std::size_t{64} << 20};
  std::size_t train_bytes = std::size_t{256} << 20;  ///< at least this much moved per timed train
  unsigned reps = 5;                                 ///< timed trains per size and direction
};

/// One peak rate of the link and where the sweep found it.
struct link_peak {
  double gigabytes_per_second = 0.0;  ///< 1 GB = 1e9 bytes
  std::size_t at_bytes = 0;           ///< the copy size the peak was measured at
  double spread = 0.0;                ///< (max - min) / median of that size's reps
};

/// The term of the floor that is largest, i.e. the one that bounds the workload.
enum class link_term { h2d, d2h, both_directions };
/// "H2D", "D2H", "both directions".
[[nodiscard]] std::string_view to_string(link_term term) noexcept;
/// "h2d", "d2h", "both_directions": a stable key for JSON.
[[nodiscard]] std::string_view key_of(link_term term) noexcept;

/// The transfer-bound floor and what it was computed from.
struct link_floor {
  link_peak h2d;         ///< H2D alone
  link_peak d2h;         ///< D2H alone
  link_peak both;        ///< H2D + D2H bytes per second with both directions running at once
  double h2d_ms = 0.0;   ///< bytes in / peak H2D
  double d2h_ms = 0.0;   ///< bytes out / peak D2H
  double both_ms = 0.0;  ///< (bytes in + bytes out) / peak both directions
  double ms = 0.0;       ///< the floor: the largest of the three terms
  /// The largest term, the one `ms` equals (on a tie: both directions, then H2D).
  link_term bound_by = link_term::both_directions;

  /// The peak of the binding term.
  [[nodiscard]] const link_peak& binding_peak() const noexcept;
};

/// The floor for moving `bytes_in` H2D and `bytes_out` D2H at the given
/// peaks. On a tie the both-directions term binds, then H2D. Throws
/// overlap::invalid_input naming the peak ("h2d", "d2h", "both") whose rate
/// is not positive.
[[nodiscard]] link_floor make_link_floor(const link_peak& h2d, const link_peak& d2h, const link_peak& both,
                                         std::size_t bytes_in, std::size_t bytes_out);

}  // namespace overlap::bench
