// One workload's buffers, input, reference and measurements: the floors,
// the baselines, the Pipeline sweep and the best configuration again. Its
// member functions are defined by part: workload_bench.cpp (buffers, the
// timed and checked runs), floors.cpp, baselines.cpp, pipeline_sweep.cpp,
// best_again.cpp, paired_floor.cpp, paired_transfer.cpp. Private to src/bench.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"
#include "row_samples.hpp"
#include "run_clock.hpp"
#include "workload.hpp"

namespace overlap::bench::detail {

/// Measures one workload of a bench_config on the current device.
class workload_bench {
 public:
  /// Called with a row's name before the row is measured (progress).
  using announce_function = std::function<void(const std::string&)>;

  /// Allocates the buffers and makes the input and its reference; `config`,
  /// `clock` and `announce` must outlive this object.
  workload_bench(const workload_config& workload, const bench_config& config, run_clock& clock,
                 const announce_function& announce);

  /// Measures everything, in order: floors, baselines, the sweep, the best again.
  [[nodiscard]] workload_result run();

 private:
  using pipeline = cuda::Pipeline<float, float>;

  /// How a variant's copies are named in an error.
  struct copy_labels {
    const char* h2d;
    const char* d2h;
  };

  // --- workload_bench.cpp: copies, the output's NaN fill and check, timed runs

  static void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cuda::stream_view s,
                   const char* what);
  void launch(const float* in, float* out, std::size_t n, cudaStream_t stream) const;
  /// Where a chunk's H2D, kernel and D2H go, and the events that hand the
  /// chunk from one stream to the next (used only where the streams differ).
  struct chunk_streams {
    cuda::stream_view up;
    cuda::stream_view kernel;
    cuda::stream_view down;
    cuda::event* uploaded = nullptr;
    cuda::event* computed = nullptr;
  };
  void issue_chunk(std::size_t offset, std::size_t count, const chunk_streams& on, copy_labels labels);
  void issue_chunk(std::size_t offset, std::size_t count, cuda::stream_view s, copy_labels labels) {
    issue_chunk(offset, count, chunk_streams{s, s, s}, labels);
  }
  void evict_from_host_caches(float* host, std::size_t bytes);
  void poison();
  void verify(const std::string& variant, unsigned run) const;
  std::vector<variant_result> measure(std::vector<row_samples> rows, const std::vector<runner>& runners,
                                      bool check_output,
                                      const std::vector<std::function<void()>>& untimed_after = {}) {
    return measure_rounds(config_.reps, std::move(rows), runners, check_output, untimed_after);
  }
  std::vector<variant_result> measure_rounds(unsigned reps, std::vector<row_samples> rows,
                                             const std::vector<runner>& runners, bool check_output,
                                             const std::vector<std::function<void()>>& untimed_after);
  variant_result measure_one(variant_kind kind, std::string name, const runner& run, bool check_output);
  [[nodiscard]] run_info whole(unsigned streams = 1, std::size_t chunks = 1) const;
  [[nodiscard]] std::span<const float> input() const noexcept { return {in_.data(), elements_}; }

  // --- floors.cpp, baselines.cpp, pipeline_sweep.cpp, best_again.cpp

  void measure_floors(workload_result& result);
  void measure_baselines(workload_result& result);
  static run_info info_of(const cuda::run_report& report);
  /// The options that run a swept row's layout again (its chunk size,
  /// stream count and assignment); the defaults for the default's row.
  static cuda::pipeline_options options_of(const variant_result& row);
  /// Uploads the real input (untimed, now) and returns a runner that runs
  /// the kernel alone over the whole buffer on `s`.
  runner kernel_alone(cuda::stream& s, const char* what);
  runner pipeline_runner(pipeline& p);
  variant_result measure_pipeline(variant_kind kind, std::string name, const cuda::pipeline_options& options);
  void measure_pipelines(workload_result& result);
  /// The two events a per-stage chunk_loop hands every chunk on with.
  struct hand_over_events {
    cuda::event uploaded{cuda::event_timing::disabled};
    cuda::event computed{cuda::event_timing::disabled};
  };
  /// Input bytes of each chunk, in order (a uniform chunking, or a schedule).
  run_info chunk_loop(std::vector<cuda::stream>& streams, const std::vector<std::uint64_t>& chunk_bytes,
                      bool per_stage, hand_over_events& hand_over);
  void measure_best_again(workload_result& result);
  // --- paired_floor.cpp, paired_transfer.cpp
  void measure_default_paired(workload_result& result);
  void measure_transfer_paired(workload_result& result);

  const workload_config& workload_;
  const workload_definition& definition_;
  const bench_config& config_;
  run_clock& clock_;
  const announce_function& announce_;
  std::size_t elements_;
  std::size_t bytes_;
  cuda::pinned_buffer<float> in_;
  cuda::pinned_buffer<float> out_;
  float* out_on_device_ = nullptr;  // out_ as the device addresses it
  std::vector<float> reference_;    // the host's result for every element
  cuda::stream streams_[2] = {cuda::stream(cuda::stream::options{cuda::stream_sync::non_blocking, 0}),
                              cuda::stream(cuda::stream::options{cuda::stream_sync::non_blocking, 0})};
  cuda::device_buffer<float> d_in_;
  cuda::device_buffer<float> d_out_;
  pipeline::stage_function stage_ = [this](std::span<const float> in, std::span<float> out,
                                           cuda::stream_view stream, std::size_t) {
    launch(in.data(), out.data(), in.size(), stream.get());
  };
};

}  // namespace overlap::bench::detail
