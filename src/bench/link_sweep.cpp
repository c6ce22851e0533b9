// measure_link_floor: the probe's peak rates, turned into the bench's floor.
#include "link_sweep.hpp"

namespace overlap::bench::detail {

namespace {

link_peak peak_of(const probe::link_rate& rate) {
  return {rate.gigabytes_per_second, rate.at_bytes, rate.spread};
}

}  // namespace

probe::link_peak_options sweep_options(const link_sweep& sweep) {
  probe::link_peak_options options;
  options.sizes = sweep.sizes;
  options.train_bytes = sweep.train_bytes;
  options.reps = sweep.reps;
  return options;
}

link_floor link_floor_of(const probe::link_peaks& peaks, std::size_t bytes_in, std::size_t bytes_out) {
  link_floor floor =
      make_link_floor(peak_of(peaks.h2d), peak_of(peaks.d2h), peak_of(peaks.both), bytes_in, bytes_out);
  for (const probe::link_point& p : peaks.points)
    floor.points.push_back({p.bytes, p.h2d_ms, p.d2h_ms, p.both_ms});
  return floor;
}

link_floor measure_link_floor(const link_sweep& sweep, std::size_t bytes_in, std::size_t bytes_out) {
  return link_floor_of(probe::measure_link_peaks(sweep_options(sweep)), bytes_in, bytes_out);
}

}  // namespace overlap::bench::detail
