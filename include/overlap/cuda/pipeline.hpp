// overlap::cuda::Pipeline: chunked H2D -> stage -> D2H, overlapped across streams.
//
// The host input is cut into chunks; chunk c is copied into a device ring
// slot on stream c mod S, the user's stage launches its kernel on that
// stream, and the result is copied back. The device footprint is the ring
// (depth x chunk), not the data, so data far larger than the GPU streams
// through. The run is described as an overlap::Program first (the same value
// the simulator, checker and exporters take), then issued op by op.
//
//   overlap::cuda::Pipeline<float, float> pipeline;            // automatic chunking, 4 streams
//   pipeline.run(input, output, [](auto in, auto out, overlap::cuda::stream_view s, std::size_t) {
//     axpb<<<blocks(in.size()), 256, 0, s.get()>>>(in.data(), out.data(), in.size());
//   });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "overlap/core/error.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::cuda {

/// What to do with host memory that is not page-locked.
enum class pageable_memory {
  reject,             ///< throw invalid_input saying why and how to fix (the default)
  register_in_place,  ///< cudaHostRegister it for the run, then unregister
};

/// Whether to bracket every op with timing events and return a measured Timeline.
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
  std::size_t out = 1;
  std::size_t in = 1;
};

/// How a Pipeline cuts and schedules the work. Empty optionals are chosen
/// automatically.
struct pipeline_options {
  /// Input bytes per chunk: a positive multiple of the input element size.
  /// Automatic: 1/64 of the input, clamped to [1 MiB, 16 MiB] and to the budget.
  std::optional<std::size_t> chunk_bytes;
  /// Streams the chunks round-robin over (>= 1). Automatic: 4, enough for
  /// H2D, kernel and D2H of three chunks to run at once.
  std::optional<unsigned> streams;
  /// Device chunk slots in the ring (>= streams). Automatic: one per stream.
  std::optional<unsigned> ring_depth;
  /// Upper bound on the ring's device bytes; chunking shrinks to fit.
  std::optional<std::size_t> device_budget_bytes;
  output_ratio ratio;
  pageable_memory pageable = pageable_memory::reject;
  recording record = recording::off;
  /// Race-check the Program before issuing it (overlap::check); on in debug builds.
  program_check check = default_program_check;
};

/// What a run did.
struct run_report {
  Program program;                   ///< the ops issued, in issue order
  std::optional<Timeline> timeline;  ///< measured with events, when recording::on
  std::size_t chunks = 0;
  std::size_t chunk_bytes = 0;  ///< input bytes per chunk (the last may be smaller)
  unsigned streams = 0;
  unsigned ring_depth = 0;
  std::size_t device_bytes = 0;  ///< device memory held by the ring
  double host_issue_ms = 0.0;    ///< host time spent issuing every op
};

/// A chunk failed: the chunk, and whether every earlier chunk's output is complete.
class pipeline_error : public error {
 public:
  pipeline_error(const std::string& what, std::size_t chunk, bool earlier_chunks_complete)
      : error(what), chunk_(chunk), earlier_complete_(earlier_chunks_complete) {}
  [[nodiscard]] std::size_t chunk() const noexcept { return chunk_; }
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
  std::size_t chunk_input_elements = 0;
  std::size_t chunk_output_elements = 0;
  std::size_t output_elements = 0;  ///< output elements the run writes (input x ratio)
  unsigned streams = 0;
  unsigned ring_depth = 0;
};

/// Checks every argument and decides the chunking, with no CUDA call;
/// throws invalid_input naming the argument.
[[nodiscard]] plan make_plan(const erased_run& run, const pipeline_options& options);

/// Streams, events and the device ring, kept between runs.
class pipeline_engine {
 public:
  pipeline_engine();
  ~pipeline_engine();
  pipeline_engine(const pipeline_engine&) = delete;
  pipeline_engine& operator=(const pipeline_engine&) = delete;
  pipeline_engine(pipeline_engine&&) noexcept;
  pipeline_engine& operator=(pipeline_engine&&) noexcept;

  run_report run(const erased_run& run, const pipeline_options& options, const erased_stage& stage);

 private:
  struct resources;
  std::unique_ptr<resources> resources_;
};

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

  explicit Pipeline(pipeline_options options = {}) : options_(options) {}

  /// Moves every chunk of `input` to the device, runs `stage`, moves the
  /// result into `output`, and returns when all is done. Throws
  /// invalid_input for bad arguments (before any CUDA call) and
  /// pipeline_error naming the chunk for a stage or CUDA failure.
  run_report run(std::span<const In> input, std::span<Out> output, const stage_function& stage) {
    const detail::erased_run erased{input.data(),  input.size(),  sizeof(In),
                                    output.data(), output.size(), sizeof(Out)};
    return engine_.run(erased, options_,
                       [&stage](const void* in, std::size_t in_count, void* out, std::size_t out_count,
                                stream_view stream, std::size_t chunk) {
                         stage(std::span<const In>(static_cast<const In*>(in), in_count),
                               std::span<Out>(static_cast<Out*>(out), out_count), stream, chunk);
                       });
  }

  [[nodiscard]] const pipeline_options& options() const noexcept { return options_; }

 private:
  pipeline_options options_;
  detail::pipeline_engine engine_;
};

}  // namespace overlap::cuda
