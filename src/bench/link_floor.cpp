// make_link_floor: the transfer-bound floor from the link's peak rates.
// CPU arithmetic only, so the CLI's tests can build link floors without a GPU.
#include "overlap/bench/link_floor.hpp"

#include <fmt/format.h>

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

}  // namespace overlap::bench
