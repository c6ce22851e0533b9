// overlap::cuda::Pipeline: chunked H2D -> stage -> D2H, overlapped across streams.
//
// The host input is cut into chunks; each chunk is copied into a device ring
// slot, the user's stage launches its kernel on the stream it is given, and
// the result is copied back: by default every upload on one stream, the
// kernels over three and every download on one (stream_assignment), or
// chunk c's three ops on stream c mod S. The device footprint is the ring
// (depth x chunk), not the data, so data far larger than the GPU streams
// through. The run is described as an overlap::Program first (the same value
// the simulator, checker and exporters take), then issued op by op; or
// captured once into a CUDA graph (Pipeline::capture) and replayed with one
// launch, when the same buffers are run again and again.
//
//   overlap::cuda::Pipeline<float, float> pipeline;            // automatic chunking and streams
//   pipeline.run(input, output, [](auto in, auto out, overlap::cuda::stream_view s, std::size_t) {
//     axpb<<<blocks(in.size()), 256, 0, s.get()>>>(in.data(), out.data(), in.size());
//   });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/kernel_cost.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/program_join.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/graph.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::cuda {

/// What to do with host memory that is not page-locked.
enum class pageable_memory {
  reject,             ///< throw invalid_input saying why and how to fix (the default)
  register_in_place,  ///< cudaHostRegister it for the run, then unregister
  /// Copy it through a ring of pinned slots: host threads copy chunk k + 1
  /// into its slot while chunk k's copies and stage run, and copy results
  /// out of their slots likewise (a Feed over the chunks; Pipeline::capture
  /// and recording::on refuse it). Runs at the host's copy rate, not the link's.
  stage,
  /// stage or register_in_place, whichever the device model prices lower
  /// for one run (registering and unregistering per GiB against copying
  /// through pinned slots; stage when the model has no such figures).
  /// Memory the caller keeps registered (host_registration) is pinned, so a
  /// buffer reused across runs is best registered once by the caller.
  automatic,
};

/// How a run reached the host data.
enum class host_path {
  pinned,      ///< the spans were page-locked already
  registered,  ///< pageable spans, registered in place for the run
  staged,      ///< pageable spans, copied through pinned slots
};

/// "pinned", "registered" or "staged", as reports and the Python package say it.
[[nodiscard]] std::string_view to_string(host_path path) noexcept;

/// Whether to bracket every op with timing events and return a measured Timeline.
///
/// A span runs from when its stream reached the op (for a copy: or when the
/// copy before it in its direction ended, whichever is later) to the op's
/// end. Events cannot see the 5-25 us an engine takes to start an op once it
/// is ready (measured on an H100: bench/RESULTS.md), so spans of short ops read
/// long; `overlap trace` (CUPTI) times each op on its engine.
enum class recording { off, on };

/// Whether run() checks the Program it built for races before issuing it.
enum class program_check { off, on };

#ifdef NDEBUG
inline constexpr program_check default_program_check = program_check::off;
#else
inline constexpr program_check default_program_check = program_check::on;  // debug builds check
#endif

/// Output elements produced per input elements, e.g. {1, 256} for a
/// per-256-element reduction. Every chunk keeps this ratio exactly.
struct output_ratio {
  std::size_t out = 1;  ///< output elements per `in` input elements (> 0)
  std::size_t in = 1;   ///< input elements that make `out` output elements (> 0)
};

/// How automatic chunking decides the chunk size (and, when not given, the
/// stream count).
enum class automatic_chunking {
  /// Per stage (stream_assignment::per_stage): 1/32 of the input clamped to
  /// [1 MiB, 8 MiB] and the budget, on 5 streams; round-robin: 1/64 clamped
  /// to [1 MiB, 16 MiB], on 4 streams. The default, the better of the two
  /// measured on an H100 with the built-in model (bench/RESULTS.md, issue 11).
  /// A run staged through pinned slots (no budget given): 1/32 clamped to
  /// [1 MiB, 8 MiB] on 4 streams, since each staged chunk also pays a host
  /// copy round and a thread hand-off each way (bench/RESULTS.md, issue 12
  /// part 4).
  fixed_fraction,
  /// overlap::sim::plan on a device model: the options' model (e.g. probed),
  /// else the one model_source names (the GPU's built-in model, or its
  /// cached probe). It searches uniform chunks and ramp schedules
  /// (small chunks first and last, large ones between) over up to 8
  /// streams, depth-first issue, within the budget.
  planned,
};

/// Where planned chunking gets its device model when pipeline_options::model is empty.
enum class device_model_source {
  /// The built-in model of the GPU the run is on (h100 on an H100 or H200,
  /// hyperq elsewhere): the default.
  builtin,
  /// The model `overlap probe --cache` measured on this GPU under this
  /// driver (overlap/core/model_cache.hpp): run() throws invalid_input
  /// naming the file and the command when there is none.
  cached_probe,
};

/// How a run's ops map onto its streams.
enum class stream_assignment {
  /// per_stage, unless `streams` is given, the planner decides the chunking
  /// (it searches round-robin issue) or pageable data may be staged (staged
  /// runs go through a Feed's slots): round_robin then.
  automatic,
  /// Chunk c's H2D, stage and D2H on stream c mod `streams`, chunk by chunk:
  /// the seeds' pattern.
  round_robin,
  /// Every H2D on one upload stream, the stage round-robin over
  /// `streams - 2` kernel streams (automatic: 5 streams, 3 for kernels, so
  /// that chunks' kernels still overlap), every D2H on one download stream,
  /// with events between (issue_order::stage_streams). Each copy engine then
  /// takes its copies back to back from one stream: 1-3% faster than
  /// round_robin on an H100 when the copies bound the run (bench/RESULTS.md,
  /// issue 11, part 5). Needs streams >= 3.
  per_stage,
};

/// Whether a run times the stage to learn what it costs by chunk size.
enum class stage_calibration {
  off,  ///< the stage's cost is stage_cost, or unknown (the default)
  /// Before its first run a Pipeline times the stage on the input's first
  /// chunk-sized prefixes (256 KiB up to 16 MiB, a few launches each, with
  /// the stream held so that launch cost stays out), fits a KernelCost and
  /// plans on it (as automatic_chunking::planned); later runs reuse the
  /// curve. The stage is called with chunk index 0 on that prefix. The
  /// fitted curve is in run_report::stage_cost. Skipped when stage_cost
  /// is given.
  on,
};

/// Whether a Pipeline left to its automatic layout changes it after its
/// first run, by what that run measured.
enum class layout_adaptation {
  off,  ///< every run keeps the layout the options resolve to
  /// The default. When the options leave the layout automatic (no chunk
  /// size, schedule, stream count, ring depth, device budget, planner or
  /// calibration; streams by stage; host data page-locked already, not
  /// registered or staged by the run), the first run of each input size
  /// times its ops with events and compares the stage's busy time with the
  /// busier copy direction's (run_bound). Later runs of that size then take
  /// the layout that serves that bound: copies: one kernel stream (3
  /// streams, the same chunks), as kernels spread over three cost a
  /// copy-bound run 1-2.5% on an H200 (bench/RESULTS.md, issue 38); stage:
  /// the chunks ramp from a quarter of the fixed fraction up to twice it
  /// and down again, over five kernel streams (7 streams, a ring of 7 slots
  /// of the largest chunk), so that the first upload and last download are
  /// short beside the kernels; balanced: unchanged. A run of another size
  /// learns afresh; capture() keeps the first layout.
  from_first_run,
};

/// What bounded a Pipeline's first run (layout_adaptation::from_first_run).
enum class run_bound {
  copies,    ///< the stage was busy less than half as long as the busier copy direction
  balanced,  ///< neither: the stage was busy half as long as the copies or more, but not longer
  stage,     ///< the stage was busy longer than either copy direction
};

/// "copies", "balanced" or "stage".
[[nodiscard]] std::string_view to_string(run_bound bound) noexcept;

/// How a Pipeline cuts and schedules the work. Empty optionals are chosen
/// automatically.
struct pipeline_options {
  /// Input bytes per chunk: a positive multiple of the input element size.
  /// Automatic: see `chunking`.
  std::optional<std::size_t> chunk_bytes;
  /// Input bytes of each chunk, when they should vary along the run (e.g.
  /// small first and last chunks, so the first download starts early and
  /// the last one ends soon after the last upload): every entry > 0 and a
  /// multiple of the input element size (and of ratio.in elements, except
  /// the last), adding up to the input's bytes. Not with chunk_bytes. Each
  /// device slot is sized for the largest chunk.
  std::vector<std::size_t> chunk_schedule;
  /// Streams the chunks round-robin over (>= 1), or under per_stage the
  /// upload, kernel and download streams together (>= 3). Automatic: 5 per
  /// stage; 4 round-robin (enough for H2D, kernel and D2H of three chunks at
  /// once), or the planner's choice.
  std::optional<unsigned> streams;
  /// How the ops map onto the streams.
  stream_assignment assignment = stream_assignment::automatic;
  /// How automatic chunking decides (ignored when chunk_bytes is given).
  automatic_chunking chunking = automatic_chunking::fixed_fraction;
  /// The device model automatic chunking plans on (e.g. a file from
  /// `overlap probe`, DeviceModel::load). Empty: see model_source.
  std::optional<DeviceModel> model;
  /// Where the model comes from when `model` is empty.
  device_model_source model_source = device_model_source::builtin;
  /// What the stage costs by chunk size, when known (a fitted KernelCost);
  /// the planner then weighs kernels against copies. Empty: copies only,
  /// or what `calibrate` measures.
  std::optional<KernelCost> stage_cost;
  /// Time the stage and plan on what it costs (see stage_calibration).
  stage_calibration calibrate = stage_calibration::off;
  /// Device chunk slots in the ring (>= streams). Automatic: one per stream.
  std::optional<unsigned> ring_depth;
  /// Upper bound on the ring's device bytes; chunking shrinks to fit.
  std::optional<std::size_t> device_budget_bytes;
  /// Output elements per input elements, kept by every chunk.
  output_ratio ratio;
  /// What to do when the input or output is pageable host memory.
  pageable_memory pageable = pageable_memory::reject;
  /// Time every op with events and return run_report::timeline.
  recording record = recording::off;
  /// Race-check the Program before issuing it (overlap::check); on in debug builds.
  program_check check = default_program_check;
  /// Whether the automatic layout changes after the first run (see layout_adaptation).
  layout_adaptation adapt = layout_adaptation::from_first_run;
  /// The GPUs to spread the run over: CUDA device ordinals, each at most
  /// once (all_devices() names every visible one). Empty: the current device
  /// alone. With two or more, the input is cut into one contiguous part per
  /// GPU, in proportion to each GPU's both-ways link rate when `model` has
  /// host links (`overlap probe --all-devices`), else evenly; each part runs
  /// as its own pipeline on its GPU (streams, ring and chunking per GPU;
  /// device_budget_bytes holds per GPU), the first part on the calling thread
  /// and each other part on a thread the Pipeline keeps between runs, so the
  /// stage is called from several threads at once, each time on a stream of
  /// the chunk's GPU (stream_view::device()) with that GPU current. Chunks
  /// are numbered across the whole input, in order. Not with chunk_schedule,
  /// stage calibration or capture() (one GPU only).
  std::vector<int> devices;
};

/// Every visible GPU's ordinal, 0 .. cudaGetDeviceCount() - 1, for
/// pipeline_options::devices; throws cuda_error.
[[nodiscard]] std::vector<int> all_devices();

/// What a run did.
struct run_report {
  Program program;                   ///< the ops issued, in issue order
  std::optional<Timeline> timeline;  ///< measured with events, when recording::on
  std::size_t chunks = 0;            ///< chunks the input was cut into
  /// Input bytes per chunk (the last may be smaller); under a schedule, the largest.
  std::size_t chunk_bytes = 0;
  /// Input bytes of each chunk when they vary (a schedule); empty when uniform.
  std::vector<std::size_t> chunk_schedule;
  /// The stage's fitted cost, when calibrated (stage_calibration::on).
  std::optional<KernelFit> stage_cost;
  unsigned streams = 0;  ///< streams the run used (see stream_assignment)
  /// How the ops went onto the streams: round_robin or per_stage.
  stream_assignment assignment = stream_assignment::round_robin;
  unsigned ring_depth = 0;       ///< device chunk slots in the ring
  std::size_t device_bytes = 0;  ///< device memory held by the ring
  double host_issue_ms = 0.0;    ///< host time spent issuing every op
  /// What bounded the first run of this size, once a Pipeline that adapts
  /// its layout has measured it (layout_adaptation::from_first_run): set
  /// from that first run's report on, and the layout above is the one the
  /// bound chose from the second run on. Empty when the layout does not adapt.
  std::optional<run_bound> bound;
  host_path host = host_path::pinned;  ///< how the host data was reached
  /// Per GPU of a run over several (pipeline_options::devices): the GPU,
  /// its part's first chunk, and that part's own report (whose program
  /// and timeline are the part's alone). Empty for a run on one GPU. The
  /// fields above then sum (chunks, device_bytes) or take the largest
  /// (chunk_bytes, streams, ring_depth, host_issue_ms) over the parts, and
  /// program and timeline join the parts' (streams "gpuN.StreamK" on GPU N).
  struct device_part {
    int device = 0;                            ///< CUDA ordinal
    std::size_t first_chunk = 0;               ///< index of its first chunk in the whole run
    std::size_t first_element = 0;             ///< its first input element
    std::shared_ptr<const run_report> report;  ///< that GPU's run
  };
  std::vector<device_part> parts;  ///< one per GPU that had input
};

/// A chunk failed: the chunk, and whether every earlier chunk's output is complete.
class pipeline_error : public error {
 public:
  /// `what` is the message; `chunk` the failed chunk's index; `earlier_chunks_complete` whether the
  /// output of every chunk before it is in place.
  pipeline_error(const std::string& what, std::size_t chunk, bool earlier_chunks_complete)
      : error(what), chunk_(chunk), earlier_complete_(earlier_chunks_complete) {}
  /// Index of the chunk that failed.
  [[nodiscard]] std::size_t chunk() const noexcept { return chunk_; }
  /// True when every chunk before chunk() has its output in place.
  [[nodiscard]] bool earlier_chunks_complete() const noexcept { return earlier_complete_; }

 private:
  std::size_t chunk_;
  bool earlier_complete_;
};

namespace detail {

/// The element-type-free view of one run.
struct erased_run {
  const void* input = nullptr;
  std::size_t input_elements = 0;
  std::size_t input_element_bytes = 1;
  void* output = nullptr;
  std::size_t output_elements = 0;
  std::size_t output_element_bytes = 1;
};

/// Launches the stage on one chunk: device input, its elements, device
/// output, its elements, the stream, the chunk index.
using erased_stage =
    std::function<void(const void*, std::size_t, void*, std::size_t, stream_view, std::size_t)>;

/// Chunking decided from the options and sizes.
struct plan {
  std::size_t chunks = 0;
  std::size_t chunk_input_elements = 0;   ///< per chunk; under a schedule, the largest chunk's
  std::size_t chunk_output_elements = 0;  ///< per chunk; under a schedule, the largest chunk's
  /// Input elements of each chunk when they vary; empty when uniform.
  std::vector<std::size_t> schedule;
  std::size_t output_elements = 0;  ///< output elements the run writes (input x ratio)
  unsigned streams = 0;
  unsigned ring_depth = 0;
  /// depth_first (round-robin streams) or stage_streams (per_stage).
  issue_order order = issue_order::depth_first;
};

/// Throws invalid_input naming "input" or "output" when its span is null
/// with a nonzero size (part of make_plan; a run that reuses an earlier
/// run's plan still checks its own spans).
void require_non_null(const erased_run& run);

/// The policy a run of `pageable_bytes` of pageable host data follows:
/// `policy` itself unless it is automatic, which resolves to stage or
/// register_in_place by `model`'s figures (stage when it has none). No CUDA call.
[[nodiscard]] pageable_memory resolve_pageable(pageable_memory policy, std::size_t pageable_bytes,
                                               const DeviceModel* model);

/// Host threads that copy each direction of a staged run: half of the
/// model's fastest host_staging point (the two directions copy at once),
/// else of the cores, at least 1 and at most 8.
[[nodiscard]] unsigned staging_threads(const DeviceModel* model);

/// The chunk size of a staged run (host_path::staged) under the fixed
/// fraction: 1/32 of the input clamped to [1 MiB, 8 MiB], whole elements
/// and whole outputs; empty when the options size the chunks otherwise
/// (chunk_bytes, a schedule, the planner) or give a device budget. No CUDA call.
[[nodiscard]] std::optional<std::size_t> staged_chunk_bytes(const erased_run& run,
                                                            const pipeline_options& options);

/// Whether make_plan may run the planner (deferred: check the arguments
/// with the fixed fraction first, and plan later, once).
enum class chunk_planning { allowed, deferred };

/// Checks every argument and decides the chunking, with no CUDA call;
/// throws invalid_input naming the argument. Planned automatic chunking uses
/// options.model, else `detected` (the GPU's built-in model), else falls
/// back to the fixed fraction; it prices the stage by options.stage_cost,
/// else by `calibrated_stage` (a fit from stage_calibration::on).
[[nodiscard]] plan make_plan(const erased_run& run, const pipeline_options& options,
                             const DeviceModel* detected = nullptr,
                             chunk_planning planning = chunk_planning::allowed,
                             const KernelCost* calibrated_stage = nullptr);

/// Whether the planner decides the chunking: no chunk size or schedule is
/// given, and chunking is planned or the stage is calibrated.
[[nodiscard]] inline bool plans_chunking(const pipeline_options& options) noexcept {
  return !options.chunk_bytes && options.chunk_schedule.empty() &&
         (options.chunking == automatic_chunking::planned || options.calibrate == stage_calibration::on);
}

/// The model make_plan needs from the device when the planner decides the
/// chunking and the options give no model: the built-in one or the cached
/// probe (options.model_source); nullptr otherwise (no CUDA call then).
[[nodiscard]] inline const DeviceModel* chunking_model(const pipeline_options& options) {
  if (!plans_chunking(options) || options.model) return nullptr;
  return options.model_source == device_model_source::cached_probe ? &cached_model_of_current_device()
                                                                   : &builtin_model_of_current_device();
}

/// Whether a run under `options`, whose plan resolved to `p` on `path`,
/// adapts its layout after its first run (layout_adaptation::from_first_run). No CUDA call.
[[nodiscard]] bool adapts_layout(const pipeline_options& options, const plan& p, host_path path) noexcept;

/// The bound of a run whose stage was busy `stage_ms` and whose copies
/// `h2d_ms` and `d2h_ms` (each the length of the union of its spans).
[[nodiscard]] run_bound bound_of(double stage_ms, double h2d_ms, double d2h_ms) noexcept;

/// The options of the layout that serves `bound`, for a run whose first
/// plan was `first` (its uniform chunk) over `input_bytes` of input
/// elements of `element_bytes` bytes: `options` with the streams (and for
/// a stage-bound run the ramp schedule) filled in. No CUDA call.
[[nodiscard]] pipeline_options adapted_options(const pipeline_options& options, run_bound bound,
                                               const plan& first, std::size_t input_elements,
                                               std::size_t element_bytes);

struct pipeline_resources;
struct graph_state;
class parked_thread;

/// Streams, events and the device ring, kept between runs.
class pipeline_engine {
 public:
  pipeline_engine();
  ~pipeline_engine();
  pipeline_engine(const pipeline_engine&) = delete;
  pipeline_engine& operator=(const pipeline_engine&) = delete;
  pipeline_engine(pipeline_engine&& other) noexcept;
  pipeline_engine& operator=(pipeline_engine&& other) noexcept;

  run_report run(const erased_run& run, const pipeline_options& options, const erased_stage& stage);

 private:
  /// One GPU's run (options.devices empty or naming one GPU).
  run_report run_here(const erased_run& run, const pipeline_options& options, const erased_stage& stage);
  /// The chunks this engine's run of `run` will cut (its settled plan, kept for that run).
  std::size_t settled_chunks(const erased_run& run, const pipeline_options& options,
                             const erased_stage& stage);
  /// A run over several GPUs (src/cuda/pipeline_devices.cpp).
  run_report run_on_devices(const erased_run& run, const pipeline_options& options,
                            const erased_stage& stage);

  std::unique_ptr<pipeline_resources> resources_;
  /// Per GPU of runs over several: its engine, kept between runs.
  std::vector<std::pair<int, std::unique_ptr<pipeline_engine>>> per_device_;
  /// The threads that run the parts after the first (the caller's thread
  /// runs the first), kept between runs: starting and ending a thread that
  /// used CUDA costs tens of microseconds a run.
  std::vector<std::unique_ptr<parked_thread>> part_threads_;
  /// The last run over several GPUs: its parts (GPU, first element,
  /// elements, chunks) and their joined Program, reused while the split is
  /// the same, so that a repeated run does not join the parts again after
  /// its GPUs are done.
  std::vector<std::size_t> joined_key_;
  Program joined_program_;
  std::vector<JoinedIds> joined_ids_;  ///< where each part's ops and streams are in it
};

}  // namespace detail

/// How Pipeline::capture makes its graph.
struct capture_options {
  /// Who walks the graph at each replay. graph_scheduling::device cuts a
  /// replay's host cost to about one kernel launch whatever the chunk count,
  /// for up to a few percent more device time on a compute-bound pipeline
  /// and far more on a copy-bound one (graph_scheduling says how much): for
  /// when the host's time is scarcer than the GPU's. The input and output
  /// must then be pinned (pinned_buffer, or registered in place).
  graph_scheduling scheduling = graph_scheduling::host;
};

/// What one replay of a captured Pipeline did.
struct replay_report {
  std::size_t chunks = 0;  ///< chunks the replay ran (those of the capture)
  /// Host time of the one cudaGraphLaunch that issued every op of every chunk.
  double host_launch_ms = 0.0;
};

/// A Pipeline run captured once into a CUDA graph and replayed with one
/// cudaGraphLaunch, so a run's host cost no longer grows by three runtime
/// calls per chunk. A replay moves the same host buffers through the same
/// kernels with the same arguments as the capture did: refill the input in
/// place and replay. The stage is called only while capturing. The graph
/// owns its streams, device ring and in-place registrations; the input and
/// output buffers must outlive it. Made by Pipeline::capture.
class pipeline_graph {
 public:
  /// Takes ownership of a capture's state; used by Pipeline::capture, not by callers.
  explicit pipeline_graph(std::unique_ptr<detail::graph_state> state) noexcept;
  ~pipeline_graph();
  pipeline_graph(const pipeline_graph&) = delete;
  pipeline_graph& operator=(const pipeline_graph&) = delete;
  /// Takes over `other`'s graph and resources; `other` is left moved-from (replay() throws).
  pipeline_graph(pipeline_graph&& other) noexcept;
  /// Frees this graph's resources and takes over `other`'s; `other` is left moved-from.
  pipeline_graph& operator=(pipeline_graph&& other) noexcept;

  /// Runs every chunk again and returns when all is done. Throws cuda_error
  /// when the launch fails or the device fails while running the graph, and
  /// overlap::error on a moved-from graph.
  replay_report replay();

  /// The capture: its Program, chunking and ring; host_issue_ms is the host
  /// time spent issuing the ops into the capture.
  [[nodiscard]] const run_report& captured() const noexcept;
  /// Host milliseconds spent ending the capture and instantiating the graph.
  [[nodiscard]] double instantiate_ms() const noexcept;
  /// Who walks the graph at each replay (capture_options::scheduling).
  [[nodiscard]] graph_scheduling scheduling() const noexcept;
  // captured(), instantiate_ms() and scheduling() must not be called on a moved-from graph.

 private:
  std::unique_ptr<detail::graph_state> state_;
};

namespace detail {
/// Captures one run into a graph; validates like pipeline_engine::run, and
/// rejects recording::on (timing events are not captured).
[[nodiscard]] pipeline_graph capture_pipeline(const erased_run& run, const pipeline_options& options,
                                              const erased_stage& stage, const capture_options& how);
}  // namespace detail

/// Runs a stage over host data in overlapped chunks. Reuse one Pipeline for
/// repeated runs: its streams and device ring are kept.
template <typename In, typename Out = In>
class Pipeline {
 public:
  /// The user's stage: launch the kernel for one chunk on `stream`.
  /// `chunk_in` and `chunk_out` are device memory.
  using stage_function = std::function<void(std::span<const In> chunk_in, std::span<Out> chunk_out,
                                            stream_view stream, std::size_t chunk)>;

  /// Keeps `options`, checked by each run; makes no CUDA call (streams and ring come with the first run).
  explicit Pipeline(pipeline_options options = {}) : options_(std::move(options)) {}

  /// Moves every chunk of `input` to the device, runs `stage`, moves the
  /// result into `output`, and returns when all is done. Throws
  /// invalid_input for bad arguments (before any CUDA call) and
  /// pipeline_error naming the chunk for a stage or CUDA failure.
  run_report run(std::span<const In> input, std::span<Out> output, const stage_function& stage) {
    return engine_.run(erase(input, output), options_, erase(stage));
  }

  /// Captures the run that run() would issue into a CUDA graph, calling
  /// `stage` once per chunk, and returns it without running it: replay()
  /// runs it. The stage must only launch kernels (or other capturable work)
  /// on the stream it is given. Throws invalid_input like run() (and for
  /// recording::on), and pipeline_error naming the chunk whose ops could not
  /// be captured, or saying why the graph could not be instantiated for
  /// `how.scheduling`; nothing runs on the device while capturing.
  [[nodiscard]] pipeline_graph capture(std::span<const In> input, std::span<Out> output,
                                       const stage_function& stage, const capture_options& how = {}) const {
    return detail::capture_pipeline(erase(input, output), options_, erase(stage), how);
  }

  /// The options the Pipeline was made with, as given (automatic fields unresolved).
  [[nodiscard]] const pipeline_options& options() const noexcept { return options_; }

 private:
  static detail::erased_run erase(std::span<const In> input, std::span<Out> output) noexcept {
    return {input.data(), input.size(), sizeof(In), output.data(), output.size(), sizeof(Out)};
  }
  static detail::erased_stage erase(const stage_function& stage) {
    return [&stage](const void* in, std::size_t in_count, void* out, std::size_t out_count,
                    stream_view stream, std::size_t chunk) {
      stage(std::span<const In>(static_cast<const In*>(in), in_count),
            std::span<Out>(static_cast<Out*>(out), out_count), stream, chunk);
    };
  }

  pipeline_options options_;
  detail::pipeline_engine engine_;
};

}  // namespace overlap::cuda
