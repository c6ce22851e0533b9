// The frames and pageable workloads of `overlap bench`, printed.
#if OVERLAP_HAS_CUDA

#include "bench_streams.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "bench_terms.hpp"
#include "overlap/core/error.hpp"

namespace overlap::cli {

namespace {

using bench::variant_kind;
using bench::variant_result;
using json = nlohmann::ordered_json;

std::string header(const char* last) {
  return fmt::format("  {:<44} {:>8} {:>7} {:>7} {:>10}  {:^17} {:>7} {:>8}\n", "variant", "item", "slots",
                     "items", "median ms", "min..max ms", "x floor", last);
}

std::string row(const variant_result& v, double floor_time, double other_ms) {
  return fmt::format("  {:<44} {:>8} {:>7} {:>7} {:>10.3f}  {:>7.3f}..{:<8.3f} {:>7.3f} {:>8.3f}\n", v.name,
                     bench::format_bytes(v.chunk_bytes), v.streams, v.chunks, v.device_ms.median,
                     v.device_ms.min, v.device_ms.max, ratio(v.device_ms.median, floor_time),
                     ratio(v.device_ms.median, other_ms));
}

json row_json(const variant_result& v, double floor_time) {
  json r = {{"name", v.name},
            {"kind", bench::to_string(v.kind)},
            {"item_bytes", v.chunk_bytes},
            {"streams_or_slots", v.streams},
            {"items", v.chunks},
            {"median_ms", v.device_ms.median},
            {"min_ms", v.device_ms.min},
            {"max_ms", v.device_ms.max},
            {"samples_ms", v.device_ms.samples},
            {"ratio_to_floor", ratio(v.device_ms.median, floor_time)},
            {"verified", v.verified}};
  if (v.host_issue_per_chunk_us) r["host_issue_per_item_us_median"] = v.host_issue_per_chunk_us->median;
  return r;
}

double gbps(std::size_t bytes, double ms) {
  return ms > 0.0 ? static_cast<double>(bytes) / (ms * 1e6) : 0.0;
}

}  // namespace

const variant_result& row_of(const std::vector<variant_result>& rows, variant_kind kind) {
  const auto found =
      std::find_if(rows.begin(), rows.end(), [kind](const variant_result& v) { return v.kind == kind; });
  if (found == rows.end()) throw error(fmt::format("bench: no {} row was measured", bench::to_string(kind)));
  return *found;
}

std::string frames_text(const bench::feed_result& f) {
  const double floor_time = f.frame_copies.device_ms.median;
  const double ping_pong = row_of(f.variants, variant_kind::ping_pong).device_ms.median;
  std::string text = fmt::format("\nframes: {} frames of {} through y = 2x + 1, in and out\n", f.frames,
                                 bench::format_bytes(f.frame_bytes));
  text += header("x ping");
  text += row(f.frame_copies, floor_time, ping_pong);
  for (const variant_result& v : f.variants) text += row(v, floor_time, ping_pong);
  for (const bench::paced_result& p : f.paced) text += row(p.row, p.floor_ms, ping_pong);
  const std::size_t moved = 2 * f.frames * f.frame_bytes;
  const variant_result& feed = row_of(f.variants, variant_kind::feed_default);
  text += fmt::format(
      "  copy rate at {}: {:.1f} GB/s in + out; the default Feed ({} slots) moves {:.1f} GB/s = "
      "{:.3f}x of it, {:.0f} frames/s; the hand-written ping-pong {:.3f}x\n",
      bench::format_bytes(f.frame_bytes), gbps(moved, floor_time), feed.streams,
      gbps(moved, feed.device_ms.median), ratio(floor_time, feed.device_ms.median),
      static_cast<double>(f.frames) / (feed.device_ms.median / 1e3), ratio(floor_time, ping_pong));
  const auto tuned = std::find_if(f.variants.begin(), f.variants.end(), [](const variant_result& v) {
    return v.kind == variant_kind::hand_tuned_slots;
  });
  if (tuned != f.variants.end()) {
    text += fmt::format(
        "  the hand-tuned loop ({}, one thread) {:.3f}x of the copy rate; the default Feed takes "
        "{:.3f}x its time\n",
        tuned->per_stage ? "streams by stage" : fmt::format("{} streams", tuned->streams),
        ratio(floor_time, tuned->device_ms.median), ratio(feed.device_ms.median, tuned->device_ms.median));
  }
  const auto graphs = std::find_if(f.variants.begin(), f.variants.end(), [](const variant_result& v) {
    return v.kind == variant_kind::feed_graphs;
  });
  if (graphs != f.variants.end() && graphs->host_issue_per_chunk_us && feed.host_issue_per_chunk_us) {
    text += fmt::format(
        "  host time issuing a frame: {:.1f} us with runtime calls, {:.1f} us replaying a graph per slot\n",
        feed.host_issue_per_chunk_us->median, graphs->host_issue_per_chunk_us->median);
  }
  for (const bench::paced_result& p : f.paced) {
    text += fmt::format(
        "  producer {:g} us per frame, issuing thread {}: {:.3f} ms against max({:.3f} ms of "
        "producing, the GPU-bound {:.3f} ms) = {:.3f}x\n",
        p.producer_us, p.issuing_thread, p.row.device_ms.median,
        p.producer_us * static_cast<double>(f.frames) / 1e3, feed.device_ms.median,
        ratio(p.row.device_ms.median, p.floor_ms));
  }
  return text;
}

std::string pageable_text(const bench::pageable_result& p) {
  const double pinned = row_of(p.variants, variant_kind::pageable_pinned).device_ms.median;
  std::string text = fmt::format("\npageable: {} in ({} floats) from std::vector, y = 2x + 1, {} out\n",
                                 bench::format_bytes(p.bytes), p.elements, bench::format_bytes(p.bytes));
  text += header("x pinned");
  text += fmt::format("  {:<44} {:>8} {:>7} {:>7} {:>10.3f}  {:^17} {:>7.3f} {:>8.3f}\n",
                      "floor: host copy pageable -> pinned (computed)", "-", "-", "-", p.copy_floor_ms, "",
                      1.0, ratio(p.copy_floor_ms, pinned));
  for (const variant_result& v : p.variants) text += row(v, p.copy_floor_ms, pinned);
  const auto rates = [](const std::vector<std::pair<unsigned, double>>& measured) {
    std::string listed;
    for (const auto& [threads, rate] : measured)
      listed += fmt::format("{}{:.1f} GB/s with {} threads", listed.empty() ? "" : ", ", rate, threads);
    return listed;
  };
  text += "  host copy pageable -> pinned: memcpy " + rates(p.copy_gbps) + "\n";
  if (!p.streaming_copy_gbps.empty())
    text += "  host copy pageable -> pinned: streaming stores " + rates(p.streaming_copy_gbps) + "\n";
  const double staged = row_of(p.variants, variant_kind::pageable_staged).device_ms.median;
  const double naive = row_of(p.variants, variant_kind::pageable_naive).device_ms.median;
  double memcpy_gbps = 0.0;
  for (const auto& [threads, rate] : p.copy_gbps) memcpy_gbps = std::max(memcpy_gbps, rate);
  const double memcpy_floor_ms = static_cast<double>(2 * p.bytes) / (memcpy_gbps * 1e6);
  text += fmt::format(
      "  stage: {:.3f}x the host copy floor ({:.3f}x the floor with memcpy alone), {:.2f}x faster than the "
      "naive pipeline; vectors registered once: {:.3f}x the pinned Pipeline\n",
      ratio(staged, p.copy_floor_ms), ratio(staged, memcpy_floor_ms), ratio(naive, staged),
      ratio(row_of(p.variants, variant_kind::pageable_kept).device_ms.median, pinned));
  text += fmt::format("  automatic took the {} path one-shot and the {} path on vectors registered once\n",
                      p.automatic_one_shot, p.automatic_kept);
  if (p.paired) {
    const bench::pageable_result::paired_rounds& q = *p.paired;
    text += fmt::format(
        "  alternating, the host copy swept after each run: copy floor {:.3f} ms ({:.3f}..{:.3f}); stage "
        "{:.3f}x max(1.5x that floor, the pinned Pipeline) ({:.3f}..{:.3f}), {:.2f}x faster than naive "
        "({:.2f}..{:.2f}), medians run by run\n",
        q.copy_floor_ms.median, q.copy_floor_ms.min, q.copy_floor_ms.max, q.stage_to_floor.median,
        q.stage_to_floor.min, q.stage_to_floor.max, q.naive_to_staged.median, q.naive_to_staged.min,
        q.naive_to_staged.max);
  }
  return text;
}

json frames_json(const bench::feed_result& f) {
  const double floor_time = f.frame_copies.device_ms.median;
  json variants = json::array();
  for (const variant_result& v : f.variants) variants.push_back(row_json(v, floor_time));
  json paced = json::array();
  for (const bench::paced_result& p : f.paced)
    paced.push_back({{"producer_us", p.producer_us},
                     {"issuing_thread", p.issuing_thread},
                     {"floor_ms", p.floor_ms},
                     {"row", row_json(p.row, p.floor_ms)}});
  return {{"frames", f.frames},
          {"frame_bytes", f.frame_bytes},
          {"floor", "frame copies both ways at once (the copy rate at the frame size)"},
          {"floor_ms", floor_time},
          {"frame_copies", row_json(f.frame_copies, floor_time)},
          {"variants", std::move(variants)},
          {"paced", std::move(paced)}};
}

json pageable_json(const bench::pageable_result& p) {
  json variants = json::array();
  for (const variant_result& v : p.variants) variants.push_back(row_json(v, p.copy_floor_ms));
  json rates = json::array();
  for (const auto& [threads, rate] : p.copy_gbps)
    rates.push_back({{"threads", threads}, {"stores", "memcpy"}, {"gigabytes_per_second", rate}});
  for (const auto& [threads, rate] : p.streaming_copy_gbps)
    rates.push_back({{"threads", threads}, {"stores", "streaming"}, {"gigabytes_per_second", rate}});
  json result = {
      {"elements", p.elements},
      {"bytes_in", p.bytes},
      {"bytes_out", p.bytes},
      {"floor", "(bytes in + bytes out) / the fastest host copy from pageable into pinned memory"},
      {"floor_ms", p.copy_floor_ms},
      {"host_copy", std::move(rates)},
      {"variants", std::move(variants)},
      {"automatic_path", {{"one_shot", p.automatic_one_shot}, {"registered_once", p.automatic_kept}}}};
  if (p.paired) {
    result["paired"] = {{"copy_floor_ms", stats_json(p.paired->copy_floor_ms)},
                        {"stage_to_staging_floor", stats_json(p.paired->stage_to_floor)},
                        {"naive_to_staged", stats_json(p.paired->naive_to_staged)}};
  }
  return result;
}

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
