// overlap::probe::measure_link_peaks: the copy rates the host<->device link
// sustains at its best, per direction and with both directions at once.
//
// A floor must be a rate the hardware really reaches, not one copy's time
// with its start-up included: each size of the sweep is a train of
// back-to-back copies queued behind a spin kernel that holds the GPU while
// the host enqueues them (so enqueue cost stays out), timed with events from
// the first copy to the last. A direction's peak is the best median rate over
// the sizes. Pinned host memory throughout.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace overlap::probe {

namespace detail {
class copy_bench;
}

/// What to sweep.
struct link_peak_options {
  /// Bytes per copy; each size is timed as a train of copies moving at least
  /// train_bytes. Default: 1, 4, 16 and 64 MiB.
  std::vector<std::size_t> sizes;
  /// The least bytes a timed train moves (> 0).
  std::size_t train_bytes = std::size_t{256} << 20;
  unsigned reps = 5;  ///< timed trains per size and direction (median taken)
};

/// A peak rate and where the sweep found it.
struct link_rate {
  double gigabytes_per_second = 0.0;  ///< the best median over the sizes; 1 GB = 1e9 bytes
  std::size_t at_bytes = 0;           ///< the copy size of that median
  double spread = 0.0;                ///< (max - min) / median of that size's reps
};

/// One size of the sweep: the median time one copy of a train took.
struct link_point {
  std::size_t bytes = 0;  ///< per copy
  double h2d_ms = 0.0;    ///< an H2D copy, the D2H engine idle
  double d2h_ms = 0.0;    ///< a D2H copy, the H2D engine idle
  double both_ms = 0.0;   ///< an H2D and a D2H copy running at once (the slower train's, per copy)
};

/// Peak H2D, peak D2H, and peak total (H2D + D2H bytes) with both running at once.
struct link_peaks {
  link_rate h2d;   ///< H2D alone
  link_rate d2h;   ///< D2H alone
  link_rate both;  ///< H2D + D2H bytes per second with both directions at once
  /// Every size's medians, in the order swept: what a copy costs beyond
  /// its bytes (bench's chunked floor fits them).
  std::vector<link_point> points;
};

/// The sweep of measure_link_peaks, taken as often as asked with the same
/// buffers: `overlap bench` sweeps the link again beside each run it
/// judges against the link, so that both see the link as it was then.
class link_sweeper {
 public:
  /// Checks the options and allocates the buffers on the current device:
  /// two of pinned host memory, two of device memory and one pageable, each
  /// the larger of twice the largest size and train_bytes. Throws
  /// overlap::invalid_input for an empty size, zero reps or zero train
  /// bytes, overlap::cuda::cuda_error.
  explicit link_sweeper(const link_peak_options& options = {});
  ~link_sweeper();  ///< Frees the buffers.
  link_sweeper(const link_sweeper&) = delete;
  link_sweeper& operator=(const link_sweeper&) = delete;
  /// Takes the other's buffers; the other may only be destroyed or assigned to.
  link_sweeper(link_sweeper&& other) noexcept;
  /// Frees this one's buffers and takes the other's.
  link_sweeper& operator=(link_sweeper&& other) noexcept;

  /// Sweeps every size, options.reps timed trains per size and direction.
  [[nodiscard]] link_peaks measure();

 private:
  std::vector<std::size_t> sizes_;
  std::size_t train_bytes_;
  unsigned reps_;
  std::unique_ptr<detail::copy_bench> bench_;
};

/// Measures on the current device (a link_sweeper used once); throws
/// overlap::cuda::cuda_error, or overlap::invalid_input for an empty size,
/// zero reps or zero train bytes.
[[nodiscard]] link_peaks measure_link_peaks(const link_peak_options& options = {});

}  // namespace overlap::probe
