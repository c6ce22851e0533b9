#include "timed_rows.hpp"

#include <utility>

#include "row_samples.hpp"

namespace overlap::bench::detail {

std::vector<variant_result> time_rows(run_clock& clock, unsigned warmup, unsigned reps,
                                      const std::vector<row_spec>& rows,
                                      const std::function<void(unsigned round)>& after_round) {
  std::vector<row_samples> samples(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    samples[r].result.kind = rows[r].kind;
    samples[r].result.name = rows[r].name;
  }
  for (unsigned i = 0; i < warmup + reps; ++i) {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const row_hooks& hooks = rows[r].hooks;
      if (hooks.before) hooks.before();
      const run_clock::sample s = clock.time(rows[r].run);
      if (i == 0) samples[r].describe(s.info);
      if (hooks.check) hooks.check(i);
      if (i >= warmup) samples[r].add(s);
    }
    if (after_round) after_round(i);
  }
  std::vector<variant_result> results;
  results.reserve(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    samples[r].result.verified = static_cast<bool>(rows[r].hooks.check);
    results.push_back(std::move(samples[r]).finish());
  }
  return results;
}

variant_result time_row(run_clock& clock, unsigned warmup, unsigned reps, variant_kind kind, std::string name,
                        const runner& run, const row_hooks& hooks) {
  return std::move(time_rows(clock, warmup, reps, {row_spec{kind, std::move(name), run, hooks}}).front());
}

}  // namespace overlap::bench::detail
