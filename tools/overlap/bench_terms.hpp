// What `overlap bench`'s text report, JSON and HTML page all call a
// workload's parts: its floor, its best Pipeline, its sequential run.
#pragma once

#if OVERLAP_HAS_CUDA

#include <fmt/format.h>

#include <string>

#include "overlap/core/error.hpp"
#include "workloads/driver.hpp"

namespace overlap::cli {

/// The floor a workload's variants are compared with: both copy directions
/// at once for the transfer-bound workload, the kernel alone for the other.
inline const bench::variant_result& floor_of(const bench::workload_result& w) {
  return w.floor(w.kind == bench::workload_kind::transfer_bound ? bench::variant_kind::floor_both_directions
                                                                : bench::variant_kind::floor_kernel);
}

inline const char* floor_words(const bench::workload_result& w) {
  return w.kind == bench::workload_kind::transfer_bound ? "the both-directions floor"
                                                        : "the kernel-alone floor";
}

inline const char* kernel_words(const bench::workload_result& w) {
  return w.kind == bench::workload_kind::transfer_bound ? "y = 2x + 1" : "v = sinf(v) * cosf(v) + v, x100";
}

/// a / b, or 0 when b is not positive.
inline double ratio(double a, double b) {
  return b > 0.0 ? a / b : 0.0;
}

/// The first variant of `kind`; throws overlap::error when none was measured.
inline const bench::variant_result& required(const bench::workload_result& w, bench::variant_kind kind) {
  const bench::variant_result* v = w.find(kind);
  if (v == nullptr) throw error(fmt::format("bench: no {} variant was measured", bench::to_string(kind)));
  return *v;
}

inline const bench::variant_result& sequential_of(const bench::workload_result& w) {
  return required(w, bench::variant_kind::sequential);
}

inline const bench::variant_result& best_of(const bench::workload_result& w) {
  return w.variants.at(w.best_pipeline);
}

/// A CUDA version number for people: 13000 -> "13.0".
inline std::string version_text(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
