// row_samples: a row's samples into a variant_result.
#include "row_samples.hpp"

#include <utility>

namespace overlap::bench::detail {

void row_samples::add(const run_clock::sample& s) {
  device_ms.push_back(s.device_ms);
  host_ms.push_back(s.host_ms);
  if (s.info.host_issue_ms) {
    issue_ms.push_back(*s.info.host_issue_ms);
    issue_per_chunk_us.push_back(*s.info.host_issue_ms * 1000.0 / static_cast<double>(s.info.chunks));
  }
}

void row_samples::describe(const run_info& info) {
  result.chunks = info.chunks;
  result.chunk_bytes = info.chunk_bytes;
  result.streams = info.streams;
  result.device_bytes = info.device_bytes;
  result.per_stage = info.per_stage;
}

variant_result row_samples::finish() && {
  result.device_ms = summarize(std::move(device_ms));
  result.host_ms = summarize(std::move(host_ms));
  if (!issue_ms.empty()) {
    result.host_issue_ms = summarize(std::move(issue_ms));
    result.host_issue_per_chunk_us = summarize(std::move(issue_per_chunk_us));
  }
  return std::move(result);
}

stats run_by_run(const std::vector<double>& numerators, const std::vector<double>& denominators) {
  std::vector<double> ratios;
  ratios.reserve(numerators.size());
  for (std::size_t i = 0; i < numerators.size() && i < denominators.size(); ++i) {
    if (denominators[i] > 0.0) ratios.push_back(numerators[i] / denominators[i]);
  }
  return summarize(std::move(ratios));
}

}  // namespace overlap::bench::detail
