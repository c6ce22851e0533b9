#include <algorithm>

#include "overlap/core/error.hpp"
#include "overlap/probe/probe.hpp"

namespace overlap::probe {

measured summarize(std::vector<double> samples) {
  if (samples.empty()) throw error("overlap probe: internal error: a measurement has no samples");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const double median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return {median, samples.front(), samples.back()};
}

}  // namespace overlap::probe
