// `overlap bench --devices` as text and JSON.
#if OVERLAP_HAS_CUDA

#include "bench_devices.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "bench_terms.hpp"
#include "overlap/core/error.hpp"

namespace overlap::cli {

namespace {

using bench::devices_row;
using bench::devices_workload_result;
using bench::variant_kind;
using bench::variant_result;

std::string range_text(int visible) {
  return visible == 1 ? "1 visible: 0" : fmt::format("{} visible: 0 to {}", visible, visible - 1);
}

int parse_whole(std::string_view text, const std::string& what) {
  int value = 0;
  const auto [end, failed] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (failed != std::errc() || end != text.data() + text.size() || text.empty() || value < 0) {
    throw invalid_input(fmt::format(
        "--devices: '{}' is not {} (expected all, a count, or GPU ordinals like 0,1)", text, what));
  }
  return value;
}

variant_kind floor_kind_of(const devices_workload_result& w) {
  return w.kind == bench::workload_kind::transfer_bound ? variant_kind::devices_copies
                                                        : variant_kind::devices_kernel;
}

// Both ways: every byte goes up and comes back.
double both_ways_gbps(const devices_workload_result& w, double ms) {
  return ms > 0.0 ? 2.0 * static_cast<double>(w.bytes) / (ms * 1e6) : 0.0;
}

// What one round of the job is, for people.
std::string job_words(const devices_workload_result& w) {
  return w.rounds == 1 ? "x -> a*x + b once per element"
                       : fmt::format("x -> a*x + b {} times per element", w.rounds);
}

}  // namespace

std::vector<int> parse_device_set(const std::string& text, int visible) {
  if (visible <= 0) throw invalid_input("--devices: no CUDA device");
  std::vector<int> devices;
  if (text == "all") {
    for (int d = 0; d < visible; ++d) devices.push_back(d);
    return devices;
  }
  if (text.find(',') == std::string::npos) {
    const int count = parse_whole(text, "a GPU count");
    if (count == 0 || count > visible)
      throw invalid_input(
          fmt::format("--devices: {} GPUs asked, {} ({})", count, visible, range_text(visible)));
    for (int d = 0; d < count; ++d) devices.push_back(d);
    return devices;
  }
  std::string_view rest(text);
  while (true) {
    const std::size_t comma = rest.find(',');
    const int d = parse_whole(rest.substr(0, comma), "a GPU ordinal");
    if (d >= visible)
      throw invalid_input(fmt::format("--devices: {} is not a GPU here ({})", d, range_text(visible)));
    if (std::ranges::find(devices, d) != devices.end())
      throw invalid_input(fmt::format("--devices: GPU {} is listed twice", d));
    devices.push_back(d);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return devices;
}

const variant_result* find_devices_row(const devices_workload_result& w, variant_kind kind,
                                       unsigned gpus) noexcept {
  for (const devices_row& r : w.rows) {
    if (r.gpus == gpus && r.row.kind == kind) return &r.row;
  }
  return nullptr;
}

const variant_result& devices_row_of(const devices_workload_result& w, variant_kind kind, unsigned gpus) {
  if (const variant_result* row = find_devices_row(w, kind, gpus)) return *row;
  throw error(fmt::format("bench: {} has no {} row on {} GPUs", bench::to_string(w.kind),
                          bench::to_string(kind), gpus));
}

unsigned max_gpus(const devices_workload_result& w) noexcept {
  unsigned most = 0;
  for (const devices_row& r : w.rows) most = std::max(most, r.gpus);
  return most;
}

std::string devices_text(const bench::devices_result& d) {
  std::string text = "\nseveral GPUs:";
  for (const bench::device_info& g : d.devices) text += fmt::format(" [{}] {}", g.ordinal, g.name);
  text += "\n";
  for (const devices_workload_result& w : d.workloads) {
    text += fmt::format("\n{} over 1 to {} GPUs: {} in ({} uint32), {}, {} out, split evenly over the GPUs\n",
                        bench::to_string(w.kind), max_gpus(w), bench::format_bytes(w.bytes), w.elements,
                        job_words(w), bench::format_bytes(w.bytes));
    text +=
        fmt::format("  {:>4}  {:<40} {:>8} {:>7} {:>6} {:>10}  {:^17} {:>8} {:>7} {:>7}\n", "GPUs", "row",
                    "chunk", "streams", "chunks", "median ms", "min..max ms", "GB/s", "x floor", "x 1 GPU");
    for (const devices_row& r : w.rows) {
      const variant_result& v = r.row;
      const double floor = devices_row_of(w, floor_kind_of(w), r.gpus).device_ms.median;
      const double one = devices_row_of(w, v.kind, 1).device_ms.median;
      text += fmt::format(
          "  {:>4}  {:<40} {:>8} {:>7} {:>6} {:>10.3f}  {:>7.3f}..{:<8.3f} {:>8.1f} {:>7.3f} {:>7.3f}\n",
          r.gpus, v.name, bench::format_bytes(v.chunk_bytes), v.streams, v.chunks, v.device_ms.median,
          v.device_ms.min, v.device_ms.max, both_ways_gbps(w, v.device_ms.median),
          ratio(v.device_ms.median, floor), ratio(one, v.device_ms.median));
    }
    for (unsigned gpus = 2; gpus <= max_gpus(w); ++gpus) {
      const double pipeline = devices_row_of(w, variant_kind::devices_pipeline, gpus).device_ms.median;
      const double hand = devices_row_of(w, variant_kind::devices_hand_loop, gpus).device_ms.median;
      std::string planned;
      if (const variant_result* p = find_devices_row(w, variant_kind::devices_pipeline_planned, gpus)) {
        planned = fmt::format("; planned on the model {:.3f}x the hand-written loop's time",
                              ratio(p->device_ms.median, hand));
      }
      text += fmt::format(
          "  on {} GPUs: default Pipeline {:.3f}x the {}, {:.3f}x the best hand-written loop's time; {:.2f}x "
          "the throughput of one GPU's Pipeline{}\n",
          gpus, ratio(pipeline, devices_row_of(w, floor_kind_of(w), gpus).device_ms.median),
          w.kind == bench::workload_kind::transfer_bound ? "copies floor" : "kernel-alone floor",
          ratio(pipeline, hand),
          ratio(devices_row_of(w, variant_kind::devices_pipeline, 1).device_ms.median, pipeline), planned);
    }
  }
  text +=
      "  (x floor: the row's time over the floor on as many GPUs; x 1 GPU: the same row's time on one GPU "
      "over "
      "this one's, its throughput gain; times on the host's clock around each whole run)\n";
  return text;
}

nlohmann::ordered_json devices_json(const bench::devices_result& d) {
  using json = nlohmann::ordered_json;
  json gpus = json::array();
  for (const bench::device_info& g : d.devices) gpus.push_back({{"ordinal", g.ordinal}, {"name", g.name}});
  json workloads = json::array();
  for (const devices_workload_result& w : d.workloads) {
    json rows = json::array();
    for (const devices_row& r : w.rows) {
      const variant_result& v = r.row;
      const double floor = devices_row_of(w, floor_kind_of(w), r.gpus).device_ms.median;
      const double one = devices_row_of(w, v.kind, 1).device_ms.median;
      rows.push_back({{"gpus", r.gpus},
                      {"kind", bench::to_string(v.kind)},
                      {"name", v.name},
                      {"chunk_bytes", v.chunk_bytes},
                      {"streams_per_gpu", v.streams},
                      {"chunks", v.chunks},
                      {"median_ms", v.device_ms.median},
                      {"min_ms", v.device_ms.min},
                      {"max_ms", v.device_ms.max},
                      {"samples_ms", v.device_ms.samples},
                      {"both_ways_gigabytes_per_second", both_ways_gbps(w, v.device_ms.median)},
                      {"ratio_to_floor", ratio(v.device_ms.median, floor)},
                      {"throughput_vs_one_gpu", ratio(one, v.device_ms.median)},
                      {"verified", v.verified}});
    }
    json sweep = json::array();
    for (const bench::hand_sweep_point& p : w.sweep) {
      sweep.push_back({{"gpus", p.gpus},
                       {"chunk_bytes", p.chunk_bytes},
                       {"streams_per_gpu", p.streams},
                       {"median_ms", p.median_ms}});
    }
    workloads.push_back({{"name", bench::to_string(w.kind)},
                         {"rounds", w.rounds},
                         {"elements", w.elements},
                         {"bytes_in", w.bytes},
                         {"bytes_out", w.bytes},
                         {"floor", bench::to_string(floor_kind_of(w))},
                         {"rows", std::move(rows)},
                         {"hand_sweep", std::move(sweep)}});
  }
  return {{"gpus", std::move(gpus)}, {"workloads", std::move(workloads)}};
}

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
