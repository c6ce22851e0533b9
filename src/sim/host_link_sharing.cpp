#include "host_link_sharing.hpp"

#include <algorithm>

namespace overlap::sim {

void share_host_links(const HostLinks& host, std::span<const host_copy_demand> copies,
                      std::span<double> factor) {
  std::fill(factor.begin(), factor.end(), 1.0);
  if (copies.empty()) return;
  const device_id first = copies.front().device;
  const bool several_gpus = std::any_of(copies.begin(), copies.end(),
                                        [first](const host_copy_demand& c) { return c.device != first; });
  if (!several_gpus) return;
  double h2d = 0.0;
  double d2h = 0.0;
  for (const host_copy_demand& c : copies)
    (c.direction == copy_direction::h2d ? h2d : d2h) += c.gigabytes_per_second;
  const double h2d_factor = h2d > host.h2d_gigabytes_per_second ? host.h2d_gigabytes_per_second / h2d : 1.0;
  const double d2h_factor = d2h > host.d2h_gigabytes_per_second ? host.d2h_gigabytes_per_second / d2h : 1.0;
  double both_factor = 1.0;
  if (h2d > 0.0 && d2h > 0.0) {
    const double total = h2d * h2d_factor + d2h * d2h_factor;
    if (total > host.both_gigabytes_per_second) both_factor = host.both_gigabytes_per_second / total;
  }
  for (std::size_t i = 0; i < copies.size(); ++i)
    factor[i] = (copies[i].direction == copy_direction::h2d ? h2d_factor : d2h_factor) * both_factor;
}

}  // namespace overlap::sim
