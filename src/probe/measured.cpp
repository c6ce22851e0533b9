#include <algorithm>
#include <string>

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

double false_dependency_test::slowdown(const std::string& issue, unsigned streams) const {
  const false_dependency_run* fewest = nullptr;
  const false_dependency_run* at = nullptr;
  for (const auto& run : runs) {
    if (run.issue != issue) continue;
    if (fewest == nullptr || run.streams < fewest->streams) fewest = &run;
    if (run.streams == streams) at = &run;
  }
  if (fewest == nullptr || at == nullptr || fewest->makespan_ms.median <= 0.0) return 0.0;
  return at->makespan_ms.median / fewest->makespan_ms.median;
}

}  // namespace overlap::probe
