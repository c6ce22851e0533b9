// Host cost of issuing chunked work: op by op through the runtime, against one
// cudaGraphLaunch of the same ops captured into a graph, by what a chunk holds
// (H2D + kernel + D2H, kernels only, copies only). It shows where the floor
// under the Pipeline's host cost per chunk is: a graph's kernel nodes cost
// next to nothing to launch, its copy nodes to and from host memory about a
// microsecond each, so a replayed chunk costs about its two copies.
//
//   build/h100/bench/graph_launch_cost --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Reported time is host time only (manual timing): the issue loop, or the
// launch; the device work is waited for outside it. Counters: us_per_chunk.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/graph.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"

namespace {

namespace cuda = overlap::cuda;
using host_clock = std::chrono::steady_clock;

// Small chunks keep each run's device time short; issuing a copy costs the
// host about the same at 1 and at 8 MiB (measured on the H100).
constexpr std::size_t chunk_elements = std::size_t{1} << 16;  // 256 KiB of floats

/// Which ops each chunk issues.
enum class op_mix : int { full = 0, kernels_only = 1, copies_only = 2 };

__global__ void affine(const float* in, float* out, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}

/// `chunks` chunks, each with its own device slot (no reuse, so no ordering
/// between chunks is needed), issued round robin over `streams` streams.
class chunk_work {
 public:
  chunk_work(std::size_t chunks, unsigned streams, op_mix mix)
      : chunks_(chunks),
        mix_(mix),
        in_(chunks * chunk_elements),
        out_(chunks * chunk_elements),
        d_in_(chunks * chunk_elements, cuda::stream_view::legacy_default()),
        d_out_(chunks * chunk_elements, cuda::stream_view::legacy_default()) {
    cuda::stream_view::legacy_default().synchronize();  // the buffers were allocated in its order
    std::mt19937 random(12345);
    std::uniform_real_distribution<float> value(-1000.0f, 1000.0f);
    for (std::size_t i = 0; i < in_.size(); ++i) in_.data()[i] = value(random);
    for (unsigned s = 0; s < streams; ++s)
      streams_.emplace_back(cuda::stream::options{cuda::stream_sync::non_blocking, 0});
  }

  /// Every chunk's ops, in chunk order.
  void issue() {
    for (std::size_t c = 0; c < chunks_; ++c) {
      const cudaStream_t s = streams_[c % streams_.size()].view().get();
      const std::size_t offset = c * chunk_elements;
      if (mix_ != op_mix::kernels_only) {
        cuda::check(cudaMemcpyAsync(d_in_.data() + offset, in_.data() + offset,
                                    chunk_elements * sizeof(float), cudaMemcpyHostToDevice, s),
                    "cudaMemcpyAsync", "H2D");
      }
      if (mix_ != op_mix::copies_only) {
        affine<<<chunk_elements / 256, 256, 0, s>>>(d_in_.data() + offset, d_out_.data() + offset,
                                                    chunk_elements);
        cuda::check(cudaGetLastError(), "affine<<<>>>");
      }
      if (mix_ != op_mix::kernels_only) {
        cuda::check(cudaMemcpyAsync(out_.data() + offset, d_out_.data() + offset,
                                    chunk_elements * sizeof(float), cudaMemcpyDeviceToHost, s),
                    "cudaMemcpyAsync", "D2H");
      }
    }
  }

  /// The same ops captured into one graph: streams 1.. fork from stream 0 and join back.
  cuda::graph_exec capture() {
    cuda::event fork(cuda::event_timing::disabled);
    std::vector<cuda::event> joins;
    for (std::size_t i = 1; i < streams_.size(); ++i) joins.emplace_back(cuda::event_timing::disabled);
    cuda::stream_capture capture(streams_[0]);
    fork.record(streams_[0]);
    for (std::size_t i = 1; i < streams_.size(); ++i) fork.wait_on(streams_[i]);
    issue();
    for (std::size_t i = 1; i < streams_.size(); ++i) {
      joins[i - 1].record(streams_[i]);
      joins[i - 1].wait_on(streams_[0]);
    }
    cuda::graph_exec exec = capture.end();
    exec.upload(streams_[0]);
    streams_[0].synchronize();
    return exec;
  }

  void synchronize() const {
    for (const cuda::stream& s : streams_) s.synchronize();
  }
  [[nodiscard]] cuda::stream_view origin() const noexcept { return streams_[0]; }

  /// Throws unless every output element of a full chunk mix is 2x + 1.
  void verify() const {
    if (mix_ != op_mix::full) return;
    for (std::size_t i = 0; i < out_.size(); ++i) {
      const float want = 2.0f * in_.data()[i] + 1.0f;
      if (out_.data()[i] != want) {
        throw std::runtime_error("output[" + std::to_string(i) + "] = " + std::to_string(out_.data()[i]) +
                                 ", expected " + std::to_string(want));
      }
    }
  }

 private:
  std::size_t chunks_;
  op_mix mix_;
  cuda::pinned_buffer<float> in_;
  cuda::pinned_buffer<float> out_;
  cuda::device_buffer<float> d_in_;
  cuda::device_buffer<float> d_out_;
  std::vector<cuda::stream> streams_;
};

double seconds_since(host_clock::time_point start) {
  return std::chrono::duration<double>(host_clock::now() - start).count();
}

bool have_device(benchmark::State& state) {
  if (cuda::device_count() > 0) return true;
  state.SkipWithError("skipped: no CUDA device");
  return false;
}

// Verifies the outputs of the last iteration and reports the host time per chunk.
void finish(benchmark::State& state, const chunk_work& work, std::size_t chunks, double issue_seconds) {
  try {
    work.verify();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["us_per_chunk"] = issue_seconds * 1e6 / (runs * static_cast<double>(chunks));
}

void direct_issue(benchmark::State& state) {
  if (!have_device(state)) return;
  const auto chunks = static_cast<std::size_t>(state.range(0));
  chunk_work work(chunks, static_cast<unsigned>(state.range(1)), static_cast<op_mix>(state.range(2)));
  double issue_seconds = 0.0;
  for (auto _ : state) {
    const auto started = host_clock::now();
    work.issue();
    const double seconds = seconds_since(started);
    state.SetIterationTime(seconds);
    issue_seconds += seconds;
    work.synchronize();
  }
  finish(state, work, chunks, issue_seconds);
}

void graph_launch(benchmark::State& state) {
  if (!have_device(state)) return;
  const auto chunks = static_cast<std::size_t>(state.range(0));
  chunk_work work(chunks, static_cast<unsigned>(state.range(1)), static_cast<op_mix>(state.range(2)));
  const cuda::graph_exec graph = work.capture();
  double issue_seconds = 0.0;
  for (auto _ : state) {
    const auto started = host_clock::now();
    graph.launch(work.origin());
    const double seconds = seconds_since(started);
    state.SetIterationTime(seconds);
    issue_seconds += seconds;
    work.synchronize();
  }
  finish(state, work, chunks, issue_seconds);
}

void arguments(benchmark::internal::Benchmark* b) {
  b->ArgNames({"chunks", "streams", "mix"});
  for (const int mix : {0, 1, 2}) {
    for (const int chunks : {16, 128}) {
      for (const int streams : {1, 4}) b->Args({chunks, streams, mix});
    }
  }
  // A fixed count: timing only the host's part would otherwise ask for
  // thousands of iterations, each waiting for the device.
  b->UseManualTime()->Iterations(40)->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(direct_issue)->Apply(arguments);
BENCHMARK(graph_launch)->Apply(arguments);

BENCHMARK_MAIN();
