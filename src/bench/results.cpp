// Look-ups in a workload's measured rows.
#include "overlap/bench/driver.hpp"

namespace overlap::bench {

const variant_result& workload_result::floor(variant_kind wanted) const {
  for (const variant_result& f : floors) {
    if (f.kind == wanted) return f;
  }
  throw error("workload_result: no floor " + std::string(to_string(wanted)));
}

const variant_result* workload_result::find(variant_kind wanted) const noexcept {
  for (const variant_result& v : variants) {
    if (v.kind == wanted) return &v;
  }
  return nullptr;
}

const variant_result* workload_result::best_swept() const noexcept {
  const variant_result* best = nullptr;
  for (const variant_result& v : variants) {
    if (v.kind == variant_kind::pipeline && (best == nullptr || v.device_ms.median < best->device_ms.median))
      best = &v;
  }
  return best;
}

}  // namespace overlap::bench
