// overlap::bench: the two workloads of docs/hardware.md, run on the GPU in every
// variant `overlap bench` compares, with their floors, timed and verified.
//
// A variant is one complete H2D -> kernel -> D2H over the whole data: the
// seeds' one-stream baseline, their hand-written two-stream split, and
// cuda::Pipeline (default options and a chunk x stream sweep). A floor is
// what no schedule beats: for the transfer-bound workload the link floor
// (link_floor.hpp: the link's peak rates, measured by a size sweep in the
// same run), for the compute-bound one the kernel alone. Whole-buffer copies
// (one direction alone, both at once) are measured too, for information.
// Every run is timed with CUDA events on a clock stream, from just
// before the host starts issuing to just after the host has seen the last op
// complete (the same bracket for every variant and floor, so Pipeline, whose
// streams are its own, is timed like the rest). The output buffer is filled
// with NaN (by the device, so the CPU's caches hold none of it when the run's
// D2H writes it) before every run of a variant, and every element is checked
// on the host after it; a wrong element throws wrong_output.
//
// cuda::Graph (issue 13) is measured on its own data: branches of small
// integer kernels (every element checked against the host's rounds), tiny
// kernels in chains and fans, and a random DAG built and mapped on the CPU.
//
// Library code: it prints nothing; progress goes to a callback. The
// implementation is in src/bench/, one file per workload and per part.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "overlap/bench/link_floor.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap::bench {

/// The GPU the benchmark runs on.
struct device_info {
  int ordinal = 0;                      ///< cudaGetDevice
  std::string name;                     ///< "NVIDIA H100 80GB HBM3"
  int compute_major = 0;                ///< compute capability, major
  int compute_minor = 0;                ///< compute capability, minor
  int sm_count = 0;                     ///< streaming multiprocessors
  int async_engine_count = 0;           ///< copy engines: 2 or more lets H2D and D2H overlap
  std::size_t global_memory_bytes = 0;  ///< device memory
  int driver_version = 0;               ///< cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;              ///< cudaRuntimeGetVersion
};

/// Describes the current device; throws cuda_error.
[[nodiscard]] device_info query_device();
/// Describes GPU `ordinal` (the current device is left as it was); throws cuda_error.
[[nodiscard]] device_info query_device(int ordinal);

/// The two workloads of docs/hardware.md.
enum class workload_kind {
  transfer_bound,  ///< y = 2x + 1: one read, one write per element
  compute_bound,   ///< v = sinf(v) * cosf(v) + v, 100 times per element
};
/// "transfer-bound", "compute-bound".
[[nodiscard]] std::string_view to_string(workload_kind kind) noexcept;

/// One workload and the Pipeline sweep to run over it.
struct workload_config {
  workload_kind kind = workload_kind::transfer_bound;  ///< which workload
  std::size_t elements = 0;                            ///< floats in (and out)
  std::vector<std::size_t> chunk_bytes;                ///< sweep: Pipeline chunk sizes
  std::vector<unsigned> stream_counts;                 ///< sweep: Pipeline stream counts
};

/// Frames through a Feed (issue 12): the CUDA tutorial's ping-pong, 4 MiB
/// frames of y = 2x + 1, against its hand-written form and the copy rate.
struct feed_config {
  bool enabled = true;                            ///< measure the frames workload
  std::size_t frames = 100;                       ///< per run (>= 2)
  std::size_t frame_elements = 1 << 20;           ///< floats per frame (4 MiB)
  std::vector<unsigned> slot_counts = {2, 4, 8};  ///< Feeds with these slots, beside the default
  std::vector<double> producer_us = {50, 500};    ///< a paced producer's host time per frame
};

/// Pageable host data (issue 12): the transfer-bound workload from
/// std::vector input and output, naive, registered, staged and pinned.
struct pageable_config {
  bool enabled = true;                              ///< measure the pageable workload
  std::size_t elements = std::size_t{64} << 20;     ///< floats in (and out): 256 MiB
  std::size_t chunk_bytes = std::size_t{8} << 20;   ///< the Pipelines' chunk
  unsigned streams = 4;                             ///< the Pipelines' streams
  std::vector<unsigned> copy_threads = {4, 8, 16};  ///< host copy floor: thread counts tried
};

/// cuda::Graph (issue 13): (a) independent branches of small kernels that
/// each fill a fraction of the GPU, as a Graph, on one stream, and on
/// hand-written streams and events; (b) many tiny kernels in chains and
/// fans, issued directly and replayed from a capture; (c) on the CPU,
/// building and mapping a large random DAG. Data and DAG follow from
/// bench_config::seed.
struct graph_config {
  bool enabled = true;              ///< measure the Graph rows
  unsigned branches = 8;            ///< (a) independent chains of kernels
  unsigned kernels_per_branch = 8;  ///< (a) kernels in each chain
  /// (a) blocks of each kernel (one uint32 per thread); 0 takes the SM count
  /// / branches (at least 1), so that every branch fits on the GPU at once.
  unsigned blocks_per_kernel = 0;
  unsigned iterations = 16384;      ///< (a) LCG rounds per element per kernel: compute-bound, exact
  std::size_t tiny_kernels = 1000;  ///< (b) one-thread kernels, in fans and chains
  std::size_t dag_nodes = 100'000;  ///< (c) nodes of the random DAG built and mapped on the CPU
};

/// Several GPUs (issue 37): a job of uint32 elements streamed through
/// x -> a * x + b iterated `rounds` times, spread over the first 1, 2, ...
/// of `devices`: transfer-bound (1 round) and compute-bound (compute_rounds).
/// Each GPU count runs the default Pipeline over those GPUs, the best
/// hand-written loop of a sweep (one host thread per GPU, its contiguous
/// share of the data in chunks depth-first over S streams, a device slot
/// per stream), and a floor measured in the same run: the copies alone
/// (transfer-bound) or the kernel alone on data already on the GPUs
/// (compute-bound), every GPU at once. Every element of every run checked.
struct devices_config {
  bool enabled = false;                               ///< measure this section
  std::vector<int> devices;                           ///< CUDA ordinals, in the order they are added
  std::size_t bytes_each_way = std::size_t{1} << 30;  ///< the whole job's input (and output), over every GPU
  unsigned compute_rounds = 4096;                     ///< rounds per element of the compute-bound job
  std::vector<std::size_t> hand_chunk_bytes = {std::size_t{2} << 20, std::size_t{4} << 20,
                                               std::size_t{8} << 20, std::size_t{16} << 20,
                                               std::size_t{32} << 20};  ///< hand sweep
  std::vector<unsigned> hand_stream_counts = {2, 3, 4};                 ///< hand sweep: streams per GPU
  unsigned sweep_reps = 3;  ///< timed runs per sweep point (their median picks)
  /// A probed model (`overlap probe --all-devices`): each GPU count also
  /// runs a Pipeline planned on it (automatic_chunking::planned, the model
  /// splitting the data by each GPU's link rate).
  std::optional<DeviceModel> model;
};

/// What run_benchmark measures, and how often.
struct bench_config {
  std::vector<workload_config> workloads;  ///< measured in this order
  feed_config feed;                        ///< then the frames
  pageable_config pageable;                ///< then the pageable data
  graph_config graph;                      ///< then cuda::Graph
  devices_config devices;                  ///< then several GPUs (off unless enabled)
  unsigned warmup = 2;                     ///< untimed runs before the timed ones, per variant
  unsigned reps = 15;                      ///< timed runs per variant
  /// Timed rounds of the rows judged run by run against a floor measured
  /// beside them (paired_floor, paired_transfer), whose verdicts allow 1-2%:
  /// on the lent H200s the transfer-bound default's median of 15 ratios to
  /// the chunked floor ranged over 1.006-1.021 in eleven calls, the
  /// estimate's own noise as wide as the margin it is judged by.
  unsigned paired_reps = 45;
  std::uint64_t seed = 20261122;  ///< of the random input data
  link_sweep link;                ///< the sweep behind each transfer-bound workload's floor
};

/// What a measured row is.
enum class variant_kind {
  floor_h2d,              ///< the whole input H2D, one copy (for information: see link_floor)
  floor_d2h,              ///< the whole output D2H, one copy (for information)
  floor_both_directions,  ///< H2D and an equal D2H on two streams, started together (for information)
  floor_kernel,           ///< the kernel over the whole data, already on the device
  sequential,             ///< one stream: H2D whole, kernel, D2H whole
  two_stream,             ///< the seeds' split: two halves, each H2D/kernel/D2H on its own stream
  pipeline_default,       ///< cuda::Pipeline with default options
  pipeline,               ///< cuda::Pipeline with a chunk size and stream count from the sweep
  pipeline_planned,       ///< cuda::Pipeline with automatic_chunking::planned (the GPU's built-in model)
  pipeline_calibrated,    ///< cuda::Pipeline with stage_calibration::on (planned on its stage's curve)
  pipeline_recorded,      ///< the best Pipeline configuration with recording::on
  pipeline_graph,         ///< the best configuration captured once into a CUDA graph, replayed
  pipeline_graph_device,  ///< ... instantiated for the device to walk (cuda::graph_scheduling::device)
  chunk_loop,             ///< the best configuration's chunks issued by a bare hand-written loop
  // The frames workload: chunk_bytes is the frame, streams the slots, chunks the frames.
  floor_frame_copies,  ///< every frame H2D on one stream and D2H on another, at once: the copy rate
  ping_pong,           ///< the tutorial's hand-written ping-pong: two streams, two buffers
  hand_tuned_slots,    ///< the best hand-written loop found: default Feed's slots, streams by stage
  feed_default,        ///< cuda::Feed with default slots, a producer and consumer that do nothing
  feed,                ///< cuda::Feed with a given slot count
  feed_paced,          ///< cuda::Feed (default slots) whose producer spends a fixed host time per frame
  feed_graphs,         ///< cuda::Feed (default slots), feed_issue::graph_per_slot
  feed_dedicated,      ///< cuda::Feed (default slots), feed_issuing_thread::dedicated
  // The pageable workload: the transfer-bound data in std::vectors.
  pageable_naive,           ///< cudaMemcpyAsync straight from the vectors, 4 streams x 32 chunks
  pageable_registered,      ///< Pipeline, pageable_memory::register_in_place (registered every run)
  pageable_staged,          ///< Pipeline, pageable_memory::stage
  pageable_automatic,       ///< Pipeline, pageable_memory::automatic
  pageable_pinned,          ///< Pipeline over pinned copies of the data
  pageable_kept,            ///< Pipeline over the vectors, registered once by the caller (host_registration)
  pageable_kept_automatic,  ///< the same with pageable_memory::automatic
  // cuda::Graph (issue 13), (a): branches of small kernels.
  branch_alone,           ///< the longest branch alone on one stream: the floor
  graph_one_stream,       ///< every branch's kernels in order on one stream
  graph_hand_streams,     ///< hand-written: a stream per branch, forked and joined with events
  graph_branches,         ///< cuda::Graph::run, each kernel declaring its branch's buffer
  graph_branches_replay,  ///< the same Graph captured once, replayed (captured_graph::launch)
  // (b): tiny kernels in chains and fans.
  tiny_direct,  ///< cuda::Graph::run: every node issued by the host
  tiny_replay,  ///< the same Graph captured once, replayed
  // (c): the CPU alone.
  dag_build_map,  ///< a random DAG declared (graph::TaskGraph) and mapped (graph::schedule)
  // Several GPUs (devices_config): streams is per GPU.
  devices_copies,    ///< the floor of the transfer-bound job: its copies alone, both ways, every GPU at once
  devices_kernel,    ///< the floor of the compute-bound job: the kernel alone on data already on the GPUs
  devices_pipeline,  ///< cuda::Pipeline with default options and pipeline_options::devices
  devices_pipeline_planned,  ///< the same planned on devices_config::model (automatic_chunking::planned)
  devices_hand_loop,         ///< the best hand-written loop of the sweep, one host thread per GPU
};
/// "floor_h2d", "sequential", ...: a stable key for JSON.
[[nodiscard]] std::string_view to_string(variant_kind kind) noexcept;

/// Median, extremes and every sample, in the samples' unit.
struct stats {
  double median = 0.0;          ///< of an even count: the mean of the middle two
  double min = 0.0;             ///< smallest sample
  double max = 0.0;             ///< largest sample
  std::vector<double> samples;  ///< in the order taken
};
/// Summarizes `samples` (empty gives zeros).
[[nodiscard]] stats summarize(std::vector<double> samples);

/// One measured variant or floor.
struct variant_result {
  variant_kind kind = variant_kind::sequential;  ///< what the row is
  std::string name;                              ///< for people: "pipeline chunk 4 MiB x 4 streams"
  std::size_t chunk_bytes = 0;                   ///< input bytes per chunk (the whole input when not chunked)
  unsigned streams = 1;                          ///< streams the run used
  std::size_t chunks = 1;                        ///< pieces the data went in
  stats device_ms;                               ///< CUDA events around each timed run
  stats host_ms;                                 ///< the same runs on the host's steady clock
  /// Host time spent issuing a run's ops (Pipeline: run_report.host_issue_ms;
  /// a graph: its launch; the bare loop: the loop), and that divided by the chunks (in us).
  std::optional<stats> host_issue_ms;
  std::optional<stats> host_issue_per_chunk_us;  ///< host_issue_ms per chunk, in us
  std::size_t device_bytes = 0;                  ///< Pipeline only: its ring's device memory
  /// Streams by stage (one upload, kernel streams, one download:
  /// cuda::stream_assignment::per_stage) rather than chunk by chunk.
  bool per_stage = false;
  bool verified = false;  ///< every element of every run (warm-up too) checked
};

/// The compute-bound default Pipeline and the kernel alone measured again
/// together, alternating run by run, every run of both prepared and checked
/// alike: their ratio does not depend on what the GPU's clocks did between
/// the floor's rows and the Pipeline's, seconds apart.
struct paired_floor {
  variant_result floor;     ///< the kernel alone (its output brought home untimed, then checked)
  variant_result pipeline;  ///< the default Pipeline (its first run, which adapts the layout, a warm-up)
  stats ratio;              ///< the Pipeline's time over the kernel's, run by run
};

/// The transfer-bound default Pipeline and the sweep's best uniform
/// configuration measured again together, alternating run by run, each
/// pair of runs followed by a sweep of the link (one train per size and
/// direction) whose chunked floor that pair is judged against: on the lent
/// H200s the link's rates moved by 5-8% within a bench run, so rows and
/// floors measured tens of seconds apart disagreed by more than the 2%
/// their verdicts judge.
struct paired_transfer {
  variant_result pipeline;      ///< the default Pipeline (its first run, which adapts the layout, a warm-up)
  variant_result best_swept;    ///< the sweep's fastest uniform configuration, again
  stats chunked_floor_ms;       ///< the chunked floor of the sweep after each pair (its chunk count may move)
  stats to_best_swept;          ///< the default's time over the best swept one's, run by run
  stats to_chunked_floor;       ///< the default's time over its pair's chunked floor
  stats best_to_chunked_floor;  ///< the best swept one's time over its pair's chunked floor
};

/// Everything measured for one workload.
struct workload_result {
  workload_kind kind = workload_kind::transfer_bound;  ///< which workload
  std::size_t elements = 0;                            ///< floats in (and out)
  std::size_t bytes = 0;                               ///< bytes in (the same out)
  /// Transfer-bound only: the floor its ratios and verdicts use, from the
  /// link's peak rates measured in the same run.
  std::optional<link_floor> link;
  /// Measured floors: the whole-buffer copies and the kernel alone.
  std::vector<variant_result> floors;
  std::vector<variant_result> variants;  ///< sequential, two_stream, pipeline_default, the sweep
  std::size_t best_pipeline = 0;         ///< index in variants: the fastest Pipeline by median
  /// The best configuration measured again, alternating run by run: issued
  /// directly, with recording on, replayed as a CUDA graph, and as a bare loop.
  std::optional<variant_result> best_again;
  std::optional<variant_result> best_recorded;  ///< ... with recording::on
  std::optional<variant_result> best_graph;     ///< ... captured once, replayed (pipeline_graph)
  /// ... captured once for the device to walk (graph_scheduling::device), replayed.
  std::optional<variant_result> best_graph_device;
  std::optional<variant_result> best_loop;  ///< ... as a bare hand-written loop (chunk_loop)
  /// Host milliseconds Pipeline::capture took for the graph (capture, instantiate, upload), once.
  double graph_setup_ms = 0.0;
  double graph_device_setup_ms = 0.0;  ///< the same for the device-scheduled graph
  /// The device-scheduled replay's device time over the host-scheduled one's, run by run.
  std::optional<stats> graph_device_to_host;
  /// The measured Timeline of the last recorded run of the best configuration.
  std::optional<Timeline> best_timeline;
  /// The Program that run issued (its ops are the Timeline's spans), for
  /// predicting the same run with the simulator.
  std::optional<Program> best_program;
  /// Compute-bound only: the default Pipeline against the kernel alone,
  /// alternating run by run (what its verdict judges).
  std::optional<paired_floor> default_paired;
  /// Transfer-bound only: the default Pipeline against the sweep's best and
  /// the chunked floor, alternating run by run (what their verdicts judge).
  std::optional<paired_transfer> transfer_paired;

  /// The floor of that kind; throws overlap::error when absent.
  [[nodiscard]] const variant_result& floor(variant_kind wanted) const;
  /// The first variant of that kind, or nullptr.
  [[nodiscard]] const variant_result* find(variant_kind wanted) const noexcept;
  /// The sweep's fastest uniform configuration (by median), or nullptr when none was swept.
  [[nodiscard]] const variant_result* best_swept() const noexcept;
};

/// A Feed whose producer spends a fixed host time per frame.
struct paced_result {
  double producer_us = 0.0;  ///< the producer's host time per frame
  /// What no feed beats: the producer's time over every frame, or the
  /// GPU-bound time (the default Feed with an idle producer), the longer.
  double floor_ms = 0.0;
  /// The measured feed_paced row (verified).
  variant_result row;
  /// The feed's issuing thread: "automatic" (the default Feed's: the
  /// producer's, then the feed's own once the producer sets the pace) or "dedicated".
  std::string issuing_thread = "automatic";
};

/// The frames workload, measured.
struct feed_result {
  /// Frames per run (feed_config::frames).
  std::size_t frames = 0;
  /// Bytes per frame, in and out each (feed_config::frame_elements floats).
  std::size_t frame_bytes = 0;
  variant_result frame_copies;           ///< the floor: the copy rate at the frame size
  std::vector<variant_result> variants;  ///< ping_pong, hand_tuned_slots, feed_default, feed (per slot
                                         ///< count), feed_graphs, feed_dedicated
  std::vector<paced_result>
      paced;  ///< per producer time, the default Feed (automatic issuing thread), then a dedicated issuer
};

/// The pageable workload, measured.
struct pageable_result {
  std::size_t elements = 0;  ///< floats in (and out)
  std::size_t bytes = 0;     ///< in (the same out)
  /// Host memcpy from pageable into pinned memory, GB/s, per thread count tried.
  std::vector<std::pair<unsigned, double>> copy_gbps;
  /// The same copies with streaming stores (no read of the destination first).
  std::vector<std::pair<unsigned, double>> streaming_copy_gbps;
  double copy_floor_ms = 0.0;  ///< (bytes in + bytes out) / the fastest host copy rate of either kind
  /// pageable_naive, pageable_registered, pageable_staged, pageable_automatic,
  /// pageable_pinned, pageable_kept, pageable_kept_automatic.
  std::vector<variant_result> variants;
  /// The path pageable_memory::automatic took for one-shot vectors: "pinned", "registered" or "staged".
  std::string automatic_one_shot;
  std::string automatic_kept;  ///< the same for vectors the caller keeps registered
  /// The one-shot rows (naive, registered, staged, automatic) run
  /// alternating, each round followed by a sweep of the host copy: on the
  /// lent VMs the host's copy rate and the staged row moved together by up
  /// to 2.5x between bench calls, and a floor taken seconds before its rows
  /// judged that drift.
  struct paired_rounds {
    stats copy_floor_ms;    ///< copy_floor_ms as swept after each timed round (one copy per setting)
    stats stage_to_floor;   ///< staged / max(1.5x that round's copy floor, the pinned Pipeline), run by run
    stats naive_to_staged;  ///< naive / staged, run by run
  };
  std::optional<paired_rounds> paired;  ///< absent in results measured before the rows alternated
};

/// (c): a random DAG declared and mapped on the calling thread (CPU only).
struct dag_result {
  std::size_t nodes = 0;               ///< declared nodes
  std::size_t buffers = 0;             ///< buffers their accesses touch
  std::size_t accesses = 0;            ///< regions declared, over every node
  std::size_t explicit_edges = 0;      ///< TaskGraph::precede calls
  std::size_t edges = 0;               ///< DAG edges derived (Dependencies::edges)
  std::size_t waits = 0;               ///< event waits the schedule issues
  std::size_t cross_stream_edges = 0;  ///< edges between nodes on different streams
  std::size_t false_dependencies = 0;  ///< nodes queued behind unrelated work (the pool was full)
  std::size_t streams = 0;             ///< pool streams used (at most max_streams)
  std::uint32_t max_streams = 8;       ///< the mapping's pool (MappingOptions::max_streams)
  stats build_ms;                      ///< declaring every buffer, node and edge, per rep (host clock)
  stats schedule_ms;                   ///< graph::schedule, per rep (host clock)
  stats total_ms;                      ///< the two together, per rep
};

/// cuda::Graph, measured (issue 13).
struct graph_result {
  // (a) branches of small kernels.
  unsigned branches = 0;            ///< independent chains
  unsigned kernels_per_branch = 0;  ///< kernels in each
  unsigned blocks_per_kernel = 0;   ///< blocks of each kernel
  unsigned threads_per_block = 0;   ///< threads of each block (one element each)
  unsigned iterations = 0;          ///< LCG rounds per element per kernel
  std::size_t branch_elements = 0;  ///< uint32 per branch (one per thread)
  int sm_count = 0;                 ///< the GPU's SMs the block count was chosen from
  /// branch_alone, graph_one_stream, graph_hand_streams, graph_branches,
  /// graph_branches_replay: timed alternating run by run, every element checked.
  std::vector<variant_result> branch_rows;
  /// Most kernels running at once in the recorded Graph::run (each branch is
  /// a chain, so this counts branches running concurrently).
  unsigned concurrent_branches = 0;
  std::size_t graph_streams = 0;  ///< the branches Graph's pool streams
  std::size_t graph_waits = 0;    ///< its event waits
  double capture_ms = 0.0;        ///< host time of Graph::capture, once
  /// The recorded Graph::run (recording::on) the concurrency was counted in.
  std::optional<Timeline> timeline;
  // (b) tiny kernels.
  std::size_t tiny_kernels = 0;  ///< nodes of the tiny Graph
  std::size_t tiny_fans = 0;     ///< fans: a root, parallel leaves, a join
  std::size_t tiny_chains = 0;   ///< chains of consecutive kernels
  std::size_t tiny_edges = 0;    ///< DAG edges of the tiny Graph
  std::size_t tiny_streams = 0;  ///< its pool streams
  std::size_t tiny_waits = 0;    ///< its event waits
  double tiny_capture_ms = 0.0;  ///< host time of its Graph::capture, once
  /// tiny_direct, tiny_replay: host_issue_ms is the issue call alone (the
  /// steady clock around Graph::run or captured_graph::launch), per chunk = per node.
  std::vector<variant_result> tiny_rows;
  // (c) the CPU alone.
  std::optional<dag_result> dag;  ///< when dag_nodes > 0
};

/// One row over several GPUs.
struct devices_row {
  unsigned gpus = 1;   ///< how many of devices_config::devices it ran on (the first ones)
  variant_result row;  ///< devices_copies, devices_kernel, devices_pipeline or devices_hand_loop
};

/// One point of the hand-written loop's sweep.
struct hand_sweep_point {
  unsigned gpus = 1;            ///< GPUs it ran on
  std::size_t chunk_bytes = 0;  ///< input bytes per chunk
  unsigned streams = 0;         ///< streams per GPU
  double median_ms = 0.0;       ///< of devices_config::sweep_reps runs (host clock)
};

/// One job over 1, 2, ... GPUs.
struct devices_workload_result {
  workload_kind kind = workload_kind::transfer_bound;  ///< transfer_bound (1 round) or compute_bound
  unsigned rounds = 1;                                 ///< x -> a * x + b per element
  std::size_t elements = 0;                            ///< uint32 in (and out)
  std::size_t bytes = 0;                               ///< bytes in (the same out)
  /// Per GPU count, in order: the floor, the default Pipeline, the one
  /// planned on the model (when given), the hand loop's best.
  std::vector<devices_row> rows;
  std::vector<hand_sweep_point> sweep;  ///< every point of the hand loop's sweep
};

/// Several GPUs, measured.
struct devices_result {
  std::vector<device_info> devices;                ///< the GPUs, in devices_config's order
  std::vector<devices_workload_result> workloads;  ///< transfer-bound, then compute-bound
};

/// Everything run_benchmark measured, and the settings it measured with.
struct bench_result {
  device_info device;                       ///< where it ran
  unsigned warmup = 0;                      ///< untimed runs per row
  unsigned reps = 0;                        ///< timed runs per row
  unsigned paired_reps = 0;                 ///< timed rounds of the paired rows (bench_config::paired_reps)
  link_sweep link;                          ///< the sweep behind the link floors
  std::vector<workload_result> workloads;   ///< in bench_config's order
  std::optional<feed_result> feed;          ///< when bench_config::feed.enabled
  std::optional<pageable_result> pageable;  ///< when bench_config::pageable.enabled
  std::optional<graph_result> graph;        ///< when bench_config::graph.enabled
  std::optional<devices_result> devices;    ///< when bench_config::devices.enabled
};

/// A variant wrote a wrong element (or left one unwritten: the NaN poison).
class wrong_output : public error {
 public:
  /// `what` names the workload, the variant, the run and the element.
  wrong_output(const std::string& what, std::size_t index) : error(what), index_(index) {}
  /// The first wrong element.
  [[nodiscard]] std::size_t index() const noexcept { return index_; }

 private:
  std::size_t index_;
};

/// Called before each measured row (and before each link sweep): its 1-based
/// number, the number of steps, and what it is.
using progress_callback = std::function<void(std::size_t step, std::size_t steps, const std::string& what)>;

/// Steps run_benchmark will take for `config`: its rows and link sweeps (for progress).
[[nodiscard]] std::size_t count_steps(const bench_config& config) noexcept;

/// Runs every workload of `config` on the current device. Throws
/// wrong_output, cuda_error, pipeline_error, or invalid_input naming the bad
/// field of `config`.
[[nodiscard]] bench_result run_benchmark(const bench_config& config, const progress_callback& progress);

/// (c) alone, CUDA-free and on the calling thread: declares a random DAG of
/// `nodes` nodes (random_dag.hpp, from `seed`) into a graph::TaskGraph and
/// maps it with graph::schedule onto at most 8 streams, `warmup` untimed
/// and `reps` timed times. Throws invalid_input for 0 nodes or reps.
[[nodiscard]] dag_result measure_dag_build(std::size_t nodes, std::uint64_t seed, unsigned warmup,
                                           unsigned reps);

/// The most kernel spans of `timeline` running at any one time (a span
/// ending where another starts does not overlap it): in a recorded Graph
/// run of independent chains, how many chains ran concurrently.
[[nodiscard]] unsigned max_concurrent_kernels(const Timeline& timeline);

/// "256 KiB", "4 MiB", "1.5 MiB", "100 B".
[[nodiscard]] std::string format_bytes(std::size_t bytes);

}  // namespace overlap::bench
