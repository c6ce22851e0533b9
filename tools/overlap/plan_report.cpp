#include "plan_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "overlap/core/byte_size.hpp"

namespace overlap::cli {

namespace {

using json = nlohmann::json;

/// Milliseconds with the digits that matter at that size.
std::string ms(double value) {
  if (value >= 100.0) return fmt::format("{:.1f} ms", value);
  if (value >= 1.0) return fmt::format("{:.3f} ms", value);
  return fmt::format("{:.4f} ms", value);
}

std::string percent(double part, double whole) {
  return whole > 0.0 ? fmt::format("{:.0f}%", 100.0 * part / whole) : "-";
}

std::string_view order_name(issue_order order) {
  switch (order) {
    case issue_order::depth_first: return "depth-first";
    case issue_order::breadth_first: return "breadth-first";
    case issue_order::stage_first: return "stage-first";
    case issue_order::stage_streams: return "stage-streams";
  }
  return "depth-first";
}

std::string kernel_text(const sim::Workload& w) {
  if (w.kernel_cost) {
    const KernelCost& k = *w.kernel_cost;
    std::string text = fmt::format("kernel {} ms + {} ms/MiB per chunk", k.fixed_ms, k.ms_per_mib);
    if (k.wave_bytes > 0) text += fmt::format(", in waves of {}", format_byte_size(k.wave_bytes));
    return text;
  }
  const std::optional<KernelCost> curve = w.kernel_curve();
  if (!curve) return "no kernel";
  const std::string total = ms(curve->time(w.bytes_in));
  if (w.kernel_gigabytes_per_second) {
    return fmt::format("kernel at {} GB/s ({} over all the data)", *w.kernel_gigabytes_per_second, total);
  }
  return fmt::format("kernel {} over all the data", total);
}

std::string workload_text(const sim::Workload& w) {
  std::string text = fmt::format("{} in, {} out, {}, {} host memory", format_byte_size(w.bytes_in),
                                 format_byte_size(w.bytes_out), kernel_text(w),
                                 w.memory == host_memory::pinned ? "pinned" : "pageable");
  if (w.device_budget) text += fmt::format(", device budget {}", format_byte_size(*w.device_budget));
  return text;
}

std::string config_text(const sim::PlanCandidate& c) {
  if (c.shape.devices > 1) {
    return fmt::format(
        "{} over {} GPUs (chunk c on GPU c mod {}), each GPU on {} stream{}, {} issue, a ring of "
        "{} slot{} ({}) per GPU",
        c.describe_schedule(), c.shape.devices, c.shape.devices, c.streams, c.streams == 1 ? "" : "s",
        order_name(c.order), c.ring_depth, c.ring_depth == 1 ? "" : "s", format_byte_size(c.ring_bytes));
  }
  return fmt::format("{} on {} stream{}, {} issue, a ring of {} slot{} ({})", c.describe_schedule(),
                     c.streams, c.streams == 1 ? "" : "s", order_name(c.order), c.ring_depth,
                     c.ring_depth == 1 ? "" : "s", format_byte_size(c.ring_bytes));
}

/// On several GPUs, the floor's parts: each GPU's link, the host's shared rate, the kernel.
std::string floor_parts(const sim::PlanFloor& f) {
  if (f.devices <= 1) return {};
  std::string text = fmt::format("            the GPUs' links {}", ms(f.links_ms));
  text += f.host_ms > 0.0
              ? fmt::format(", the host's shared rate {}", ms(f.host_ms))
              : std::string(", the host's shared rate unknown (no host model: probe --all-devices)");
  text += fmt::format(", the kernel {} on each GPU\n", ms(f.kernel_ms));
  return text;
}

/// What keeps the best from its bound engine's busy time, in words.
std::string why_text(const sim::PlanCandidate& c) {
  const std::string busy = fmt::format("busy {} of the {} run ({})", ms(c.bound_busy_ms), ms(c.predicted_ms),
                                       percent(c.bound_busy_ms, c.predicted_ms));
  const std::string before = ms(c.bound_idle_before_ms);
  const std::string after = ms(c.bound_idle_after_ms);
  if (c.bound == "host issue") {
    return fmt::format("issuing the calls bounds the run: the host is {}; larger chunks need fewer calls",
                       busy);
  }
  if (c.bound == "compute") {
    return fmt::format(
        "the kernels bound the run: the SMs are {}; {} pass before the first kernel (the first upload) and "
        "{} "
        "after the last (the last download)",
        busy, before, after);
  }
  if (c.bound == "D2H copy engine") {
    return fmt::format(
        "downloads bound the run: the D2H copy engine is {}; the first download waits {} for the first "
        "chunk's "
        "upload and kernel (a smaller first chunk shortens it)",
        busy, before);
  }
  const std::string engine =
      c.bound == "copy engine" ? "the one copy engine (both directions)" : "the H2D copy engine";
  return fmt::format(
      "copies bound the run: {} is {}; {} pass before its first copy and {} after its last (the last chunk's "
      "kernel and download: a smaller last chunk shortens it)",
      engine, busy, before, after);
}

std::string runner_up_text(const sim::Plan& plan) {
  if (!plan.runner_up) return "none (only one schedule and stream count fits)";
  const sim::PlanCandidate& r = *plan.runner_up;
  const std::string reason = sim::preference_reason(plan.best, r);
  const bool tie = reason.find("faster") == std::string::npos;
  return fmt::format("{}\n            {}, {}; bound: {}", config_text(r), ms(r.predicted_ms),
                     tie ? fmt::format("a tie: the best wins on {}", reason)
                         : fmt::format("{} slower ({:+.1f}%)", ms(r.predicted_ms - plan.best.predicted_ms),
                                       100.0 * (r.predicted_ms / plan.best.predicted_ms - 1.0)),
                     r.bound);
}

// One row per schedule and stream count (its best issue order and ring):
// the variants that tie would crowd out the alternatives worth seeing.
std::string top_table(const sim::Plan& plan, std::size_t top) {
  std::vector<const sim::PlanCandidate*> rows;
  for (const sim::PlanCandidate& c : plan.candidates) {
    if (rows.size() == top) break;
    const bool shown = std::any_of(rows.begin(), rows.end(), [&](const sim::PlanCandidate* r) {
      return r->streams == c.streams && r->shape.chunk_schedule == c.shape.chunk_schedule;
    });
    if (!shown) rows.push_back(&c);
  }
  if (rows.empty()) return {};
  std::string text = fmt::format("\nTop {} (best of each schedule and stream count):\n", rows.size());
  text += fmt::format("  {:>11}  {:>7}  {:<13}  {:>4}  {:<36}  {}\n", "predicted", "streams", "issue", "ring",
                      "schedule", "bound");
  for (const sim::PlanCandidate* c : rows) {
    text += fmt::format("  {:>11}  {:>7}  {:<13}  {:>4}  {:<36}  {}\n", ms(c->predicted_ms), c->streams,
                        order_name(c->order), c->ring_depth, c->describe_schedule(), c->bound);
  }
  return text;
}

json candidate_json(const sim::PlanCandidate& c) {
  return {
      {"schedule", c.schedule_kind},
      {"description", c.describe_schedule()},
      {"chunks", c.chunks},
      {"chunk_schedule", c.shape.chunk_schedule},
      {"first_chunk_bytes", c.first_chunk_bytes},
      {"largest_chunk_bytes", c.largest_chunk_bytes},
      {"streams", c.streams},
      {"issue", to_string(c.order)},
      {"ring_depth", c.ring_depth},
      {"ring_bytes", c.ring_bytes},
      {"predicted_ms", c.predicted_ms},
      {"lower_bound_ms", c.lower_bound_ms},
      {"bound", c.bound},
      {"bound_busy_ms", c.bound_busy_ms},
      {"bound_idle_before_ms", c.bound_idle_before_ms},
      {"bound_idle_after_ms", c.bound_idle_after_ms},
      {"busy_ms",
       {{"h2d", c.busy.h2d}, {"d2h", c.busy.d2h}, {"compute", c.busy.compute}, {"host", c.busy.host}}},
  };
}

json workload_json(const sim::Workload& w) {
  json kernel = nullptr;
  if (const std::optional<KernelCost> curve = w.kernel_curve()) {
    kernel = {
        {"fixed_ms", curve->fixed_ms}, {"ms_per_mib", curve->ms_per_mib}, {"wave_bytes", curve->wave_bytes}};
  }
  return {
      {"bytes_in", w.bytes_in},
      {"bytes_out", w.bytes_out},
      {"kernel_cost", kernel},
      {"device_budget", w.device_budget ? json(*w.device_budget) : json(nullptr)},
      {"memory", w.memory == host_memory::pinned ? "pinned" : "pageable"},
  };
}

}  // namespace

std::string plan_text(const sim::Plan& plan, const sim::Workload& workload, const DeviceModel& model,
                      std::size_t top) {
  const sim::PlanCandidate& best = plan.best;
  std::string text;
  text += fmt::format("Workload:   {}\n", workload_text(workload));
  text += fmt::format("Device:     {}\n\n", model.name);
  text += fmt::format("Best:       {}\n", config_text(best));
  text += fmt::format("Predicted:  {}\n", ms(best.predicted_ms));
  text += fmt::format("Floor:      {} ({}): the best is {:.2f}x the floor\n", ms(plan.floor.total_ms),
                      plan.floor.bound,
                      plan.floor.total_ms > 0.0 ? best.predicted_ms / plan.floor.total_ms : 1.0);
  text += floor_parts(plan.floor);
  text += fmt::format("Bound:      {}\n", best.bound);
  text += fmt::format("Why:        {}\n", why_text(best));
  text += fmt::format("Runner-up:  {}\n", runner_up_text(plan));
  if (plan.ties > 0) {
    text += fmt::format(
        "Ties:       {} other configuration{} predict{} the same time (the best is the simplest)\n",
        plan.ties, plan.ties == 1 ? "" : "s", plan.ties == 1 ? "s" : "");
  }
  text += top_table(plan, top);
  text += fmt::format("\nSearched {} configurations: {} simulated, {} skipped by the lower bound",
                      plan.considered, plan.simulated, plan.pruned);
  if (plan.over_budget > 0) text += fmt::format(", {} more left out by the budget", plan.over_budget);
  text += ".\n";
  return text;
}

std::string plan_json(const sim::Plan& plan, const sim::Workload& workload, const DeviceModel& model,
                      std::size_t top) {
  json candidates = json::array();
  for (std::size_t i = 0; i < std::min(top, plan.candidates.size()); ++i) {
    candidates.push_back(candidate_json(plan.candidates[i]));
  }
  const sim::PlanFloor& f = plan.floor;
  const json out = {
      {"workload", workload_json(workload)},
      {"device", model.name},
      {"devices", plan.best.shape.devices},
      {"floor",
       {{"total_ms", f.total_ms},
        {"bound", f.bound},
        {"h2d_ms", f.h2d_ms},
        {"d2h_ms", f.d2h_ms},
        {"copies_ms", f.copies_ms},
        {"kernel_ms", f.kernel_ms},
        {"devices", f.devices},
        {"links_ms", f.links_ms},
        {"host_ms", f.host_ms}}},
      {"best", candidate_json(plan.best)},
      {"ratio_to_floor", f.total_ms > 0.0 ? plan.best.predicted_ms / f.total_ms : 1.0},
      {"runner_up", plan.runner_up ? candidate_json(*plan.runner_up) : json(nullptr)},
      {"search",
       {{"considered", plan.considered},
        {"simulated", plan.simulated},
        {"pruned", plan.pruned},
        {"over_budget", plan.over_budget},
        {"ties", plan.ties}}},
      {"candidates", candidates},
  };
  // Names from input may be any bytes; JSON is UTF-8 (bad bytes become U+FFFD).
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace overlap::cli
