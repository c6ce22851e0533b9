#include "plan_bounds.hpp"

#include <algorithm>
#include <numeric>

#include "op_cost.hpp"
#include "overlap/core/pipeline_shape.hpp"

namespace overlap::sim::detail {

namespace {

double copy_time(copy_direction direction, std::uint64_t bytes, host_memory memory,
                 const DeviceModel& model) {
  Op op;
  op.kind = op_kind::copy;
  op.direction = direction;
  op.bytes = bytes;
  op.memory = memory;
  return solo_duration(op, model);
}

double sum(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

/// The smallest a[c] + b[c] over the chunks.
double min_pair_sum(const std::vector<double>& a, const std::vector<double>& b) {
  double best = a[0] + b[0];
  for (std::size_t c = 1; c < a.size(); ++c) best = std::min(best, a[c] + b[c]);
  return best;
}

/// How much each direction slows at least while the other runs.
struct Slowdowns {
  double h2d = 1.0;
  double d2h = 1.0;
};

/// The least time to do `a` ms of H2D and `b` ms of D2H copy work: one engine
/// does a + b; two engines copying both ways at once for a time x do x / s_h
/// of the H2D work and x / s_d of the D2H work while the rest runs alone, so
/// the total a + b - x (1/s_h + 1/s_d - 1) is smallest with as much overlap
/// as the smaller side allows, when overlap helps at all (1/s_h + 1/s_d > 1).
/// With the least slowdowns the copies can take, it is a bound.
double copy_floor(double a, double b, Slowdowns s, const DeviceModel& model) {
  if (!model.copy_engine_per_direction) return a + b;
  const double gain = std::max(0.0, 1.0 / s.h2d + 1.0 / s.d2h - 1.0);
  return a + b - std::min(a * s.h2d, b * s.d2h) * gain;
}

/// The least slowdowns a copy of any size can take on `model`: a by-size
/// curve interpolates between its points and holds its ends.
Slowdowns least_slowdowns(const DeviceModel& model) {
  if (model.bidirectional.empty())
    return {model.h2d_slowdown_when_bidirectional, model.d2h_slowdown_when_bidirectional};
  Slowdowns least{model.bidirectional[0].h2d_slowdown, model.bidirectional[0].d2h_slowdown};
  for (const BidirectionalPoint& p : model.bidirectional) {
    least.h2d = std::min(least.h2d, p.h2d_slowdown);
    least.d2h = std::min(least.d2h, p.d2h_slowdown);
  }
  return least;
}

double peak_rate(const BandwidthCurve& curve) {
  double peak = 0.0;
  for (const BandwidthPoint& point : curve.points) peak = std::max(peak, point.gigabytes_per_second);
  return peak;
}

}  // namespace

ChunkCosts chunk_costs(const std::vector<std::uint64_t>& chunks, const Workload& workload,
                       const std::optional<KernelCost>& kernel, const DeviceModel& model) {
  PipelineShape shape;
  shape.h2d_bytes = workload.bytes_in;
  shape.d2h_bytes = workload.bytes_out;
  shape.chunk_schedule = chunks;
  ChunkCosts costs;
  const bool has_output = workload.bytes_out > 0;
  bool first = true;
  for (const ChunkBytes& chunk : chunk_bytes(shape)) {
    const double h2d_slowdown = model.bidirectional_slowdown(copy_direction::h2d, chunk.in.bytes);
    const double d2h_slowdown = model.bidirectional_slowdown(copy_direction::d2h, chunk.out.bytes);
    costs.h2d_slowdown = first ? h2d_slowdown : std::min(costs.h2d_slowdown, h2d_slowdown);
    costs.d2h_slowdown = first ? d2h_slowdown : std::min(costs.d2h_slowdown, d2h_slowdown);
    first = false;
    costs.h2d.push_back(copy_time(copy_direction::h2d, chunk.in.bytes, workload.memory, model));
    const double time = kernel ? kernel->time(chunk.in.bytes) : 0.0;
    costs.kernel.push_back(time);
    // As make_pipeline_program sets the kernel's share: per-byte work over the whole time.
    const double work =
        kernel ? kernel->ms_per_mib * static_cast<double>(chunk.in.bytes) / (1024.0 * 1024.0) : 0.0;
    costs.kernel_sm.push_back(time > 0.0 ? time * std::clamp(work / time, 0.01, 1.0) : 0.0);
    costs.d2h.push_back(has_output ? copy_time(copy_direction::d2h, chunk.out.bytes, workload.memory, model)
                                   : 0.0);
  }
  // The calls make_pipeline_program issues: a copy in, a launch and a copy
  // out per chunk (no slot events: the planner's rings are whole multiples
  // of the stream count), then cudaDeviceSynchronize.
  const double per_chunk = model.call_cost(op_kind::copy) +
                           (kernel ? model.call_cost(op_kind::kernel) : 0.0) +
                           (has_output ? model.call_cost(op_kind::copy) : 0.0);
  costs.last_issue_ms = per_chunk * static_cast<double>(chunks.size());
  costs.issue_ms = costs.last_issue_ms + model.call_cost(op_kind::device_synchronize);
  return costs;
}

double lower_bound(const ChunkCosts& costs, std::uint32_t streams, const DeviceModel& model) {
  const std::size_t n = costs.h2d.size();
  const double h2d = sum(costs.h2d);
  const double d2h = sum(costs.d2h);
  // The SMs do every kernel's work at most once over: with shared SMs the
  // kernels' shares of the GPU add up to at most 1; without, a kernel starts
  // with 90% of its ask free, so they add up to at most 1 / 0.9.
  const double sm_work = sum(costs.kernel_sm) * (model.kernels_share_sms ? 1.0 : 0.9);
  // Each copy engine runs its copies one at a time, and copies both ways slow each other.
  const Slowdowns slowdowns{costs.h2d_slowdown, costs.d2h_slowdown};
  double bound = std::max(copy_floor(h2d, d2h, slowdowns, model), sm_work);
  // No download starts before some chunk's upload and kernel are done: by
  // then at most that much upload work is done, the rest still shares the link.
  const double first_download = min_pair_sum(costs.h2d, costs.kernel);
  bound = std::max(bound,
                   first_download + copy_floor(std::max(0.0, h2d - first_download), d2h, slowdowns, model));
  // A stream runs its chunks' ops one after another.
  std::vector<double> stream_work(streams, 0.0);
  for (std::size_t c = 0; c < n; ++c)
    stream_work[c % streams] += costs.h2d[c] + costs.kernel[c] + costs.d2h[c];
  bound = std::max(bound, *std::max_element(stream_work.begin(), stream_work.end()));
  // The last op issued is the last chunk's last stage: it starts after the host issued it.
  const double last_stage = costs.d2h[n - 1] > 0.0      ? costs.d2h[n - 1]
                            : costs.kernel[n - 1] > 0.0 ? costs.kernel[n - 1]
                                                        : costs.h2d[n - 1];
  bound = std::max(bound, costs.last_issue_ms + last_stage);
  bound = std::max(bound, costs.issue_ms);
  // Fill and drain: the last upload still needs its kernel and download;
  // no download starts before some chunk's upload and kernel; the kernels
  // wait for an upload and leave a download behind.
  bound = std::max(bound, h2d + min_pair_sum(costs.kernel, costs.d2h));
  bound = std::max(bound, min_pair_sum(costs.h2d, costs.kernel) + d2h);
  bound = std::max(bound, *std::min_element(costs.h2d.begin(), costs.h2d.end()) + sm_work +
                              *std::min_element(costs.d2h.begin(), costs.d2h.end()));
  return bound;
}

namespace {

// The floor over several GPUs (see PlanFloor): the copies at the sum of the
// GPUs' link rates (data split in proportion, the least any split takes),
// the host's measured totals with every GPU copying, and the kernel's work
// shared evenly.
PlanFloor floor_of_devices(const Workload& workload, const std::optional<KernelCost>& kernel,
                           const DeviceModel& model, std::uint32_t devices) {
  PlanFloor one = floor_of(workload, kernel, model);
  PlanFloor floor;
  floor.devices = devices;
  double h2d_share = 0.0;  // the GPUs' rates over GPU 0's, summed
  double d2h_share = 0.0;
  for (device_id d = 0; d < devices; ++d) {
    h2d_share += model.host ? 1.0 / model.host->copy_time_scale(d, copy_direction::h2d) : 1.0;
    d2h_share += model.host ? 1.0 / model.host->copy_time_scale(d, copy_direction::d2h) : 1.0;
  }
  floor.h2d_ms = one.h2d_ms / h2d_share;
  floor.d2h_ms = one.d2h_ms / d2h_share;
  floor.links_ms = copy_floor(floor.h2d_ms, floor.d2h_ms, least_slowdowns(model), model);
  if (model.host && model.host->h2d_gigabytes_per_second > 0.0) {
    const HostLinks& h = *model.host;
    const auto in = static_cast<double>(workload.bytes_in);
    const auto out = static_cast<double>(workload.bytes_out);
    floor.host_ms = std::max({in / (h.h2d_gigabytes_per_second * 1e6),
                              out > 0.0 ? out / (h.d2h_gigabytes_per_second * 1e6) : 0.0,
                              out > 0.0 ? (in + out) / (h.both_gigabytes_per_second * 1e6) : 0.0});
  }
  floor.copies_ms = std::max(floor.links_ms, floor.host_ms);
  floor.kernel_ms = one.kernel_ms / devices;
  floor.total_ms = std::max(floor.copies_ms, floor.kernel_ms);
  if (floor.kernel_ms > floor.copies_ms) {
    floor.bound = "kernel";
  } else if (floor.host_ms > floor.links_ms) {
    floor.bound = "the host's shared rate";
  } else {
    floor.bound = "a GPU's link";
  }
  return floor;
}

}  // namespace

PlanFloor floor_of(const Workload& workload, const std::optional<KernelCost>& kernel,
                   const DeviceModel& model, std::uint32_t devices) {
  if (devices > 1) return floor_of_devices(workload, kernel, model, devices);
  return floor_of(workload, kernel, model);
}

PlanFloor floor_of(const Workload& workload, const std::optional<KernelCost>& kernel,
                   const DeviceModel& model) {
  const bool pinned = workload.memory == host_memory::pinned;
  const double h2d_rate = peak_rate(pinned ? model.h2d_pinned : model.h2d_pageable);
  const double d2h_rate = peak_rate(pinned ? model.d2h_pinned : model.d2h_pageable);
  PlanFloor floor;
  // bytes / (GB/s x 1e9) s = bytes / (GB/s x 1e6) ms.
  floor.h2d_ms = static_cast<double>(workload.bytes_in) / (h2d_rate * 1e6);
  floor.d2h_ms = static_cast<double>(workload.bytes_out) / (d2h_rate * 1e6);
  floor.copies_ms = copy_floor(floor.h2d_ms, floor.d2h_ms, least_slowdowns(model), model);
  // The kernels' per-byte work over all the data: a launch's fixed part can
  // hide behind another stream's kernel, so one launch over everything is
  // not a floor (a time or a rate has no fixed part: the same figure).
  floor.kernel_ms =
      kernel ? std::min(kernel->time(workload.bytes_in),
                        kernel->ms_per_mib * static_cast<double>(workload.bytes_in) / (1024.0 * 1024.0))
             : 0.0;
  floor.total_ms = std::max(floor.copies_ms, floor.kernel_ms);
  if (floor.kernel_ms > floor.copies_ms) {
    floor.bound = "kernel";
  } else if (floor.copies_ms <= floor.h2d_ms * (1 + 1e-12) && floor.d2h_ms < floor.h2d_ms) {
    floor.bound = "H2D copies";
  } else if (floor.copies_ms <= floor.d2h_ms * (1 + 1e-12) && floor.h2d_ms < floor.d2h_ms) {
    floor.bound = "D2H copies";
  } else {
    floor.bound = "copies in both directions";
  }
  return floor;
}

}  // namespace overlap::sim::detail
