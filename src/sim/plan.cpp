// The planner's search: enumerate the space, order it by lower bound,
// simulate until no remaining configuration can beat the best two found.
//
// Measured (-O2, the 2-core build box), h100 preset, 256 MiB each way: 856
// configurations (38 schedules x 1..8 streams x 2 orders x 2 ring depths).
// Simulating all of them takes 0.18-0.26 s; with the bound, 360-470 are
// simulated and the search takes 0.03 s (kernel 0 or 2 ms, transfer-bound)
// to 0.2 s (kernel 20 ms: the survivors are the many-chunk schedules). 1 GiB
// each way: 0.06 s instead of 0.24 s.
#include "overlap/sim/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "overlap/core/byte_size.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/sim/simulator.hpp"
#include "plan_bounds.hpp"
#include "plan_space.hpp"

namespace overlap::sim {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

/// Predictions within 0.1% of the fastest are a tie, and the simplest of
/// them wins: a model within ~2% of an H100 (bench/RESULTS.md) cannot tell
/// 8 streams from 4 that it predicts 0.02% apart, and the 4 hold half the
/// device memory.
constexpr double tie_tolerance = 1e-3;

bool ties_with(double ms, double fastest_ms) {
  return ms <= fastest_ms * (1.0 + tie_tolerance) + 1e-12;
}

/// Times within a picosecond are equal (the simulator's sums differ in the last bits).
std::int64_t time_key(double ms) {
  return std::llround(ms * 1e9);
}

/// How two candidates of tied time compare, simplest first: a negative
/// value prefers a, a positive one b, with what decided it.
struct TieBreak {
  int sign = 0;
  const char* reason = "";
};

template <typename T>
int compare(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

/// Depth-first first: it needs no more than one slot per stream and issues
/// each chunk whole; breadth-first next; stage-first holds every chunk.
/// (Stage streams is never searched: its streams are roles, not a count.)
const char* issue_preference(issue_order order) {
  switch (order) {
    case issue_order::depth_first: return "depth-first issue";
    case issue_order::breadth_first: return "breadth-first issue";
    case issue_order::stage_first: return "stage-first issue";
    case issue_order::stage_streams: return "stage-streams issue";
  }
  return "depth-first issue";
}

TieBreak tie_break(const PlanCandidate& a, const PlanCandidate& b) {
  // Fewer streams and fewer chunks are less to create, issue and get wrong.
  if (const int c = compare(a.streams, b.streams)) return {c, "fewer streams"};
  if (const int c = compare(a.chunks, b.chunks)) return {c, "fewer chunks"};
  if (a.schedule_kind != b.schedule_kind)
    return {a.schedule_kind == "uniform" ? -1 : 1, "a uniform schedule"};
  if (const int c = compare(static_cast<int>(a.order), static_cast<int>(b.order))) {
    return {c, issue_preference(c < 0 ? a.order : b.order)};
  }
  if (const int c = compare(a.ring_depth, b.ring_depth)) return {c, "a smaller ring"};
  if (const int c = compare(b.largest_chunk_bytes, a.largest_chunk_bytes)) return {c, "larger chunks"};
  return {compare(b.first_chunk_bytes, a.first_chunk_bytes), "larger chunks"};
}

/// Best first: those tied with the fastest, simplest first; then by time,
/// then the simpler configuration.
struct Ranking {
  double fastest_ms;
  bool operator()(const PlanCandidate& a, const PlanCandidate& b) const {
    const bool a_tied = ties_with(a.predicted_ms, fastest_ms);
    const bool b_tied = ties_with(b.predicted_ms, fastest_ms);
    if (a_tied != b_tied) return a_tied;
    if (!a_tied && time_key(a.predicted_ms) != time_key(b.predicted_ms))
      return a.predicted_ms < b.predicted_ms;
    return tie_break(a, b).sign < 0;
  }
};

/// The best time of the two best families simulated so far: a configuration
/// whose lower bound exceeds the second cannot be the best or the runner-up.
class TopTwoFamilies {
 public:
  void add(std::size_t family, double ms) {
    for (Entry& entry : entries_) {
      if (entry.family == family) {
        entry.ms = std::min(entry.ms, ms);
        sort();
        return;
      }
    }
    if (entries_.size() < 2 || ms < entries_.back().ms) {
      if (entries_.size() == 2) entries_.pop_back();
      entries_.push_back({family, ms});
      sort();
    }
  }
  /// The runner-up family's time, or infinity while fewer than two are known.
  [[nodiscard]] double second() const {
    return entries_.size() < 2 ? std::numeric_limits<double>::infinity() : entries_.back().ms;
  }

 private:
  struct Entry {
    std::size_t family;
    double ms;
  };
  void sort() {
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.ms < b.ms; });
  }
  std::vector<Entry> entries_;
};

PipelineShape shape_of(const detail::Config& config, const detail::Schedule& schedule,
                       const Workload& workload, const std::optional<KernelCost>& kernel,
                       std::uint32_t devices) {
  PipelineShape shape;
  shape.devices = devices;
  shape.streams = config.streams;
  shape.order = config.order;
  shape.ring_depth = config.ring_depth;
  shape.h2d_bytes = workload.bytes_in;
  shape.d2h_bytes = workload.bytes_out;
  shape.chunk_schedule = schedule.chunks;
  shape.kernel_cost = kernel;
  shape.memory = workload.memory;
  return shape;
}

/// Busy time per engine, and which engine bounds the run.
void measure(const Timeline& timeline, const DeviceModel& model, PlanCandidate& candidate) {
  double first[4] = {0, 0, 0, 0};
  double last[4] = {0, 0, 0, 0};
  bool seen[4] = {false, false, false, false};
  const auto note = [&](int which, double start, double end) {
    first[which] = seen[which] ? std::min(first[which], start) : start;
    last[which] = seen[which] ? std::max(last[which], end) : end;
    seen[which] = true;
  };
  // 0: H2D (or the one copy engine), 1: D2H, 2: compute, 3: host issue.
  const bool shared_copies = !model.copy_engine_per_direction;
  // Per GPU; the busiest GPU's figure per engine is the candidate's.
  std::vector<EngineBusy> per_device(timeline.device_count());
  for (const Span& span : timeline.spans) {
    EngineBusy& busy = per_device[timeline.device_of(span)];
    if (span.kind == op_kind::copy) {
      const bool in = span.direction == copy_direction::h2d;
      (in ? busy.h2d : busy.d2h) += span.duration();
      note(in || shared_copies ? 0 : 1, span.start, span.end);
    } else if (span.unit == engine::compute) {
      busy.compute += span.duration();
      note(2, span.start, span.end);
    }
  }
  for (const EngineBusy& busy : per_device) {
    candidate.busy.h2d = std::max(candidate.busy.h2d, busy.h2d);
    candidate.busy.d2h = std::max(candidate.busy.d2h, busy.d2h);
    candidate.busy.compute = std::max(candidate.busy.compute, busy.compute);
  }
  for (const HostSpan& span : timeline.host_spans) {
    if (span.activity != host_activity::api_call) continue;
    candidate.busy.host += span.end - span.start;
    note(3, span.start, span.end);
  }
  const double copy = candidate.busy.h2d + candidate.busy.d2h;
  const std::pair<const char*, double> engines[4] = {
      {shared_copies ? "copy engine" : "H2D copy engine", shared_copies ? copy : candidate.busy.h2d},
      {"D2H copy engine", shared_copies ? 0.0 : candidate.busy.d2h},
      {"compute", candidate.busy.compute},
      {"host issue", candidate.busy.host},
  };
  int bound = 0;
  for (int i = 1; i < 4; ++i) {
    if (engines[i].second > engines[bound].second) bound = i;
  }
  candidate.bound = engines[bound].first;
  candidate.bound_busy_ms = engines[bound].second;
  candidate.bound_idle_before_ms = seen[bound] ? first[bound] : 0.0;
  candidate.bound_idle_after_ms = seen[bound] ? std::max(0.0, candidate.predicted_ms - last[bound]) : 0.0;
}

PlanCandidate simulate_config(const detail::Config& config, const detail::Schedule& schedule,
                              const Workload& workload, const std::optional<KernelCost>& kernel,
                              const DeviceModel& model, double lower_bound, std::uint32_t devices) {
  PlanCandidate candidate;
  candidate.shape = shape_of(config, schedule, workload, kernel, devices);
  candidate.schedule_kind = schedule.kind;
  candidate.chunks = static_cast<std::uint32_t>(schedule.chunks.size());
  candidate.first_chunk_bytes = schedule.chunks.front();
  candidate.largest_chunk_bytes = *std::max_element(schedule.chunks.begin(), schedule.chunks.end());
  candidate.streams = config.streams;
  candidate.order = config.order;
  candidate.ring_depth = config.ring_depth;
  candidate.ring_bytes = config.ring_bytes;
  candidate.lower_bound_ms = lower_bound;
  candidate.shape.name =
      devices > 1 ? fmt::format("{} over {} GPUs, {} streams each, {}", candidate.describe_schedule(),
                                devices, config.streams, to_string(config.order))
                  : fmt::format("{} on {} streams, {}", candidate.describe_schedule(), config.streams,
                                to_string(config.order));
  // The simulator ignores declared accesses; building them would only cost time.
  PipelineShape fast = candidate.shape;
  fast.declare_accesses = false;
  const Timeline timeline = simulate(make_pipeline_program(fast), model);
  candidate.predicted_ms = timeline.total();
  measure(timeline, model, candidate);
  return candidate;
}

bool same_family(const PlanCandidate& a, const PlanCandidate& b) {
  return a.streams == b.streams && a.shape.chunk_schedule == b.shape.chunk_schedule;
}

}  // namespace

std::optional<KernelCost> Workload::kernel_curve() const {
  if (kernel_cost) return kernel_cost;
  if (kernel_gigabytes_per_second) {
    // A MiB at R GB/s takes MiB / (R x 1e6) ms.
    return KernelCost{0.0, kMiB / (*kernel_gigabytes_per_second * 1e6), 0};
  }
  if (kernel_total_ms && *kernel_total_ms > 0.0 && bytes_in > 0) {
    return KernelCost{0.0, *kernel_total_ms / (static_cast<double>(bytes_in) / kMiB), 0};
  }
  return std::nullopt;  // no kernel, or one that takes no time
}

std::string PlanCandidate::describe_schedule() const {
  if (schedule_kind == "ramp") {
    return fmt::format("ramp {} -> {} ({} chunks)", format_byte_size(first_chunk_bytes),
                       format_byte_size(largest_chunk_bytes), chunks);
  }
  const std::uint64_t last = shape.chunk_schedule.empty() ? largest_chunk_bytes : shape.chunk_schedule.back();
  if (chunks == 1) return fmt::format("1 chunk of {}", format_byte_size(largest_chunk_bytes));
  if (last == largest_chunk_bytes) {
    return fmt::format("{} chunks of {}", chunks, format_byte_size(largest_chunk_bytes));
  }
  return fmt::format("{} chunks of {} (the last {})", chunks, format_byte_size(largest_chunk_bytes),
                     format_byte_size(last));
}

std::string preference_reason(const PlanCandidate& winner, const PlanCandidate& other) {
  const double fastest = std::min(winner.predicted_ms, other.predicted_ms);
  if (!ties_with(winner.predicted_ms, fastest) || !ties_with(other.predicted_ms, fastest)) {
    return fmt::format("{:.4g} ms faster", std::abs(other.predicted_ms - winner.predicted_ms));
  }
  const TieBreak decided = tie_break(winner, other);
  return decided.sign == 0 ? "the same configuration" : decided.reason;
}

PlanFloor plan_floor(const Workload& workload, const DeviceModel& model) {
  detail::validate(workload, PlanOptions{});
  model.validate();
  return detail::floor_of(workload, workload.kernel_curve(), model);
}

Plan plan(const Workload& workload, const DeviceModel& model, const PlanOptions& options) {
  detail::validate(workload, options);
  model.validate();
  if (model.host && model.host->gpus.size() < options.devices)
    throw invalid_input(
        fmt::format("devices: {} GPUs, but the device model's host lists {} (probe them all with "
                    "overlap probe --all-devices)",
                    options.devices, model.host->gpus.size()));
  const std::optional<KernelCost> kernel = workload.kernel_curve();
  const detail::Space space = detail::enumerate(workload, options);

  // Lower bounds: the per-schedule costs once (per GPU: its chunks, c mod
  // devices), the per-stream part per configuration; on several GPUs the
  // busiest GPU's bound (each GPU's copies priced at GPU 0's link, and alone
  // on the host: both only lower the bound).
  const std::uint32_t devices = options.devices;
  std::vector<std::vector<detail::ChunkCosts>> costs(space.schedules.size());
  for (std::size_t s = 0; s < space.schedules.size(); ++s) {
    const std::vector<std::uint64_t>& chunks = space.schedules[s].chunks;
    if (devices == 1) {
      costs[s].push_back(detail::chunk_costs(chunks, workload, kernel, model));
      continue;
    }
    for (std::uint32_t d = 0; d < devices && d < chunks.size(); ++d) {
      std::vector<std::uint64_t> mine;
      for (std::size_t c = d; c < chunks.size(); c += devices) mine.push_back(chunks[c]);
      Workload part = workload;
      part.bytes_in = std::accumulate(mine.begin(), mine.end(), std::uint64_t{0});
      part.bytes_out = static_cast<std::uint64_t>(static_cast<double>(workload.bytes_out) *
                                                  static_cast<double>(part.bytes_in) /
                                                  static_cast<double>(workload.bytes_in));
      costs[s].push_back(detail::chunk_costs(mine, part, kernel, model));
    }
  }
  std::vector<double> bounds(space.configs.size());
  for (std::size_t i = 0; i < space.configs.size(); ++i) {
    const detail::Config& config = space.configs[i];
    for (const detail::ChunkCosts& c : costs[config.schedule])
      bounds[i] = std::max(bounds[i], detail::lower_bound(c, config.streams, model));
  }
  // Most promising first, so that the bar for pruning drops early; the
  // enumeration order breaks ties, which keeps the search deterministic.
  std::vector<std::size_t> order(space.configs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return bounds[a] < bounds[b]; });

  Plan result;
  result.considered = space.configs.size();
  result.over_budget = space.over_budget;
  TopTwoFamilies top;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    // Sorted by bound: once one is out of reach, so is every one after it.
    // The margin keeps a candidate that could tie (and win the tie-break).
    if (options.prune && bounds[i] > top.second() * (1.0 + tie_tolerance) + 1e-9) {
      result.pruned = order.size() - k;
      break;
    }
    const detail::Config& config = space.configs[i];
    result.candidates.push_back(simulate_config(config, space.schedules[config.schedule], workload, kernel,
                                                model, bounds[i], devices));
    top.add(config.family, result.candidates.back().predicted_ms);
  }
  result.simulated = result.candidates.size();
  double fastest = result.candidates.front().predicted_ms;
  for (const PlanCandidate& c : result.candidates) fastest = std::min(fastest, c.predicted_ms);
  std::sort(result.candidates.begin(), result.candidates.end(), Ranking{fastest});
  result.best = result.candidates.front();
  for (std::size_t i = 1; i < result.candidates.size(); ++i) {
    if (ties_with(result.candidates[i].predicted_ms, fastest)) ++result.ties;
    if (!result.runner_up && !same_family(result.candidates[i], result.best)) {
      result.runner_up = result.candidates[i];
    }
  }
  result.floor = detail::floor_of(workload, kernel, model, devices);
  return result;
}

}  // namespace overlap::sim
