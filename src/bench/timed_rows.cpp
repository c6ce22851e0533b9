#include "timed_rows.hpp"

#include <utility>

#include "row_samples.hpp"

namespace overlap::bench::detail {

variant_result time_row(run_clock& clock, unsigned warmup, unsigned reps, variant_kind kind, std::string name,
                        const runner& run, const row_hooks& hooks) {
  row_samples row;
  row.result.kind = kind;
  row.result.name = std::move(name);
  for (unsigned i = 0; i < warmup + reps; ++i) {
    if (hooks.before) hooks.before();
    const run_clock::sample s = clock.time(run);
    if (i == 0) row.describe(s.info);
    if (hooks.check) hooks.check(i);
    if (i >= warmup) row.add(s);
  }
  row.result.verified = static_cast<bool>(hooks.check);
  return std::move(row).finish();
}

}  // namespace overlap::bench::detail
