// `overlap bench`: the two workloads of docs/hardware.md on the GPU, in every
// variant (the seeds' one-stream and two-stream code, cuda::Pipeline with
// defaults and over a chunk x stream sweep) against the floors measured in
// the same run, every output checked; then the frames, the pageable data and
// cuda::Graph's rows (--only picks sections). Measuring is overlap_bench's job
// (src/bench); judging is bench_verdicts.cpp's; this file chooses the
// configuration and prints.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "overlap/core/error.hpp"
#include "overlap/version.hpp"
#include "subcommand.hpp"

#if OVERLAP_HAS_CUDA
#include <nlohmann/json.hpp>

#include "bench_devices.hpp"
#include "bench_graph.hpp"
#include "bench_report.hpp"
#include "bench_streams.hpp"
#include "bench_terms.hpp"
#include "bench_verdicts.hpp"
#include "overlap/bench/driver.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/io/exporters.hpp"
#endif

namespace overlap::cli {

namespace {

constexpr const char* footer = R"(Workloads (docs/hardware.md):
  transfer-bound  256 MiB of random floats in, y = 2x + 1, 256 MiB out
  compute-bound   4 Mi floats, v = sinf(v) * cosf(v) + v 100 times; the inputs
                  are random in the seed's range [0, 4Mi), where sinf takes
                  its slow argument reduction (small inputs run 9x faster)
  frames          100 frames (--frames) of 4 MiB through y = 2x + 1 (the tutorial's
                  ping-pong as written, a hand-tuned loop of the default
                  Feed's slots on one thread and streams by stage, and
                  cuda::Feed with default,
                  2, 4, 8 slots) against the copy rate at 4 MiB (every frame
                  H2D and D2H at once); Feeds whose producer spends 50 and
                  500 us per frame against max(producing, the GPU-bound Feed)
  pageable        the transfer-bound data in std::vectors: cudaMemcpyAsync
                  straight from them, Pipelines that register them each run,
                  stage them through pinned slots or choose (automatic), a
                  Pipeline over pinned copies, and over the vectors registered
                  once; against the host copy floor, (in + out) / the fastest
                  multi-threaded copy from pageable into pinned memory
                  (memcpy or streaming stores), swept again after each
                  round of the one-shot rows, which alternate
  graph           cuda::Graph (issue 13): 8 independent chains of 8 integer
                  kernels, each of SMs / 8 blocks, as a Graph, replayed from
                  a capture, on one stream and on hand-written streams and
                  events, against the longest chain alone, and the branches
                  seen running at once in a recorded run; 1,000 one-thread
                  kernels in fans and chains, host cost per node issued by
                  Graph::run against a captured replay; on the CPU, a random
                  100,000-node DAG declared and mapped onto 8 streams
Variants: sequential (one stream: H2D, kernel, D2H of the whole buffer);
hand-written 2 streams (the seeds' code: two halves, each H2D/kernel/D2H on
its own stream); Pipeline with default options; Pipeline over chunk sizes
(transfer: 256 KiB..16 MiB, compute: 256 KiB..4 MiB) x streams {2, 3, 4, 8}.
Floors, measured in the same run. Transfer-bound: the link floor,
max(bytes in / peak H2D, bytes out / peak D2H, all bytes / peak both
directions), the peaks measured over a size sweep of copy trains (1..64 MiB
copies, 256 MiB trains; --quick: 1..16 MiB, 64 MiB trains); the text says
which term binds. Compute-bound: the kernel alone. Whole-buffer copies (H2D
alone, D2H alone, both at once) are shown for information: they include each
copy's start-up, so they sit above what the link sustains. Ratios are to the
link floor and to the kernel-alone floor. Beside the link floor, the chunked
floor: the least time any pipeline of N equal chunks can take over every N,
T(N) = H2D(in/N) + (N-1) x max(pair(in/N), kernel/N) + kernel/N + D2H(out/N),
over the chunk sizes swept, each copy's time the sweep's median for that
size (interpolated between sizes); the transfer-bound verdicts are judged
against it (docs/bench.md).

The fastest Pipeline is then run again five ways, alternating run by run:
op by op (Pipeline::run), with recording on (its overhead, and the measured
timeline), captured once into a CUDA graph and replayed (pipeline_graph),
the same graph walked by the device (graph_scheduling::device), and as a
bare loop of the same runtime calls. Host cost per chunk = the host time
spent issuing a run (for a graph: its one cudaGraphLaunch) / its chunks. The
verdict judges the device-walked replay when its device time is within 1.01x
of the host-walked one's (run by run), else the host-walked one.

Each row: 2 warm-up runs, then --reps timed runs (median, min..max), each
timed with CUDA events from before the host issues to after it has seen the
run complete; 3 x --reps rounds for the rows judged run by run against a
floor measured beside them (the defaults against the kernel alone and the
chunked floor), whose verdicts allow only 1-2%. Host memory is pinned. The
output is filled with NaN (by the device) before every run and every element
is checked on the host after it: exactly for y = 2x + 1, within 1e-4
relative + 1e-5 for sin/cos.

Examples:
  overlap bench                         the full run (75-80 s on an H200)
  overlap bench --quick                 64 MiB / 1 Mi floats, 5 reps, a small sweep
  overlap bench --devices all           the several-GPU section alone: both jobs
                                        over 1, 2, ... of this host's GPUs
  overlap bench --only graph --timeline graph.json
                                        the Graph rows alone (judged), and the
                                        recorded Graph run as a Chrome trace
  overlap bench --json -o bench.json --timeline best.json
                                        machine-readable results, and the best
                                        transfer-bound Pipeline run as a Chrome
                                        trace (open in ui.perfetto.dev)
  overlap bench --report bench.html     the same run as one HTML page: the
                                        sweeps as charts (time against chunk
                                        size, a line per stream count, the
                                        floor), and the best transfer-bound run
                                        measured beside its prediction
  overlap probe -o my-gpu.json && overlap bench --report bench.html --device my-gpu.json
                                        the prediction on this GPU's probed model

Several GPUs (--devices all, a count N, or ordinals 0,2): instead of the
sections above, uint32 data through x -> a*x + b, once per element
(transfer-bound, 1 GiB each way in all) and 4096 times (compute-bound), over
the first 1, 2, ... of the GPUs named. Per GPU count: the default Pipeline
(pipeline_options::devices), the best hand-written loop of a sweep (one host
thread per GPU, its even share in chunks of 2..32 MiB depth-first over 2..4
streams), and the floor measured in the same run: the copies alone, both
ways at once on every GPU (transfer-bound), or the kernel alone on data
already on the GPUs (compute-bound). With --device host.json (from `overlap
probe --all-devices`), also a Pipeline planned on that model. Every row of
every GPU count alternates
run by run; every element of every run is checked exactly. --quick: 256 MiB
each way, a smaller sweep.

The acceptance verdicts are judged at full size only: a full run reports them
as PASS/FAIL lines (they do not change the exit code); --quick reports none.
Each is a promise on a quiet link (docs/bench.md lists them); one that rides
on the link says so when the link's peaks spread over 5% in the run.
Exit codes: 0 ok, 1 wrong output (the first bad index is named) or
a CUDA error, 2 bad input, no CUDA device, or built without CUDA.)";

// What --only can name.
constexpr const char* section_names[] = {"transfer", "compute", "frames", "pageable", "graph"};

struct BenchOptions {
  bool quick = false;
  std::vector<std::string> only;  // empty: every section
  unsigned reps = 15;
  bool json = false;
  std::string output;
  std::string timeline;
  std::string report;
  std::string device = "h100";
  std::string devices;     // empty: one GPU, the sections above
  std::size_t frames = 0;  // 0: 100 (20 with --quick)
};

#if OVERLAP_HAS_CUDA

// Fail before a minute of measuring, not after, when a file cannot be written.
void require_writable_path(const std::string& path, const char* flag) {
  if (path.empty() || path == "-") return;
  const std::filesystem::path target(path);
  const std::filesystem::path parent = target.parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent)) {
    throw invalid_input(fmt::format("{}: directory '{}' does not exist", flag, parent.string()));
  }
  if (std::filesystem::is_directory(target))
    throw invalid_input(fmt::format("{}: '{}' is a directory, not a file", flag, path));
}

// "2026-11-23 14:05 UTC": when the run was made, for the report's reader.
std::string utc_now() {
  return fmt::format("{:%Y-%m-%d %H:%M} UTC", fmt::gmtime(std::time(nullptr)));
}

using bench::variant_kind;
using bench::variant_result;
using bench::workload_kind;
using bench::workload_result;
using json = nlohmann::ordered_json;

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// The several-GPU section alone (--devices): the single-GPU sections off.
bench::bench_config devices_config(const BenchOptions& o, bool reps_given, std::vector<int> devices,
                                   const DeviceModel& model) {
  bench::bench_config config;
  config.warmup = 1;
  config.reps = reps_given ? o.reps : (o.quick ? 5U : 9U);
  config.paired_reps = 3 * config.reps;  // unused here, but reported in the settings
  config.feed.enabled = false;
  config.pageable.enabled = false;
  config.graph.enabled = false;
  config.devices.enabled = true;
  config.devices.devices = std::move(devices);
  if (model.host) config.devices.model = model;  // a probe of this host's links: a planned Pipeline too
  if (o.quick) {
    config.devices.bytes_each_way = 256 * MiB;
    config.devices.hand_chunk_bytes = {4 * MiB, 16 * MiB};
    config.devices.hand_stream_counts = {2, 4};
    config.devices.sweep_reps = 1;
  }
  return config;
}

bench::bench_config make_config(const BenchOptions& o, bool reps_given, const DeviceModel& model) {
  if (!o.devices.empty())
    return devices_config(o, reps_given, parse_device_set(o.devices, cuda::device_count()), model);
  bench::bench_config config;
  config.warmup = 2;
  config.reps = reps_given ? o.reps : (o.quick ? 5U : 15U);
  config.paired_reps = 3 * config.reps;
  bench::workload_config transfer;
  transfer.kind = workload_kind::transfer_bound;
  bench::workload_config compute;
  compute.kind = workload_kind::compute_bound;
  if (o.quick) {
    config.link.sizes = {1 * MiB, 4 * MiB, 16 * MiB};
    config.link.train_bytes = 64 * MiB;
    config.link.reps = 3;
    transfer.elements = 64 * MiB / sizeof(float);
    transfer.chunk_bytes = {1 * MiB, 4 * MiB};
    transfer.stream_counts = {2, 4};
    compute.elements = std::size_t{1024} * 1024;
    compute.chunk_bytes = {256 * KiB, 1 * MiB};
    compute.stream_counts = {2, 4};
  } else {
    config.link.sizes = {1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB};
    config.link.train_bytes = 256 * MiB;
    config.link.reps = 5;
    transfer.elements = 256 * MiB / sizeof(float);
    transfer.chunk_bytes = {256 * KiB, 1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB};
    transfer.stream_counts = {2, 3, 4, 8};
    compute.elements = std::size_t{4} * 1024 * 1024;
    compute.chunk_bytes = {256 * KiB, 512 * KiB, 1 * MiB, 2 * MiB, 4 * MiB};
    compute.stream_counts = {2, 3, 4, 8};
  }
  const auto wanted = [&o](const char* section) {
    return o.only.empty() || std::find(o.only.begin(), o.only.end(), section) != o.only.end();
  };
  if (wanted("transfer")) config.workloads.push_back(transfer);
  if (wanted("compute")) config.workloads.push_back(compute);
  config.feed.enabled = wanted("frames");
  config.pageable.enabled = wanted("pageable");
  config.graph.enabled = wanted("graph");
  if (o.quick) {
    config.feed.frames = 20;
    config.feed.slot_counts = {2, 4};
    config.feed.producer_us = {50};
    config.pageable.elements = 16 * MiB / sizeof(float);
    config.pageable.chunk_bytes = 2 * MiB;
    config.pageable.copy_threads = {4, 8};
    config.graph.kernels_per_branch = 4;
    config.graph.iterations = 4096;
    config.graph.tiny_kernels = 300;
    config.graph.dag_nodes = 20'000;
  }
  if (o.frames != 0) config.feed.frames = o.frames;
  return config;
}

// --- text ----------------------------------------------------------------------

std::string row_text(const variant_result& v, double floor_time, double sequential_ms) {
  return fmt::format("  {:<36} {:>8} {:>7} {:>7} {:>10.3f}  {:>7.3f}..{:<8.3f} {:>7.3f} {:>8.3f}\n", v.name,
                     bench::format_bytes(v.chunk_bytes), v.streams, v.chunks, v.device_ms.median,
                     v.device_ms.min, v.device_ms.max, ratio(v.device_ms.median, floor_time),
                     ratio(v.device_ms.median, sequential_ms));
}

// The link floor as a row of the table: computed, not timed, so no spread.
std::string link_row_text(const bench::link_floor& f, double sequential_ms) {
  std::string text =
      fmt::format("  {:<36} {:>8} {:>7} {:>7} {:>10.3f}  {:^17} {:>7.3f} {:>8.3f}\n",
                  "floor: link peaks (computed)", "-", "-", "-", f.ms, "", 1.0, ratio(f.ms, sequential_ms));
  const bench::chunked_floor& c = f.chunked;
  if (c.chunks > 0) {
    text += fmt::format("  {:<36} {:>8} {:>7} {:>7} {:>10.3f}  {:^17} {:>7.3f} {:>8.3f}\n",
                        "floor: chunked pipeline (computed)", bench::format_bytes(c.chunk_bytes), "-",
                        c.chunks, c.ms, "", ratio(c.ms, f.ms), ratio(c.ms, sequential_ms));
  }
  return text;
}

std::string per_chunk_text(const variant_result& v) {
  if (!v.host_issue_per_chunk_us) return "not measured";
  const bench::stats& us = *v.host_issue_per_chunk_us;
  return fmt::format("{:.2f} us ({:.2f}..{:.2f})", us.median, us.min, us.max);
}

// The host's side of the best configuration: what issuing one chunk costs
// issued op by op, replayed as a graph, and as a bare loop of the same calls;
// and what the graph costs on the device against direct issue.
std::string host_cost_text(const workload_result& w) {
  const variant_result& best = best_of(w);
  std::string text = fmt::format(
      "  host cost per chunk of the best configuration ({} chunks), median (min..max):\n", best.chunks);
  text += fmt::format("    {:<36} {}\n", "Pipeline::run, op by op", per_chunk_text(best));
  if (w.best_graph) {
    text += fmt::format("    {:<36} {}, set up once in {:.2f} ms\n", "pipeline_graph::replay, one launch",
                        per_chunk_text(*w.best_graph), w.graph_setup_ms);
  }
  if (w.best_graph_device) {
    text += fmt::format("    {:<36} {}, set up once in {:.2f} ms\n", "... walked by the device",
                        per_chunk_text(*w.best_graph_device), w.graph_device_setup_ms);
  }
  if (w.best_loop)
    text += fmt::format("    {:<36} {}\n", "bare loop of the same calls", per_chunk_text(*w.best_loop));
  if (w.best_graph && w.best_again) {
    text += fmt::format("  graph replay on the device: {:.3f} ms vs op by op {:.3f} ms = {:.3f}x\n",
                        w.best_graph->device_ms.median, w.best_again->device_ms.median,
                        ratio(w.best_graph->device_ms.median, w.best_again->device_ms.median));
  }
  if (w.best_graph_device && w.graph_device_to_host) {
    const bench::stats& d = *w.graph_device_to_host;
    text += fmt::format(
        "  walked by the device: {:.3f} ms, {:.3f}x ({:.3f}..{:.3f}) the host-walked replay run by run{}\n",
        w.best_graph_device->device_ms.median, d.median, d.min, d.max,
        replay_judged(w).device_scheduled ? " (its host cost is the one judged)" : "");
  }
  return text;
}

// The default Pipeline against the kernel alone, the two alternating run by run.
std::string paired_line(const bench::paired_floor& p) {
  return fmt::format(
      "default Pipeline against the kernel alone, alternating run by run: {:.3f} / {:.3f} ms, {:.4f}x "
      "(run by run {:.4f}..{:.4f}x)",
      p.pipeline.device_ms.median, p.floor.device_ms.median, p.ratio.median, p.ratio.min, p.ratio.max);
}

// The transfer-bound default Pipeline against the sweep's best and the
// chunked floor, the rows alternating and the link swept after each pair.
std::string transfer_paired_line(const bench::paired_transfer& p) {
  return fmt::format(
      "default Pipeline against the sweep's best ({}) and the chunked floor, alternating run by run, the "
      "link swept after each pair: {:.3f} / {:.3f} / {:.3f} ms, {:.4f}x the best (run by run "
      "{:.4f}..{:.4f}x), "
      "{:.4f}x the chunked floor ({:.4f}..{:.4f}x; the floor {:.3f}..{:.3f} ms)",
      p.best_swept.name, p.pipeline.device_ms.median, p.best_swept.device_ms.median,
      p.chunked_floor_ms.median, p.to_best_swept.median, p.to_best_swept.min, p.to_best_swept.max,
      p.to_chunked_floor.median, p.to_chunked_floor.min, p.to_chunked_floor.max, p.chunked_floor_ms.min,
      p.chunked_floor_ms.max);
}

std::string workload_text(const workload_result& w) {
  const double floor_time = floor_ms(w);
  const double sequential_ms = sequential_of(w).device_ms.median;
  std::string text =
      fmt::format("\n{}: {} in ({} floats), {}, {} out\n", bench::to_string(w.kind),
                  bench::format_bytes(w.bytes), w.elements, kernel_words(w), bench::format_bytes(w.bytes));
  text += fmt::format("  {:<36} {:>8} {:>7} {:>7} {:>10}  {:^17} {:>7} {:>8}\n", "variant", "chunk",
                      "streams", "chunks", "median ms", "min..max ms", "x floor", "x seq");
  if (w.link) text += link_row_text(*w.link, sequential_ms);
  for (const variant_result& v : w.floors) text += row_text(v, floor_time, sequential_ms);
  for (const variant_result& v : w.variants) text += row_text(v, floor_time, sequential_ms);

  if (w.link) {
    text += "  " + link_floor_line(*w.link) + "\n";
    if (const std::string chunked = chunked_floor_line(*w.link); !chunked.empty())
      text += "  " + chunked + "\n";
  }
  text += "  " + best_line(w) + "\n";
  if (w.default_paired) text += "  " + paired_line(*w.default_paired) + "\n";
  if (w.transfer_paired) text += "  " + transfer_paired_line(*w.transfer_paired) + "\n";
  const variant_result& default_pipeline = required(w, variant_kind::pipeline_default);
  const variant_result& two = required(w, variant_kind::two_stream);
  text += fmt::format(
      "  default Pipeline (chunk {} x {} streams{}) vs hand-written 2 streams: {:.3f} ms vs {:.3f} ms = "
      "{:.3f}x\n",
      bench::format_bytes(default_pipeline.chunk_bytes), default_pipeline.streams,
      default_pipeline.per_stage ? " by stage" : "", default_pipeline.device_ms.median, two.device_ms.median,
      ratio(default_pipeline.device_ms.median, two.device_ms.median));
  text += host_cost_text(w);
  if (w.best_again && w.best_recorded) {
    text += fmt::format(
        "  recording overhead (best, alternating runs): on {:.3f} ms vs off {:.3f} ms = {:.3f}x\n",
        w.best_recorded->device_ms.median, w.best_again->device_ms.median,
        ratio(w.best_recorded->device_ms.median, w.best_again->device_ms.median));
  }
  return text;
}

std::string text_report(const bench::bench_result& r, const Judgement& judgement) {
  std::string text = "overlap bench on " + device_line(r.device) + "\n";
  text += fmt::format(
      "each row: {} warm-up runs, then the median and min..max of {} timed runs (CUDA events from before the "
      "host issues to after it sees completion), {} for the rows judged run by run against a floor measured "
      "beside them; every output element of every run verified\n",
      r.warmup, r.reps, r.paired_reps);
  if (!r.workloads.empty())
    text += "link floor: the link's peak rates, measured in this run over " + link_sweep_text(r.link) + "\n";
  for (const workload_result& w : r.workloads) text += workload_text(w);
  if (r.feed) text += frames_text(*r.feed);
  if (r.pageable) text += pageable_text(*r.pageable);
  if (r.graph) text += graph_text(*r.graph);
  if (r.devices) text += devices_text(*r.devices);
  return text + verdicts_text(judgement);
}

// --- JSON ----------------------------------------------------------------------

json row_json(const variant_result& v, double floor_time, double sequential_ms) {
  json row = {{"name", v.name},
              {"kind", bench::to_string(v.kind)},
              {"chunk_bytes", v.chunk_bytes},
              {"streams", v.streams},
              {"streams_by", v.per_stage ? "stage" : "chunk"},
              {"chunks", v.chunks},
              {"median_ms", v.device_ms.median},
              {"min_ms", v.device_ms.min},
              {"max_ms", v.device_ms.max},
              {"samples_ms", v.device_ms.samples},
              {"host_wall_ms", stats_json(v.host_ms)},
              {"ratio_to_floor", ratio(v.device_ms.median, floor_time)},
              {"ratio_to_sequential", ratio(v.device_ms.median, sequential_ms)},
              {"verified", v.verified}};
  if (v.host_issue_ms) row["host_issue_ms"] = stats_json(*v.host_issue_ms);
  if (v.host_issue_per_chunk_us) row["host_issue_per_chunk_us"] = stats_json(*v.host_issue_per_chunk_us);
  if (v.device_bytes > 0) row["device_bytes"] = v.device_bytes;
  return row;
}

json peak_json(const bench::link_peak& p) {
  return {{"gigabytes_per_second", p.gigabytes_per_second}, {"at_bytes", p.at_bytes}, {"spread", p.spread}};
}

json link_floor_json(const bench::link_floor& f) {
  json out = {
      {"ms", f.ms},
      {"bound_by", bench::key_of(f.bound_by)},
      {"terms_ms", {{"h2d", f.h2d_ms}, {"d2h", f.d2h_ms}, {"both_directions", f.both_ms}}},
      {"peaks",
       {{"h2d", peak_json(f.h2d)}, {"d2h", peak_json(f.d2h)}, {"both_directions", peak_json(f.both)}}}};
  json points = json::array();
  for (const bench::link_point& p : f.points) {
    points.push_back(
        {{"bytes", p.bytes}, {"h2d_ms", p.h2d_ms}, {"d2h_ms", p.d2h_ms}, {"both_ms", p.both_ms}});
  }
  out["points"] = std::move(points);
  const bench::chunked_floor& c = f.chunked;
  if (c.chunks > 0) {
    out["chunked"] = {
        {"ms", c.ms},
        {"ratio_to_link_floor", f.ms > 0.0 ? c.ms / f.ms : 0.0},
        {"chunks", c.chunks},
        {"chunk_bytes", c.chunk_bytes},
        {"kernel_ms", c.kernel_ms},
        {"chunk_copy_ms", {{"h2d", c.h2d_ms}, {"d2h", c.d2h_ms}, {"both_directions", c.pair_ms}}}};
  }
  return out;
}

json workload_json(const workload_result& w) {
  const double floor_time = floor_ms(w);
  const double sequential_ms = sequential_of(w).device_ms.median;
  json floors = json::array();
  for (const variant_result& v : w.floors) floors.push_back(row_json(v, floor_time, sequential_ms));
  json variants = json::array();
  for (const variant_result& v : w.variants) variants.push_back(row_json(v, floor_time, sequential_ms));
  const variant_result& best = best_of(w);
  json out = {{"name", bench::to_string(w.kind)},
              {"kernel", kernel_words(w)},
              {"elements", w.elements},
              {"bytes_in", w.bytes},
              {"bytes_out", w.bytes},
              {"floor", floor_key(w)},
              {"floor_ms", floor_time},
              {"sequential_ms", sequential_ms}};
  if (w.link) out["link_floor"] = link_floor_json(*w.link);
  out["floors"] = std::move(floors);
  out["variants"] = std::move(variants);
  out["best"] = {{"name", best.name},
                 {"index", w.best_pipeline},
                 {"chunk_bytes", best.chunk_bytes},
                 {"streams", best.streams},
                 {"chunks", best.chunks},
                 {"median_ms", best.device_ms.median},
                 {"ratio_to_floor", ratio(best.device_ms.median, floor_time)},
                 {"ratio_to_sequential", ratio(best.device_ms.median, sequential_ms)},
                 {"host_issue_per_chunk_us_median", host_cost_per_chunk_us(best)}};
  if (w.best_graph) {
    out["graph"] = {{"replay", row_json(*w.best_graph, floor_time, sequential_ms)},
                    {"setup_ms", w.graph_setup_ms},
                    {"host_issue_per_chunk_us_median", host_cost_per_chunk_us(*w.best_graph)}};
    if (w.best_graph_device && w.graph_device_to_host) {
      out["graph"]["device_scheduled"] = {
          {"replay", row_json(*w.best_graph_device, floor_time, sequential_ms)},
          {"setup_ms", w.graph_device_setup_ms},
          {"host_issue_per_chunk_us_median", host_cost_per_chunk_us(*w.best_graph_device)},
          {"device_time_to_host_scheduled", stats_json(*w.graph_device_to_host)}};
    }
    out["graph"]["judged"] = replay_judged(w).device_scheduled ? "device_scheduled" : "replay";
  }
  if (w.best_loop) out["bare_loop"] = row_json(*w.best_loop, floor_time, sequential_ms);
  if (w.default_paired) {
    const bench::paired_floor& p = *w.default_paired;
    out["default_vs_kernel_paired"] = {{"kernel_alone", row_json(p.floor, floor_time, sequential_ms)},
                                       {"pipeline_default", row_json(p.pipeline, floor_time, sequential_ms)},
                                       {"ratio", stats_json(p.ratio)}};
  }
  if (w.transfer_paired) {
    const bench::paired_transfer& p = *w.transfer_paired;
    out["default_vs_link_paired"] = {{"pipeline_default", row_json(p.pipeline, floor_time, sequential_ms)},
                                     {"best_swept", row_json(p.best_swept, floor_time, sequential_ms)},
                                     {"chunked_floor_ms", stats_json(p.chunked_floor_ms)},
                                     {"to_best_swept", stats_json(p.to_best_swept)},
                                     {"to_chunked_floor", stats_json(p.to_chunked_floor)},
                                     {"best_to_chunked_floor", stats_json(p.best_to_chunked_floor)}};
  }
  out["default_vs_two_stream"] = ratio(required(w, variant_kind::pipeline_default).device_ms.median,
                                       required(w, variant_kind::two_stream).device_ms.median);
  if (w.best_again && w.best_recorded) {
    out["recording"] = {{"off", row_json(*w.best_again, floor_time, sequential_ms)},
                        {"on", row_json(*w.best_recorded, floor_time, sequential_ms)},
                        {"ratio", ratio(w.best_recorded->device_ms.median, w.best_again->device_ms.median)}};
  }
  return out;
}

std::string json_report(const bench::bench_result& r, const Judgement& judgement, bool quick) {
  const bench::device_info& d = r.device;
  json out;
  out["tool"] = "overlap bench";
  out["version"] = overlap::version_string;
  out["device"] = {{"ordinal", d.ordinal},
                   {"name", d.name},
                   {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                   {"sm_count", d.sm_count},
                   {"async_engine_count", d.async_engine_count},
                   {"global_memory_bytes", d.global_memory_bytes},
                   {"driver_version", d.driver_version},
                   {"runtime_version", d.runtime_version}};
  out["settings"] = {
      {"quick", quick},
      {"warmup", r.warmup},
      {"reps", r.reps},
      {"paired_reps", r.paired_reps},
      {"timing",
       "CUDA events on a clock stream, from before the host issues a run to after the "
       "host has seen it complete"},
      {"verification",
       "output NaN-filled from the device before every run; every element checked on the host after "
       "it (y = 2x + 1 exactly, sin/cos within 1e-4 relative + 1e-5)"},
      {"link_sweep", {{"sizes", r.link.sizes}, {"train_bytes", r.link.train_bytes}, {"reps", r.link.reps}}}};
  json workloads = json::array();
  for (const workload_result& w : r.workloads) workloads.push_back(workload_json(w));
  out["workloads"] = std::move(workloads);
  if (r.feed) out["frames"] = frames_json(*r.feed);
  if (r.pageable) out["pageable"] = pageable_json(*r.pageable);
  if (r.graph) out["graph"] = graph_json(*r.graph);
  if (r.devices) out["devices"] = devices_json(*r.devices);
  add_verdicts_json(out, judgement);
  out["verified"] = true;  // a wrong element ends the bench with exit 1 and no report
  // Names from input may be any bytes; JSON is UTF-8 (bad bytes become U+FFFD).
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int run_bench(const BenchOptions& o, bool reps_given, Streams io) {
  require_writable_path(o.output, "--output");
  require_writable_path(o.timeline, "--timeline");
  require_writable_path(o.report, "--report");
  if (o.report == "-")
    throw invalid_input("--report: give a file name (the page is HTML, not for a terminal)");
  if (!o.devices.empty()) {
    const char* with = !o.only.empty()       ? "--only"
                       : !o.report.empty()   ? "--report"
                       : !o.timeline.empty() ? "--timeline"
                                             : nullptr;
    if (with != nullptr) {
      throw invalid_input(fmt::format(
          "--devices: measures the several-GPU section alone, which {} does not apply to; drop one of them",
          with));
    }
  }
  const bool pipelines = o.only.empty() || std::ranges::any_of(o.only, [](const std::string& section) {
                           return section == "transfer" || section == "compute";
                         });
  if (!o.report.empty() && !pipelines)
    throw invalid_input("--report: draws the Pipeline workloads; --only names neither transfer nor compute");
  const bool graphs = o.only.empty() || std::ranges::find(o.only, "graph") != o.only.end();
  if (!o.timeline.empty() && !pipelines && !graphs)
    throw invalid_input("--timeline: --only names no section with a recorded run (transfer, compute, graph)");
  const DeviceModel model =
      DeviceModel::load(o.device);  // a bad model file fails before a minute of measuring
  if (cuda::device_count() == 0) {
    io.err << "overlap bench: no CUDA device\n";
    return exit_bad_input;
  }
  const bench::bench_config config = make_config(o, reps_given, model);
  bench::bench_result result;
  try {
    result =
        bench::run_benchmark(config, [&io](std::size_t step, std::size_t steps, const std::string& what) {
          io.err << fmt::format("[{}/{}] {}\n", step, steps, what) << std::flush;
        });
  } catch (const bench::wrong_output& e) {
    io.err << "overlap bench: wrong output at index " << e.index() << ": " << e.what() << '\n';
    return exit_findings;
  } catch (const invalid_input&) {
    throw;
  } catch (const std::exception& e) {
    io.err << "overlap bench: error: " << e.what() << '\n';
    return exit_findings;
  }
  const Judgement judgement = judge(result, o.quick);
  write_output(o.output, o.json ? json_report(result, judgement, o.quick) : text_report(result, judgement),
               io);
  if (!o.timeline.empty()) {
    // The best Pipeline run when one was measured, else the recorded Graph run.
    const workload_result* w = recorded_workload(result);
    if (w != nullptr) {
      write_output(o.timeline, io::to_chrome_trace(*w->best_timeline), io);
    } else if (result.graph && result.graph->timeline) {
      write_output(o.timeline, io::to_chrome_trace(*result.graph->timeline), io);
    } else {
      throw error("bench: no recorded run to write as a timeline");
    }
  }
  if (!o.report.empty()) {
    write_output(o.report, bench_report_html(result, verdict_lines(judgement), utc_now(), model), io);
    io.err << "report: " << o.report << '\n';
  }
  return exit_ok;
}

#endif  // OVERLAP_HAS_CUDA

}  // namespace

Subcommand add_bench(CLI::App& parent, Streams io) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* app = parent.add_subcommand("bench", "Run the transfer- and compute-bound workloads on the GPU");
  app->footer(footer);
  app->add_flag(
      "--quick", o->quick,
      "Smaller data (64 MiB, 1 Mi floats), 5 reps, a small sweep; no verdicts (judged at full size)");
  app->add_option("--reps", o->reps,
                  "Timed runs per variant (default 15, 5 with --quick); 3x as many for the paired rows")
      ->check(CLI::Range(1U, 100'000U));
  app->add_flag("--json", o->json, "Write the results as JSON (variants, floors, ratios, verdicts)");
  app->add_option("-o,--output", o->output, "Write the results to FILE instead of standard output");
  app->add_option("--only", o->only,
                  "Measure only these sections (repeat, or separate with commas): transfer, compute, frames, "
                  "pageable, graph")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(section_names), std::end(section_names))))
      ->delimiter(',');
  app->add_option("--frames", o->frames,
                  "Frames per run in the frames section (default 100, 20 with --quick)")
      ->check(CLI::Range(std::size_t{2}, std::size_t{100'000}));
  app->add_option("--timeline", o->timeline,
                  "Write the best transfer-bound Pipeline run, recorded, as Chrome trace JSON to FILE (with "
                  "--only graph: the recorded Graph run)");
  app->add_option(
      "--report", o->report,
      "Write an HTML page to FILE: each sweep as a chart, and the best transfer-bound run measured "
      "beside the simulator's prediction of it (on the --device model)");
  app->add_option("--devices", o->devices,
                  "Measure the several-GPU section alone over these GPUs: all, a count N (the first N), or "
                  "ordinals (0,2); rows on the first 1, 2, ... of them");
  app->add_option("--device", o->device,
                  "Device model the report's prediction uses: a preset or a model file from `overlap probe`; "
                  "with --devices, a model from `overlap probe --all-devices` adds a Pipeline planned on it")
      ->capture_default_str();
  return {app, [o, app, io] {
#if OVERLAP_HAS_CUDA
            return run_bench(*o, app->count("--reps") > 0, io);
#else
            (void)o;
            (void)app;
            io.err << "overlap bench: built without CUDA\n";
            return static_cast<int>(exit_bad_input);
#endif
          }};
}

}  // namespace overlap::cli
