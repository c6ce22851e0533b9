// summarize: median, extremes and the samples themselves.
#include <algorithm>
#include <utility>

#include "overlap/bench/driver.hpp"

namespace overlap::bench {

stats summarize(std::vector<double> samples) {
  stats s;
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  s.min = sorted.front();
  s.max = sorted.back();
  s.samples = std::move(samples);
  return s;
}

}  // namespace overlap::bench
