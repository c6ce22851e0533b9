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

/// "device 0: NVIDIA H100 80GB HBM3, compute 9.0, 132 SMs, ...; driver 13000 (CUDA 13.0), runtime 13.0".
inline std::string device_line(const bench::device_info& d) {
  return fmt::format(
      "device {}: {}, compute {}.{}, {} SMs, asyncEngineCount {}, {:.1f} GiB; driver {} (CUDA {}), runtime "
      "{}",
      d.ordinal, d.name, d.compute_major, d.compute_minor, d.sm_count, d.async_engine_count,
      static_cast<double>(d.global_memory_bytes) / static_cast<double>(std::size_t{1} << 30),
      d.driver_version, version_text(d.driver_version), version_text(d.runtime_version));
}

/// "best Pipeline: NAME (N chunks), T ms = Rx the ... floor (F ms), Sx sequential".
inline std::string best_line(const bench::workload_result& w) {
  const bench::variant_result& best = best_of(w);
  const double floor_ms = floor_of(w).device_ms.median;
  return fmt::format("best Pipeline: {} ({} chunks), {:.3f} ms = {:.3f}x {} ({:.3f} ms), {:.3f}x sequential",
                     best.name, best.chunks, best.device_ms.median, ratio(best.device_ms.median, floor_ms),
                     floor_words(w), floor_ms,
                     ratio(best.device_ms.median, sequential_of(w).device_ms.median));
}

/// The workload whose best run was recorded: the transfer-bound one when it
/// was, else any; nullptr when none was.
inline const bench::workload_result* recorded_workload(const bench::bench_result& r) {
  for (const bench::workload_result& w : r.workloads) {
    if (w.kind == bench::workload_kind::transfer_bound && w.best_timeline) return &w;
  }
  for (const bench::workload_result& w : r.workloads) {
    if (w.best_timeline) return &w;
  }
  return nullptr;
}

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
