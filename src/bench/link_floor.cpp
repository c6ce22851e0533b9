// make_link_floor: the transfer-bound floor from the link's peak rates.
// CPU arithmetic only, so the CLI's tests can build link floors without a GPU.
#include "overlap/bench/link_floor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "overlap/core/error.hpp"

namespace overlap::bench {

namespace {

// Milliseconds to move `bytes` at `peak`; throws naming `field` when the rate is not positive.
double milliseconds_at(std::size_t bytes, const link_peak& peak, const char* field) {
  if (!(peak.gigabytes_per_second > 0.0)) {
    throw invalid_input(fmt::format("{}: a peak rate of {} GB/s is out of range (expected > 0)", field,
                                    peak.gigabytes_per_second));
  }
  return static_cast<double>(bytes) / (peak.gigabytes_per_second * 1e6);  // GB/s = 1e6 bytes per ms
}

}  // namespace

std::string_view to_string(link_term term) noexcept {
  switch (term) {
    case link_term::h2d: return "H2D";
    case link_term::d2h: return "D2H";
    case link_term::both_directions: return "both directions";
  }
  return "unknown";
}

std::string_view key_of(link_term term) noexcept {
  switch (term) {
    case link_term::h2d: return "h2d";
    case link_term::d2h: return "d2h";
    case link_term::both_directions: return "both_directions";
  }
  return "unknown";
}

const link_peak& link_floor::binding_peak() const noexcept {
  switch (bound_by) {
    case link_term::h2d: return h2d;
    case link_term::d2h: return d2h;
    case link_term::both_directions: return both;
  }
  return both;
}

link_floor make_link_floor(const link_peak& h2d, const link_peak& d2h, const link_peak& both,
                           std::size_t bytes_in, std::size_t bytes_out) {
  link_floor floor;
  floor.h2d = h2d;
  floor.d2h = d2h;
  floor.both = both;
  floor.h2d_ms = milliseconds_at(bytes_in, h2d, "h2d");
  floor.d2h_ms = milliseconds_at(bytes_out, d2h, "d2h");
  floor.both_ms = milliseconds_at(bytes_in + bytes_out, both, "both");
  // Ties go to both directions, then H2D: strict comparisons below.
  floor.ms = floor.both_ms;
  floor.bound_by = link_term::both_directions;
  if (floor.h2d_ms > floor.ms) {
    floor.ms = floor.h2d_ms;
    floor.bound_by = link_term::h2d;
  }
  if (floor.d2h_ms > floor.ms) {
    floor.ms = floor.d2h_ms;
    floor.bound_by = link_term::d2h;
  }
  return floor;
}

double copy_ms_at(const std::vector<link_point>& points, double link_point::*column, double bytes) {
  // The segment around `bytes`, or the first or last one beyond the ends.
  std::size_t hi = 1;
  while (hi + 1 < points.size() && static_cast<double>(points[hi].bytes) < bytes) ++hi;
  const link_point& a = points[hi - 1];
  const link_point& b = points[hi];
  const auto x0 = static_cast<double>(a.bytes);
  const auto x1 = static_cast<double>(b.bytes);
  return a.*column + (b.*column - a.*column) * (bytes - x0) / (x1 - x0);
}

chunked_floor make_chunked_floor(std::vector<link_point> points, std::size_t bytes_in, std::size_t bytes_out,
                                 double kernel_ms) {
  if (!(kernel_ms >= 0.0) || !std::isfinite(kernel_ms))
    throw invalid_input(fmt::format("kernel_ms: {} is out of range (expected a time >= 0)", kernel_ms));
  std::sort(points.begin(), points.end(),
            [](const link_point& a, const link_point& b) { return a.bytes < b.bytes; });
  for (std::size_t i = 0; i < points.size(); ++i) {
    const link_point& p = points[i];
    for (const double ms : {p.h2d_ms, p.d2h_ms, p.both_ms}) {
      if (!(ms > 0.0) || !std::isfinite(ms))
        throw invalid_input(fmt::format("points: a copy of {} bytes took {} ms (expected > 0)", p.bytes, ms));
    }
    if (p.bytes == 0 || (i > 0 && points[i - 1].bytes == p.bytes))
      throw invalid_input(fmt::format("points: the size {} is zero or twice in the sweep", p.bytes));
  }
  if (points.size() < 2) throw invalid_input("points: the chunked floor needs at least two swept sizes");
  const std::size_t bytes = std::max(bytes_in, bytes_out);
  if (bytes == 0) throw invalid_input("bytes_in, bytes_out: nothing to move");
  // Chunks from the largest swept size down to the smallest (one chunk at least).
  const std::size_t fewest =
      std::max<std::size_t>(1, (bytes + points.back().bytes - 1) / points.back().bytes);
  const std::size_t most = std::max(fewest, bytes / points.front().bytes);
  chunked_floor f;
  f.kernel_ms = kernel_ms;
  for (std::size_t n = fewest; n <= most; ++n) {
    const auto chunks = static_cast<double>(n);
    const double in = static_cast<double>(bytes_in) / chunks;
    const double out = static_cast<double>(bytes_out) / chunks;
    const double kernel = kernel_ms / chunks;
    const double h2d = bytes_in > 0 ? copy_ms_at(points, &link_point::h2d_ms, in) : 0.0;
    const double d2h = bytes_out > 0 ? copy_ms_at(points, &link_point::d2h_ms, out) : 0.0;
    const double pair = bytes_in > 0 && bytes_out > 0
                            ? copy_ms_at(points, &link_point::both_ms, std::max(in, out))
                            : std::max(h2d, d2h);
    // The first upload alone; then each upload beside the download before
    // it (or the kernel, if slower); the last kernel; the last download alone.
    const double t = h2d + (chunks - 1.0) * std::max(pair, kernel) + kernel + d2h;
    if (f.chunks == 0 || t < f.ms) {
      f.ms = t;
      f.chunks = n;
      f.chunk_bytes = (bytes_in + n - 1) / n;
      f.h2d_ms = h2d;
      f.d2h_ms = d2h;
      f.pair_ms = pair;
    }
  }
  return f;
}

}  // namespace overlap::bench
