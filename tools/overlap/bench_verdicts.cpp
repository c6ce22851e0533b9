// `overlap bench`'s acceptance verdicts: judged, printed, and put in the JSON.
#if OVERLAP_HAS_CUDA

#include "bench_verdicts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "bench_devices.hpp"
#include "bench_graph.hpp"
#include "bench_streams.hpp"
#include "bench_terms.hpp"

namespace overlap::cli {

namespace {

using bench::variant_kind;
using bench::variant_result;
using bench::workload_kind;
using bench::workload_result;

std::string key_of(const workload_result& w) {
  return w.kind == workload_kind::transfer_bound ? "transfer" : "compute";
}

// The caveat of a workload's link-bound verdicts, or empty: the floor's
// peaks came from reps that spread too far to trust the ratios.
std::string link_caveat(const workload_result& w) {
  if (w.kind != workload_kind::transfer_bound || !w.link) return {};
  const bench::link_floor& f = *w.link;
  const std::pair<const char*, const bench::link_peak*> peaks[] = {
      {"H2D", &f.h2d}, {"D2H", &f.d2h}, {"both directions", &f.both}};
  std::string unsteady;
  for (const auto& [name, peak] : peaks) {
    if (peak->spread <= unsteady_link_spread) continue;
    unsteady += fmt::format("{}{} {:.1f}%", unsteady.empty() ? "" : ", ", name, 100.0 * peak->spread);
  }
  if (unsteady.empty()) return {};
  return fmt::format(
      "the link was unsteady in this run (peak spread {}, over {:.0f}%): re-run before trusting this verdict",
      unsteady, 100.0 * unsteady_link_spread);
}

using add_function = std::function<void(std::string, std::string, double, double, std::string, bool)>;

// (max - min) / median of a row's timed runs: how far its runs spread.
double spread_of(const bench::stats& s) {
  return s.median > 0.0 ? (s.max - s.min) / s.median : 0.0;
}

// The limit of "a no slower than b, within b's spread": b's median plus
// half of how far b's runs spread, as a ratio to b's median. Two rows that
// do the same work differ by about that much from run to run.
double within_spread_limit(const bench::variant_result& b) {
  return 1.0 + spread_of(b.device_ms) / 2.0;
}

// Issue 12: the default Feed against the copy rate and the tutorial's
// ping-pong, and paced producers against max(producing, the GPU-bound Feed).
void judge_frames(const bench::feed_result& f, const add_function& add) {
  const double feed = row_of(f.variants, variant_kind::feed_default).device_ms.median;
  const double share = ratio(f.frame_copies.device_ms.median, feed);
  add("frames_feed_vs_copy_rate",
      fmt::format("default Feed throughput at least 0.95x the copy rate at {} frames",
                  bench::format_bytes(f.frame_bytes)),
      share, 0.95, "x", share >= 0.95);
  const double to_hand = ratio(feed, row_of(f.variants, variant_kind::hand_tuned_slots).device_ms.median);
  add("frames_feed_vs_hand_tuned", "default Feed time within 1.01x of the best hand-written frame loop's",
      to_hand, 1.01, "x", to_hand <= 1.01);
  const double to_ping_pong = ratio(feed, row_of(f.variants, variant_kind::ping_pong).device_ms.median);
  add("frames_feed_vs_ping_pong", "default Feed time at most the hand-written ping-pong's", to_ping_pong, 1.0,
      "x", to_ping_pong <= 1.0);
  for (const bench::paced_result& p : f.paced) {
    const double to_floor = ratio(p.row.device_ms.median, p.floor_ms);
    const bool dedicated = p.issuing_thread == "dedicated";
    add(fmt::format("frames_paced_{:g}us{}", p.producer_us, dedicated ? "_dedicated" : ""),
        fmt::format("Feed with a {:g} us producer{} within 1.05x of max(producing, GPU-bound)", p.producer_us,
                    dedicated ? " and a dedicated issuer" : ""),
        to_floor, 1.05, "x", to_floor <= 1.05);
  }
}

// Issue 12: staging against the host copy floor and the naive pipeline,
// buffers registered once against pinned, and automatic's choices.
void judge_pageable(const bench::pageable_result& p, const add_function& add) {
  const auto median = [&p](variant_kind kind) { return row_of(p.variants, kind).device_ms.median; };
  const double staged = median(variant_kind::pageable_staged);
  const double registered = median(variant_kind::pageable_registered);
  const double pinned = median(variant_kind::pageable_pinned);
  // Staging moves each byte through host memory three times (the host copy
  // reads and writes it, the DMA reads or writes the pinned slot) where
  // the host copy floor moves it twice, at the memory's rate either way:
  // its floor is 1.5x the copy floor, and never under the pinned Pipeline.
  // With the one-shot rows alternating and the host copy swept after each
  // round, both are judged run by run (pageable_result::paired_rounds).
  const std::string by_round = p.paired ? ", the host copy swept after each run" : "";
  const double to_floor =
      p.paired ? p.paired->stage_to_floor.median : ratio(staged, std::max(1.5 * p.copy_floor_ms, pinned));
  add("pageable_stage_vs_staging_floor",
      fmt::format(
          "pageable stage within 1.15x of the staging floor (max(1.5x the host copy floor, the pinned "
          "Pipeline){})",
          by_round),
      to_floor, 1.15, "x", to_floor <= 1.15);
  const double speedup =
      p.paired ? p.paired->naive_to_staged.median : ratio(median(variant_kind::pageable_naive), staged);
  add("pageable_stage_vs_naive",
      fmt::format("pageable stage at least 3x faster than cudaMemcpyAsync from the vectors{}",
                  p.paired ? " (the two alternating run by run)" : ""),
      speedup, 3.0, "x", speedup >= 3.0);
  const double kept = ratio(median(variant_kind::pageable_kept), pinned);
  add("pageable_kept_vs_pinned", "vectors registered once within 1.10x of the pinned Pipeline", kept, 1.10,
      "x", kept <= 1.10);
  const std::string faster = staged <= registered ? "staged" : "registered";
  const double automatic = ratio(median(variant_kind::pageable_automatic), std::min(staged, registered));
  add("pageable_automatic_one_shot",
      fmt::format("automatic takes the faster of stage and register_in_place one-shot ({}: took {})", faster,
                  p.automatic_one_shot),
      automatic, 1.0, "x", p.automatic_one_shot == faster);
  const double automatic_kept = ratio(median(variant_kind::pageable_kept_automatic), pinned);
  add("pageable_automatic_kept", "automatic on vectors registered once within 1.10x of the pinned Pipeline",
      automatic_kept, 1.10, "x", automatic_kept <= 1.10);
}

// Issue 13: (a) the branches against the longest one alone, one stream and
// the hand-written streams, and seen running together; (b) the replay's
// host cost per node against direct issue; (c) the DAG's build and map.
void judge_graph(const bench::graph_result& g, const add_function& add) {
  const graph_ratios q = ratios_of(g);
  add("graph_vs_longest_branch", "Graph of independent branches within 1.2x of the longest branch alone",
      q.graph_to_alone, 1.2, "x", q.graph_to_alone <= 1.2);
  add("graph_vs_one_stream", "Graph of independent branches at least 3x faster than one stream",
      q.one_stream_speedup, 3.0, "x", q.one_stream_speedup >= 3.0);
  const double hand_limit = within_spread_limit(row_of(g.branch_rows, variant_kind::graph_hand_streams));
  add("graph_vs_hand_streams",
      "Graph of independent branches at most the hand-written streams' time (within their spread)",
      q.graph_to_hand, hand_limit, "x", q.graph_to_hand <= hand_limit);
  const auto branches = static_cast<double>(g.branches);
  add("graph_concurrent_branches",
      fmt::format("Graph runs all {} branches at once (the most kernels running together, recorded)",
                  g.branches),
      static_cast<double>(g.concurrent_branches), branches, "branches",
      static_cast<double>(g.concurrent_branches) >= branches);
  add("graph_replay_host_cost",
      fmt::format("{} tiny kernels: replay's host cost per node at most 0.5x direct issue", g.tiny_kernels),
      q.replay_to_direct_host, 0.5, "x", q.direct_us_per_node > 0.0 && q.replay_to_direct_host <= 0.5);
  if (g.dag) {
    const double ms = g.dag->total_ms.median;
    add("graph_dag_build_map",
        fmt::format("random DAG of {} nodes declared and mapped in under 200 ms on one core", g.dag->nodes),
        ms, 200.0, "ms", ms < 200.0);
  }
}

// Issue 37: over every GPU count above one, the default Pipeline against
// the copies floor and the best hand-written loop (transfer-bound), and its
// throughput against one GPU's (compute-bound).
void judge_devices(const bench::devices_result& d, const add_function& add) {
  for (const bench::devices_workload_result& w : d.workloads) {
    const double one = devices_row_of(w, variant_kind::devices_pipeline, 1).device_ms.median;
    for (unsigned gpus = 2; gpus <= max_gpus(w); ++gpus) {
      const double pipeline = devices_row_of(w, variant_kind::devices_pipeline, gpus).device_ms.median;
      if (w.kind == workload_kind::transfer_bound) {
        const double to_copies =
            ratio(pipeline, devices_row_of(w, variant_kind::devices_copies, gpus).device_ms.median);
        add(fmt::format("devices_transfer_{}gpu_vs_copies", gpus),
            fmt::format("transfer-bound default Pipeline on {} GPUs within 1.10x of their copies alone",
                        gpus),
            to_copies, 1.10, "x", to_copies <= 1.10);
        const variant_result& hand = devices_row_of(w, variant_kind::devices_hand_loop, gpus);
        const double to_hand = ratio(pipeline, hand.device_ms.median);
        const double limit = within_spread_limit(hand);
        add(fmt::format("devices_transfer_{}gpu_vs_hand_loop", gpus),
            fmt::format(
                "transfer-bound default Pipeline on {} GPUs no slower than the best hand-written loop "
                "(within its spread)",
                gpus),
            to_hand, limit, "x", to_hand <= limit);
        if (const variant_result* planned =
                find_devices_row(w, variant_kind::devices_pipeline_planned, gpus)) {
          const double planned_to_hand = ratio(planned->device_ms.median, hand.device_ms.median);
          add(fmt::format("devices_transfer_{}gpu_planned_vs_hand_loop", gpus),
              fmt::format(
                  "transfer-bound Pipeline planned on the probed model, {} GPUs, no slower than the best "
                  "hand-written loop (within its spread)",
                  gpus),
              planned_to_hand, limit, "x", planned_to_hand <= limit);
        }
      } else {
        const double gain = ratio(one, pipeline);
        const double wanted = 0.95 * gpus;
        add(fmt::format("devices_compute_{}gpu_throughput", gpus),
            fmt::format("compute-bound default Pipeline on {} GPUs at least {:.2f}x one GPU's throughput",
                        gpus, wanted),
            gain, wanted, "x", gain >= wanted);
      }
    }
  }
}

}  // namespace

Judgement judge(const bench::bench_result& r, bool quick) {
  Judgement judgement;
  if (quick) return judgement;
  judgement.judged = true;
  std::vector<Verdict>& verdicts = judgement.verdicts;
  const auto add = [&verdicts](std::string name, std::string text, double value, double limit,
                               std::string unit, bool pass) {
    verdicts.push_back({std::move(name), std::move(text), value, limit, std::move(unit), pass, {}});
  };
  for (const workload_result& w : r.workloads) {
    const std::string wname(bench::to_string(w.kind));
    const std::string key = key_of(w);
    const variant_result& best = best_of(w);
    if (w.kind == workload_kind::transfer_bound) {
      const double chunked_ms = chunked_floor_ms(w);
      if (w.transfer_paired) {
        // The faster of the two rows measured beside the link's sweeps.
        const bench::paired_transfer& p = *w.transfer_paired;
        const double to_chunked = std::min(p.best_to_chunked_floor.median, p.to_chunked_floor.median);
        add(key + "_best_vs_chunked_floor",
            fmt::format("{} best Pipeline within 1.02x of the chunked floor (the link swept after each run)",
                        wname),
            to_chunked, 1.02, "x", to_chunked <= 1.02);
      } else {
        const double to_chunked = ratio(best.device_ms.median, chunked_ms);
        add(key + "_best_vs_chunked_floor",
            fmt::format("{} best Pipeline within 1.02x of the chunked floor", wname), to_chunked, 1.02, "x",
            to_chunked <= 1.02);
      }
      // A link slow both ways at once cannot give 0.60x: then the best is
      // held to what the chunked floor allows, as above.
      const double sequential_ms = sequential_of(w).device_ms.median;
      const double to_sequential = ratio(best.device_ms.median, sequential_ms);
      const double sequential_limit = std::max(0.60, 1.02 * ratio(chunked_ms, sequential_ms));
      add(key + "_best_vs_sequential",
          fmt::format(
              "{} best Pipeline at most 0.60x of sequential (or 1.02x the chunked floor, where the link "
              "allows no better)",
              wname),
          to_sequential, sequential_limit, "x", to_sequential <= sequential_limit);
    } else {
      const double to_floor = ratio(best.device_ms.median, floor_ms(w));
      add(key + "_best_vs_floor", fmt::format("{} best Pipeline within 1.02x of {}", wname, floor_words(w)),
          to_floor, 1.02, "x", to_floor <= 1.02);
    }
  }
  // Pipeline with no tuning arguments against the floor and the sweep (issue 11).
  for (const workload_result& w : r.workloads) {
    const std::string wname(bench::to_string(w.kind));
    const double default_ms = required(w, variant_kind::pipeline_default).device_ms.median;
    if (w.kind == workload_kind::transfer_bound && w.transfer_paired) {
      // Judged on the rows and floors measured alternating, run by run.
      const bench::paired_transfer& p = *w.transfer_paired;
      add("transfer_default_vs_chunked_floor",
          fmt::format("{} default Pipeline within 1.02x of the chunked floor (the link swept after each run)",
                      wname),
          p.to_chunked_floor.median, 1.02, "x", p.to_chunked_floor.median <= 1.02);
      const double limit = within_spread_limit(p.best_swept);
      add("transfer_default_vs_best_swept",
          fmt::format("{} default Pipeline no slower than the sweep's best configuration (within its spread; "
                      "the two alternating run by run)",
                      wname),
          p.to_best_swept.median, limit, "x", p.to_best_swept.median <= limit);
    } else if (w.kind == workload_kind::transfer_bound) {
      const double to_chunked = ratio(default_ms, chunked_floor_ms(w));
      add("transfer_default_vs_chunked_floor",
          fmt::format("{} default Pipeline within 1.02x of the chunked floor", wname), to_chunked, 1.02, "x",
          to_chunked <= 1.02);
      const variant_result& swept = best_uniform_of(w);
      const double to_swept = ratio(default_ms, swept.device_ms.median);
      const double limit = within_spread_limit(swept);
      add("transfer_default_vs_best_swept",
          fmt::format("{} default Pipeline no slower than the sweep's best configuration (within its spread)",
                      wname),
          to_swept, limit, "x", to_swept <= limit);
    } else if (w.default_paired) {
      // Judged on the two rows measured alternating, prepared and checked alike.
      const double to_floor = w.default_paired->ratio.median;
      add("compute_default_vs_floor",
          fmt::format("{} default Pipeline within 1.01x of {} (the two alternating run by run)", wname,
                      floor_words(w)),
          to_floor, 1.01, "x", to_floor <= 1.01);
    } else {
      const double to_floor = ratio(default_ms, floor_ms(w));
      add("compute_default_vs_floor",
          fmt::format("{} default Pipeline within 1.01x of {}", wname, floor_words(w)), to_floor, 1.01, "x",
          to_floor <= 1.01);
    }
  }
  for (const workload_result& w : r.workloads) {
    const double d = ratio(required(w, variant_kind::pipeline_default).device_ms.median,
                           required(w, variant_kind::two_stream).device_ms.median);
    add(key_of(w) + "_default_vs_two_stream",
        fmt::format("{} default Pipeline <= hand-written 2 streams", bench::to_string(w.kind)), d, 1.0, "x",
        d <= 1.0);
  }
  for (const workload_result& w : r.workloads) {
    const judged_replay judged = replay_judged(w);
    if (judged.replay == nullptr) continue;
    const double us = host_cost_per_chunk_us(*judged.replay);
    const std::string how =
        !w.graph_device_to_host ? "walked by the host"
        : judged.device_scheduled
            ? fmt::format("walked by the device, {:.3f}x the host-walked replay's device time",
                          w.graph_device_to_host->median)
            : fmt::format("walked by the host; walked by the device it took {:.3f}x the device time",
                          w.graph_device_to_host->median);
    add(key_of(w) + "_host_cost_per_chunk",
        fmt::format("{} host cost per chunk < 10 us (best configuration replayed as a CUDA graph, {})",
                    bench::to_string(w.kind), how),
        us, 10.0, "us", us < 10.0);
  }
  if (r.feed) judge_frames(*r.feed, add);
  if (r.pageable) judge_pageable(*r.pageable, add);
  if (r.graph) judge_graph(*r.graph, add);
  if (r.devices) judge_devices(*r.devices, add);
  // Every transfer-bound ratio but the host cost is a ratio of link-bound times.
  for (Verdict& v : verdicts) {
    if (!v.name.starts_with("transfer_") || v.unit != "x") continue;
    for (const workload_result& w : r.workloads) {
      if (w.kind == workload_kind::transfer_bound) v.caveat = link_caveat(w);
    }
  }
  return judgement;
}

std::string verdict_line(const Verdict& v) {
  const char* verdict = v.pass ? "PASS" : "FAIL";
  if (v.unit == "x") return fmt::format("{}  {}: {:.3f}x", verdict, v.text, v.value);
  if (v.unit == "us" || v.unit == "ms")
    return fmt::format("{}  {}: {:.3f} {}", verdict, v.text, v.value, v.unit);
  return fmt::format("{}  {}: {:g} of {:g} {}", verdict, v.text, v.value, v.limit, v.unit);  // a count
}

std::vector<std::string> verdict_lines(const Judgement& j) {
  if (!j.judged) return {not_judged_line};
  std::vector<std::string> lines;
  lines.reserve(j.verdicts.size());
  for (const Verdict& v : j.verdicts) {
    lines.push_back(verdict_line(v));
    if (!v.caveat.empty()) lines.push_back("      (" + v.caveat + ")");
  }
  return lines;
}

std::string verdicts_text(const Judgement& j) {
  if (!j.judged) return fmt::format("\n{}\n", not_judged_line);
  std::string text = "\nverdicts (reported; they do not change the exit code):\n";
  for (const std::string& line : verdict_lines(j)) text += "  " + line + "\n";
  return text;
}

void add_verdicts_json(nlohmann::ordered_json& out, const Judgement& j) {
  nlohmann::ordered_json judged = nlohmann::ordered_json::array();
  bool all_pass = true;
  for (const Verdict& v : j.verdicts) {
    judged.push_back({{"name", v.name},
                      {"text", v.text},
                      {"value", v.value},
                      {"limit", v.limit},
                      {"unit", v.unit},
                      {"pass", v.pass}});
    if (!v.caveat.empty()) judged.back()["caveat"] = v.caveat;
    all_pass = all_pass && v.pass;
  }
  out["verdicts_judged"] = j.judged;
  if (!j.judged) out["verdicts_note"] = not_judged_line;
  out["verdicts"] = std::move(judged);
  if (j.judged) out["all_pass"] = all_pass;
}

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
