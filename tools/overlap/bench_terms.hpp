// What `overlap bench`'s text report, JSON and HTML page all call a
// workload's parts: its floor, its best Pipeline, its sequential run; and
// how the JSON writes a median with its spread.
// CUDA-free (the results are plain data), so the tests need no GPU.
#pragma once

#if OVERLAP_HAS_CUDA

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "overlap/bench/driver.hpp"
#include "overlap/core/error.hpp"

namespace overlap::cli {

/// A median with its spread and samples, as every part of the JSON writes one.
inline nlohmann::ordered_json stats_json(const bench::stats& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"samples", s.samples}};
}

/// The transfer-bound workload's link floor; throws overlap::error when it was not measured.
inline const bench::link_floor& link_floor_of(const bench::workload_result& w) {
  if (!w.link) throw error(fmt::format("bench: {} has no link floor", bench::to_string(w.kind)));
  return *w.link;
}

/// The floor (ms) a workload's variants are compared with: the link floor
/// (the link's peak rates) for the transfer-bound workload, the kernel alone
/// for the other.
inline double floor_ms(const bench::workload_result& w) {
  return w.kind == bench::workload_kind::transfer_bound
             ? link_floor_of(w).ms
             : w.floor(bench::variant_kind::floor_kernel).device_ms.median;
}

/// The floor's key in the JSON: "link_floor" or "floor_kernel".
inline const char* floor_key(const bench::workload_result& w) {
  return w.kind == bench::workload_kind::transfer_bound ? "link_floor" : "floor_kernel";
}

/// The floor for people: "the link floor" or "the kernel-alone floor".
inline const char* floor_words(const bench::workload_result& w) {
  return w.kind == bench::workload_kind::transfer_bound ? "the link floor" : "the kernel-alone floor";
}

/// "bound by: both directions at 100.3 GB/s".
inline std::string bound_by_text(const bench::link_floor& f) {
  return fmt::format("bound by: {} at {:.1f} GB/s", bench::to_string(f.bound_by),
                     f.binding_peak().gigabytes_per_second);
}

/// "H2D 53.1 GB/s at 64 MiB (spread 1.2%)".
inline std::string peak_text(const char* name, const bench::link_peak& p) {
  return fmt::format("{} {:.1f} GB/s at {} (spread {:.1f}%)", name, p.gigabytes_per_second,
                     bench::format_bytes(p.at_bytes), p.spread * 100.0);
}

/// "link floor 5.123 ms, bound by: both directions at 100.3 GB/s; peaks: H2D ..., D2H ..., both ...".
inline std::string link_floor_line(const bench::link_floor& f) {
  return fmt::format("link floor {:.3f} ms, {}; peaks: {}, {}, {}", f.ms, bound_by_text(f),
                     peak_text("H2D", f.h2d), peak_text("D2H", f.d2h), peak_text("both directions", f.both));
}

/// The transfer-bound workload's chunked floor (ms); throws overlap::error
/// when the link floor or its chunked part was not measured.
inline double chunked_floor_ms(const bench::workload_result& w) {
  const bench::chunked_floor& c = link_floor_of(w).chunked;
  if (c.chunks == 0) throw error(fmt::format("bench: {} has no chunked floor", bench::to_string(w.kind)));
  return c.ms;
}

/// "chunked floor 5.571 ms = 1.051x the link floor (32 chunks of 8 MiB; one copy of a chunk: H2D 0.156 ms
/// alone, D2H 0.155 ms alone, 0.170 ms both at once; kernel alone 0.210 ms)", or empty when not measured.
inline std::string chunked_floor_line(const bench::link_floor& f) {
  const bench::chunked_floor& c = f.chunked;
  if (c.chunks == 0) return {};
  return fmt::format(
      "chunked floor {:.3f} ms = {:.3f}x the link floor ({} chunks of {}; one copy of a chunk: H2D {:.3f} ms "
      "alone, D2H {:.3f} ms alone, {:.3f} ms both at once; kernel alone {:.3f} ms)",
      c.ms, f.ms > 0.0 ? c.ms / f.ms : 0.0, c.chunks, bench::format_bytes(c.chunk_bytes), c.h2d_ms, c.d2h_ms,
      c.pair_ms, c.kernel_ms);
}

/// "copies of 1 MiB, 4 MiB, 16 MiB, 64 MiB in trains of 256 MiB, 5 reps each".
inline std::string link_sweep_text(const bench::link_sweep& sweep) {
  std::string sizes;
  for (const std::size_t size : sweep.sizes) sizes += (sizes.empty() ? "" : ", ") + bench::format_bytes(size);
  return fmt::format("copies of {} in trains of {}, {} reps each", sizes,
                     bench::format_bytes(sweep.train_bytes), sweep.reps);
}

/// The kernel for people: "y = 2x + 1".
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

/// The one-stream run.
inline const bench::variant_result& sequential_of(const bench::workload_result& w) {
  return required(w, bench::variant_kind::sequential);
}

/// The fastest Pipeline of the sweep (or the default one).
inline const bench::variant_result& best_of(const bench::workload_result& w) {
  return w.variants.at(w.best_pipeline);
}

/// The fastest Pipeline of the sweep's uniform chunk sizes; throws overlap::error when none was measured.
inline const bench::variant_result& best_uniform_of(const bench::workload_result& w) {
  const bench::variant_result* best = w.best_swept();
  if (best == nullptr) throw error(fmt::format("bench: {} has no swept Pipeline", bench::to_string(w.kind)));
  return *best;
}

/// The median host cost of issuing one chunk (us), or 0 when not measured.
inline double host_cost_per_chunk_us(const bench::variant_result& v) {
  return v.host_issue_per_chunk_us ? v.host_issue_per_chunk_us->median : 0.0;
}

/// How much slower on the device the device-scheduled replay may run than the
/// host-scheduled one (run by run, median) and still be the one whose host
/// cost is judged: the 1% the compute-bound default is allowed over the kernel alone.
inline constexpr double device_scheduling_slack = 1.01;

/// The graph replay whose host cost the verdict judges: the one a user would
/// pick for the workload. Device scheduling cuts the host's cost; it is
/// picked when it costs the device no more than device_scheduling_slack.
struct judged_replay {
  const bench::variant_result* replay = nullptr;  ///< null when no graph was replayed
  bool device_scheduled = false;
};

inline judged_replay replay_judged(const bench::workload_result& w) {
  if (!w.best_graph) return {};
  if (w.best_graph_device && w.graph_device_to_host &&
      w.graph_device_to_host->median <= device_scheduling_slack) {
    return {&*w.best_graph_device, true};
  }
  return {&*w.best_graph, false};
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
  const double floor_time = floor_ms(w);
  return fmt::format("best Pipeline: {} ({} chunks), {:.3f} ms = {:.3f}x {} ({:.3f} ms), {:.3f}x sequential",
                     best.name, best.chunks, best.device_ms.median, ratio(best.device_ms.median, floor_time),
                     floor_words(w), floor_time,
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
