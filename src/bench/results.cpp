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

}  // namespace overlap::bench
