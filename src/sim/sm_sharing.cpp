#include "sm_sharing.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace overlap::sim {

void share_sms(std::span<const double> demand, std::span<double> speed) {
  const std::size_t n = demand.size();
  const double asked = std::accumulate(demand.begin(), demand.end(), 0.0);
  if (asked <= 1.0 + 1e-12) {
    std::fill(speed.begin(), speed.end(), 1.0);
    return;
  }
  // Max-min fair: the smallest asks are met in full while they are under an
  // equal split of what is left; the rest share the remainder equally.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return demand[a] < demand[b]; });
  double left = 1.0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    const double equal = left / static_cast<double>(n - k);
    const double given = std::min(demand[i], equal);
    speed[i] = given / demand[i];
    left -= given;
  }
}

}  // namespace overlap::sim
