// overlap::BandwidthCurve: a copy's effective rate as a function of its size.
#pragma once

#include <cstdint>
#include <vector>

namespace overlap {

/// One point of a copy bandwidth curve: the effective rate at a size.
struct BandwidthPoint {
  std::uint64_t bytes = 0;            ///< copy size
  double gigabytes_per_second = 0.0;  ///< 1 GB = 1e9 bytes
};

/// Effective copy bandwidth as a function of size, interpolated linearly in
/// log2(bytes) between points and held constant beyond the ends.
struct BandwidthCurve {
  std::vector<BandwidthPoint> points;  ///< strictly increasing in bytes

  /// Bandwidth in GB/s for a copy of `bytes`.
  [[nodiscard]] double at(std::uint64_t bytes) const;
};

}  // namespace overlap
