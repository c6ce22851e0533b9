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
//
// No chunked pipeline reaches it either: each copy costs a fixed time beyond
// its bytes (about 4.5 us on an H100, queued or not), and the first upload
// and the last download run alone. The chunked floor is the least time a
// pipeline of N equal chunks can take, over every N whose chunks lie within
// the sweep's sizes, from what the same sweep measured (docs/bench.md):
//
//   T(N) = H2D(in / N) + (N - 1) * max(pair(in / N), kernel / N) + kernel / N + D2H(out / N)
//
// where H2D(b) and D2H(b) are one copy of b bytes alone and pair(b) an H2D
// and a D2H of b bytes at once, each the sweep's median time for one copy of
// a train, interpolated linearly in b between the sizes swept (no line is
// fitted: on some hosts the rate of both at once falls as copies grow), and
// kernel is the kernel alone over all the data.
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

/// One size of the sweep: the median time of one copy (bench's copy of
/// overlap::probe::link_point, which the CLI's tests build without a GPU).
struct link_point {
  std::size_t bytes = 0;  ///< per copy
  double h2d_ms = 0.0;    ///< one H2D copy alone
  double d2h_ms = 0.0;    ///< one D2H copy alone
  double both_ms = 0.0;   ///< an H2D and a D2H copy of this size at once
};

/// The chunked floor and what it was computed from.
struct chunked_floor {
  double kernel_ms = 0.0;       ///< the kernel alone over all the data
  std::size_t chunks = 0;       ///< the N of the least T(N)
  std::size_t chunk_bytes = 0;  ///< bytes in / chunks (rounded up)
  double h2d_ms = 0.0;          ///< one H2D copy of that chunk alone
  double d2h_ms = 0.0;          ///< one D2H copy of that chunk alone
  double pair_ms = 0.0;         ///< an H2D and a D2H copy of that chunk at once
  double ms = 0.0;              ///< T(chunks)
};

/// The median time of one copy of `bytes` in `column` (&link_point::h2d_ms,
/// d2h_ms or both_ms), linear between the two swept sizes around it (the
/// nearest two beyond the ends). `points` must hold two sizes or more, in
/// increasing size (make_chunked_floor sorts its copy).
[[nodiscard]] double copy_ms_at(const std::vector<link_point>& points, double link_point::*column,
                                double bytes);

/// The chunked floor of moving `bytes_in` H2D and `bytes_out` D2H around
/// a kernel of `kernel_ms`, from the sweep's `points`, over every chunk
/// count whose chunks lie within the swept sizes. Throws
/// overlap::invalid_input naming the bad argument (points, kernel_ms).
[[nodiscard]] chunked_floor make_chunked_floor(std::vector<link_point> points, std::size_t bytes_in,
                                               std::size_t bytes_out, double kernel_ms);

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

  /// The sweep's medians per size (empty where the floor was made from peaks alone).
  std::vector<link_point> points;
  /// The least time a chunked pipeline can take (0 ms until the kernel
  /// alone is measured; make_chunked_floor).
  chunked_floor chunked;

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
