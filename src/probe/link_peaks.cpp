#include "overlap/probe/link_peaks.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "copy_trains.hpp"
#include "overlap/core/error.hpp"
#include "overlap/probe/probe.hpp"

namespace overlap::probe {

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

void keep_best(link_rate& best, std::size_t bytes, const measured& gbps) {
  if (gbps.median > best.gigabytes_per_second) best = {gbps.median, bytes, gbps.spread()};
}

// The sizes to sweep, checked: the defaults when none are given.
std::vector<std::size_t> checked_sizes(const link_peak_options& options) {
  std::vector<std::size_t> sizes = options.sizes;
  if (sizes.empty()) sizes = {MiB, 4 * MiB, 16 * MiB, 64 * MiB};
  if (options.reps == 0) throw invalid_input("link peaks: reps: 0 is out of range (expected >= 1)");
  if (options.train_bytes == 0)
    throw invalid_input("link peaks: train_bytes: 0 is out of range (expected > 0)");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0)
      throw invalid_input(fmt::format("link peaks: sizes[{}]: 0 is out of range (expected > 0)", i));
  }
  return sizes;
}

}  // namespace

// Each train walks at least train_bytes of fresh memory, as a pipeline's
// copies do, rather than re-copying a region that the host's caches hold.
link_sweeper::link_sweeper(const link_peak_options& options)
    : sizes_(checked_sizes(options)),
      train_bytes_(options.train_bytes),
      reps_(options.reps),
      bench_(std::make_unique<detail::copy_bench>(
          std::max(*std::max_element(sizes_.begin(), sizes_.end()) * 2, train_bytes_))) {}

link_sweeper::~link_sweeper() = default;
link_sweeper::link_sweeper(link_sweeper&&) noexcept = default;
link_sweeper& link_sweeper::operator=(link_sweeper&&) noexcept = default;

link_peaks measure_link_peaks(const link_peak_options& options) {
  return link_sweeper(options).measure();
}

link_peaks link_sweeper::measure() {
  detail::copy_bench& bench = *bench_;
  link_peaks peaks;
  for (const std::size_t bytes : sizes_) {
    const unsigned count = detail::train_length(bytes, train_bytes_);
    std::vector<double> up;
    std::vector<double> down;
    std::vector<double> both;
    for (unsigned r = 0; r < reps_; ++r) {
      up.push_back(static_cast<double>(bytes) /
                   (bench.train_ms(copy_direction::h2d, host_memory::pinned, bytes, count) * 1e6));
      down.push_back(static_cast<double>(bytes) /
                     (bench.train_ms(copy_direction::d2h, host_memory::pinned, bytes, count) * 1e6));
      const auto [h2d_ms, d2h_ms] = bench.both_ms(bytes, count);
      // Both trains move the same bytes; the pair is done when the slower ends.
      both.push_back(2.0 * static_cast<double>(bytes) / (std::max(h2d_ms, d2h_ms) * 1e6));
    }
    const measured up_rate = summarize(up);
    const measured down_rate = summarize(down);
    const measured both_rate = summarize(both);
    keep_best(peaks.h2d, bytes, up_rate);
    keep_best(peaks.d2h, bytes, down_rate);
    keep_best(peaks.both, bytes, both_rate);
    // The median rate's copy time: bytes / (GB/s * 1e6) ms; the pair moves twice the bytes.
    const auto b = static_cast<double>(bytes);
    peaks.points.push_back({bytes, b / (up_rate.median * 1e6), b / (down_rate.median * 1e6),
                            2.0 * b / (both_rate.median * 1e6)});
  }
  return peaks;
}

}  // namespace overlap::probe
