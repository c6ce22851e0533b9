// The benchmark driver: buffers, the variants and floors, their timing and
// the check of every output element. Host code only (the kernels are in
// kernels.cu); a .cu file so the workload library is one CUDA target.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <thread>
#include <utility>

#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"
#include "workloads/driver.hpp"
#include "workloads/kernels.hpp"

namespace overlap::bench {

namespace {

using host_clock = std::chrono::steady_clock;

double milliseconds_since(host_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(host_clock::now() - start).count();
}

// ---------------------------------------------------------------------------
// Host work over large buffers (random fill, reference, checks), spread over
// the cores: checking 64 Mi floats after every run must not dominate the bench.

unsigned host_threads() {
  return std::clamp(std::thread::hardware_concurrency(), 1U, 16U);
}

// Calls f(begin, end) on disjoint ranges that cover [0, n); f must not throw.
template <typename F>
void parallel_for(std::size_t n, const F& f) {
  const unsigned threads = n < (std::size_t{1} << 16) ? 1 : host_threads();
  if (threads == 1) {
    f(std::size_t{0}, n);
    return;
  }
  const std::size_t per_thread = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(n, t * per_thread);
    const std::size_t end = std::min(n, begin + per_thread);
    if (begin < end) pool.emplace_back([&f, begin, end] { f(begin, end); });
  }
  for (std::thread& thread : pool) thread.join();
}

// splitmix64: element i's value depends on (seed, i) alone, so threads agree.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform floats in [low, high): random data, not zeros, so a kernel that
// skips elements or a copy that moves the wrong bytes cannot pass.
void fill_random(std::span<float> data, std::uint64_t seed, float low, float high) {
  parallel_for(data.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const float unit = static_cast<float>(mix(seed + i) >> 40) * 0x1p-24F;  // [0, 1)
      data[i] = low + (high - low) * unit;
    }
  });
}

std::string number(double value, const char* format = "%.9g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// ---------------------------------------------------------------------------
// Timing: every run, of every variant and floor, is bracketed the same way.

/// What a runner reports about one run.
struct run_info {
  std::optional<double> host_issue_ms;  // Pipeline's run_report.host_issue_ms
  std::size_t chunks = 1;
  std::size_t chunk_bytes = 0;
  unsigned streams = 1;
  std::size_t device_bytes = 0;
};

/// Issues one complete run, with `start` already recorded, and returns once
/// all its work has completed (the host has synchronized with it).
using runner = std::function<run_info(const cuda::event& start)>;

/// A timing stream and two events. The start event is recorded before the
/// host issues anything, the end event after the host has seen the run
/// complete: what a caller of a synchronous run waits, on the GPU's clock.
class run_clock {
 public:
  struct sample {
    double device_ms = 0.0;
    double host_ms = 0.0;
    run_info info;
  };

  sample time(const runner& run) {
    const auto host_start = host_clock::now();
    start_.record(stream_);
    run_info info = run(start_);
    end_.record(stream_);
    end_.synchronize();
    const double host_ms = milliseconds_since(host_start);
    return {end_.elapsed_since(start_), host_ms, info};
  }

 private:
  cuda::stream stream_{cuda::stream::options{cuda::stream_sync::non_blocking, 0}};
  cuda::event start_{cuda::event_timing::enabled};
  cuda::event end_{cuda::event_timing::enabled};
};

/// The samples of one variant, turned into a variant_result at the end.
struct accumulator {
  variant_result result;
  std::vector<double> device_ms;
  std::vector<double> host_ms;
  std::vector<double> issue_ms;
  std::vector<double> issue_per_chunk_us;

  void add(const run_clock::sample& s) {
    device_ms.push_back(s.device_ms);
    host_ms.push_back(s.host_ms);
    if (s.info.host_issue_ms) {
      issue_ms.push_back(*s.info.host_issue_ms);
      issue_per_chunk_us.push_back(*s.info.host_issue_ms * 1000.0 / static_cast<double>(s.info.chunks));
    }
  }

  // Shape fields come from the run itself (Pipeline decides its own chunking).
  void describe(const run_info& info) {
    result.chunks = info.chunks;
    result.chunk_bytes = info.chunk_bytes;
    result.streams = info.streams;
    result.device_bytes = info.device_bytes;
  }

  variant_result finish() && {
    result.device_ms = summarize(std::move(device_ms));
    result.host_ms = summarize(std::move(host_ms));
    if (!issue_ms.empty()) {
      result.host_issue_ms = summarize(std::move(issue_ms));
      result.host_issue_per_chunk_us = summarize(std::move(issue_per_chunk_us));
    }
    return std::move(result);
  }
};

std::string pipeline_name(std::size_t chunk_bytes, unsigned streams) {
  return "pipeline chunk " + format_bytes(chunk_bytes) + " x " + std::to_string(streams) + " streams";
}

// ---------------------------------------------------------------------------

/// One workload's buffers, reference and measurements.
class workload_bench {
 public:
  workload_bench(const workload_config& workload, const bench_config& config, run_clock& clock,
                 const std::function<void(const std::string&)>& announce)
      : workload_(workload),
        config_(config),
        clock_(clock),
        announce_(announce),
        elements_(workload.elements),
        bytes_(workload.elements * sizeof(float)),
        in_(workload.elements),
        out_(workload.elements),
        d_in_(workload.elements, streams_[0]),
        d_out_(workload.elements, streams_[0]) {
    streams_[0].synchronize();  // the device buffers were allocated in stream order
    void* mapped = nullptr;
    cuda::check(cudaHostGetDevicePointer(&mapped, out_.data(), 0), "cudaHostGetDevicePointer",
                "the output buffer, to poison it from the device");
    out_on_device_ = static_cast<float*>(mapped);
    if (workload.kind == workload_kind::transfer_bound) {
      fill_random(in_.span(), config.seed, -1000.0F, 1000.0F);
    } else {
      // The seed's range (its input is 0, 1, ..., N-1), drawn at random.
      // Most values are past 105615, where sinf takes its slow argument
      // reduction: that is what makes this kernel compute-bound (HARDWARE.md's
      // 6 ms); small inputs would make it 9x faster and copy-bound.
      fill_random(in_.span(), config.seed ^ 0x5eedULL, 0.0F, static_cast<float>(elements_));
      reference_.resize(elements_);
      parallel_for(elements_, [this](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) reference_[i] = sincos_reference(in_[i]);
      });
    }
    evict_from_host_caches(in_.data(), bytes_);
    poison();
    if (std::isnan(out_[0]) && std::isnan(out_[elements_ / 2]) && std::isnan(out_[elements_ - 1])) return;
    throw error("bench: the NaN fill of the output from the device left numbers in it");
  }

  workload_result run() {
    workload_result result;
    result.kind = workload_.kind;
    result.elements = elements_;
    result.bytes = bytes_;
    measure_floors(result);
    measure_baselines(result);
    measure_pipelines(result);
    measure_best_again(result);
    return result;
  }

 private:
  // --- kernels, copies, checks ---------------------------------------------

  void launch(const float* in, float* out, std::size_t n, cudaStream_t stream) const {
    if (workload_.kind == workload_kind::transfer_bound) {
      launch_affine(in, out, n, stream);
    } else {
      launch_sincos(in, out, n, stream);
    }
  }

  static void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cuda::stream_view s,
                   const char* what) {
    cuda::check(cudaMemcpyAsync(to, from, bytes, kind, s.get()), "cudaMemcpyAsync", what);
  }

  /// How a variant's copies are named in an error.
  struct copy_labels {
    const char* h2d;
    const char* d2h;
  };

  // `count` elements from `offset` the seeds' way, all on `s`: H2D, the
  // kernel, D2H, in the whole-size device buffers.
  void issue_chunk(std::size_t offset, std::size_t count, cuda::stream_view s, copy_labels labels) {
    copy(d_in_.data() + offset, in_.data() + offset, count * sizeof(float), cudaMemcpyHostToDevice, s,
         labels.h2d);
    launch(d_in_.data() + offset, d_out_.data() + offset, count, s.get());
    copy(out_.data() + offset, d_out_.data() + offset, count * sizeof(float), cudaMemcpyDeviceToHost, s,
         labels.d2h);
  }

  // Host lines that the CPU holds in its caches (dirty after a fill, clean
  // after a check) make DMA into them slow on the H100 machines: a CPU-side
  // NaN fill before each run slowed a 16 MiB D2H by half. A round trip
  // through the device rewrites the buffer by DMA, which drops those lines.
  void evict_from_host_caches(float* host, std::size_t bytes) {
    copy(d_in_.data(), host, bytes, cudaMemcpyHostToDevice, streams_[1], "cache eviction H2D");
    copy(host, d_in_.data(), bytes, cudaMemcpyDeviceToHost, streams_[1], "cache eviction D2H");
    streams_[1].synchronize();
  }

  // Fills the output with NaN (all bits set) from the device, untimed: stale
  // results cannot pass the check, and the CPU never writes the lines the
  // next run's D2H will write.
  void poison() {
    cuda::check(cudaMemsetAsync(out_on_device_, 0xFF, bytes_, streams_[1].get()), "cudaMemsetAsync",
                "NaN fill of the output");
    streams_[1].synchronize();
  }

  float expected(std::size_t i) const {
    return workload_.kind == workload_kind::transfer_bound ? affine_reference(in_[i]) : reference_[i];
  }

  bool correct(std::size_t i) const {
    const float got = out_[i];
    if (workload_.kind == workload_kind::transfer_bound) return got == affine_reference(in_[i]);
    // The device's sinf/cosf are within a few ulp of the host's and the
    // iteration converges, so the results agree far inside this; NaN fails.
    const float want = reference_[i];
    return std::fabs(got - want) <= 1e-4F * std::fabs(want) + 1e-5F;
  }

  // Every element; throws wrong_output naming the first wrong one.
  void verify(const std::string& variant, unsigned run) const {
    const unsigned threads = host_threads();
    std::vector<std::size_t> first_bad(threads + 1, elements_);
    const std::size_t per_thread = (elements_ + threads - 1) / threads;
    parallel_for(elements_, [&](std::size_t begin, std::size_t end) {
      const std::size_t slot = per_thread == 0 ? 0 : begin / per_thread;
      for (std::size_t i = begin; i < end; ++i) {
        if (!correct(i)) {
          first_bad[slot] = i;
          return;
        }
      }
    });
    const std::size_t bad = *std::min_element(first_bad.begin(), first_bad.end());
    if (bad == elements_) return;
    throw wrong_output(std::string(to_string(workload_.kind)) + " " + variant + ", run " +
                           std::to_string(run + 1) + ": output[" + std::to_string(bad) +
                           "] = " + number(out_[bad]) + ", expected " + number(expected(bad)) + " (input " +
                           number(in_[bad]) + ")",
                       bad);
  }

  // --- measuring -----------------------------------------------------------

  // Warm-up and timed runs of several variants, alternating run by run so
  // drift on a shared machine hits each alike. Outputs are poisoned (from the
  // device) before and checked (on the host) after every run when `check_output`.
  std::vector<variant_result> measure(std::vector<accumulator> rows, const std::vector<runner>& runners,
                                      bool check_output) {
    const unsigned total = config_.warmup + config_.reps;
    for (unsigned run = 0; run < total; ++run) {
      for (std::size_t v = 0; v < rows.size(); ++v) {
        if (check_output) poison();
        const run_clock::sample s = clock_.time(runners[v]);
        if (run == 0) rows[v].describe(s.info);
        if (check_output) verify(rows[v].result.name, run);
        if (run >= config_.warmup) rows[v].add(s);
      }
    }
    std::vector<variant_result> results;
    for (accumulator& row : rows) {
      row.result.verified = check_output;
      results.push_back(std::move(row).finish());
    }
    return results;
  }

  variant_result measure_one(variant_kind kind, std::string name, const runner& run, bool check_output) {
    announce_(name);
    accumulator row;
    row.result.kind = kind;
    row.result.name = std::move(name);
    return std::move(measure({std::move(row)}, {run}, check_output).front());
  }

  // Shape of a run over the whole buffer on `streams` streams in `chunks` pieces.
  run_info whole(unsigned streams = 1, std::size_t chunks = 1) const {
    run_info info;
    info.streams = streams;
    info.chunks = chunks;
    info.chunk_bytes = bytes_ / chunks;
    return info;
  }

  void measure_floors(workload_result& result) {
    cuda::stream& a = streams_[0];
    cuda::stream& b = streams_[1];
    result.floors.push_back(measure_one(
        variant_kind::floor_h2d, "floor: H2D alone",
        [&](const cuda::event& start) {
          start.wait_on(a);
          copy(d_in_.data(), in_.data(), bytes_, cudaMemcpyHostToDevice, a, "floor H2D");
          a.synchronize();
          return whole();
        },
        false));
    result.floors.push_back(measure_one(
        variant_kind::floor_d2h, "floor: D2H alone",
        [&](const cuda::event& start) {
          start.wait_on(a);
          copy(out_.data(), d_out_.data(), bytes_, cudaMemcpyDeviceToHost, a, "floor D2H");
          a.synchronize();
          return whole();
        },
        false));
    result.floors.push_back(measure_one(
        variant_kind::floor_both_directions, "floor: both directions",
        [&](const cuda::event& start) {
          start.wait_on(a);
          start.wait_on(b);
          copy(d_in_.data(), in_.data(), bytes_, cudaMemcpyHostToDevice, a, "floor H2D, both directions");
          copy(out_.data(), d_out_.data(), bytes_, cudaMemcpyDeviceToHost, b, "floor D2H, both directions");
          a.synchronize();
          b.synchronize();
          return whole(2);
        },
        false));
    // The kernel's input must be the real data: sin/cos time depends on it a little.
    copy(d_in_.data(), in_.data(), bytes_, cudaMemcpyHostToDevice, a, "input for the kernel floor");
    a.synchronize();
    result.floors.push_back(measure_one(
        variant_kind::floor_kernel, "floor: kernel alone",
        [&](const cuda::event& start) {
          start.wait_on(a);
          launch(d_in_.data(), d_out_.data(), elements_, a.get());
          a.synchronize();
          return whole();
        },
        false));
  }

  void measure_baselines(workload_result& result) {
    cuda::stream& a = streams_[0];
    result.variants.push_back(measure_one(
        variant_kind::sequential, "sequential (1 stream)",
        [&](const cuda::event& start) {
          start.wait_on(a);
          issue_chunk(0, elements_, a, {"sequential H2D", "sequential D2H"});
          a.synchronize();
          return whole();
        },
        true));
    // Seed 001's code: two halves, each H2D, kernel, D2H on its own stream,
    // issued depth-first (all of half 0, then all of half 1).
    result.variants.push_back(measure_one(
        variant_kind::two_stream, "hand-written 2 streams",
        [&](const cuda::event& start) {
          const std::size_t half = elements_ / 2;
          for (int i = 0; i < 2; ++i) start.wait_on(streams_[i]);
          for (int i = 0; i < 2; ++i) {
            const std::size_t offset = i == 0 ? 0 : half;
            const std::size_t count = i == 0 ? half : elements_ - half;
            issue_chunk(offset, count, streams_[i], {"two-stream H2D", "two-stream D2H"});
          }
          for (int i = 0; i < 2; ++i) streams_[i].synchronize();
          run_info info = whole(2, 2);
          info.chunk_bytes = half * sizeof(float);
          return info;
        },
        true));
  }

  using pipeline = cuda::Pipeline<float, float>;

  static run_info info_of(const cuda::run_report& report) {
    run_info info;
    info.host_issue_ms = report.host_issue_ms;
    info.chunks = report.chunks;
    info.chunk_bytes = report.chunk_bytes;
    info.streams = report.streams;
    info.device_bytes = report.device_bytes;
    return info;
  }

  runner pipeline_runner(pipeline& p) {
    return [this, &p](const cuda::event&) {
      return info_of(p.run(std::span<const float>(in_.data(), elements_), out_.span(), stage_));
    };
  }

  variant_result measure_pipeline(variant_kind kind, std::string name,
                                  const cuda::pipeline_options& options) {
    pipeline p(options);
    return measure_one(kind, std::move(name), pipeline_runner(p), true);
  }

  void measure_pipelines(workload_result& result) {
    result.variants.push_back(measure_pipeline(variant_kind::pipeline_default, "pipeline (default)", {}));
    for (const std::size_t chunk : workload_.chunk_bytes) {
      for (const unsigned streams : workload_.stream_counts) {
        cuda::pipeline_options options;
        options.chunk_bytes = chunk;
        options.streams = streams;
        result.variants.push_back(
            measure_pipeline(variant_kind::pipeline, pipeline_name(chunk, streams), options));
      }
    }
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < result.variants.size(); ++i) {
      const variant_result& v = result.variants[i];
      const bool is_pipeline = v.kind == variant_kind::pipeline_default || v.kind == variant_kind::pipeline;
      if (is_pipeline && v.device_ms.median < best) {
        best = v.device_ms.median;
        result.best_pipeline = i;
      }
    }
  }

  // The best configuration's chunks issued by a bare loop on `streams`, each
  // chunk in its own part of the whole-size device buffers: the runtime's
  // own host cost for these calls, with no Pipeline around them.
  run_info chunk_loop(std::vector<cuda::stream>& streams, std::size_t chunk_bytes) {
    const std::size_t chunk = chunk_bytes / sizeof(float);
    const std::size_t chunks = (elements_ + chunk - 1) / chunk;
    const auto started = host_clock::now();
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t offset = c * chunk;
      const std::size_t count = std::min(chunk, elements_ - offset);
      issue_chunk(offset, count, streams[c % streams.size()], {"bare loop H2D", "bare loop D2H"});
    }
    run_info info;
    info.host_issue_ms = milliseconds_since(started);
    for (cuda::stream& s : streams) s.synchronize();
    info.chunks = chunks;
    info.chunk_bytes = chunk_bytes;
    info.streams = static_cast<unsigned>(streams.size());
    return info;
  }

  // The best configuration again, four ways alternating run by run: issued
  // directly, with recording on (its overhead, and a measured Timeline of the
  // best run), captured once into a CUDA graph and replayed (the host cost of
  // a run becomes one launch), and as a bare loop of the same runtime calls.
  void measure_best_again(workload_result& result) {
    const variant_result& best = result.variants[result.best_pipeline];
    cuda::pipeline_options options;
    if (best.kind == variant_kind::pipeline) {
      options.chunk_bytes = best.chunk_bytes;
      options.streams = best.streams;
    }
    announce_("best pipeline (" + best.name + "): direct, recorded, graph replay, bare loop");
    pipeline off(options);
    cuda::pipeline_options recording = options;
    recording.record = cuda::recording::on;
    pipeline on(recording);
    std::optional<Timeline> last;
    std::optional<Program> last_program;
    const runner recorded = [this, &on, &last, &last_program](const cuda::event&) {
      cuda::run_report report = on.run(std::span<const float>(in_.data(), elements_), out_.span(), stage_);
      const run_info info = info_of(report);
      last = std::move(report.timeline);
      last_program = std::move(report.program);
      return info;
    };
    const auto capture_started = host_clock::now();
    cuda::pipeline_graph graph =
        pipeline(options).capture(std::span<const float>(in_.data(), elements_), out_.span(), stage_);
    result.graph_setup_ms = milliseconds_since(capture_started);
    const runner replayed = [&graph](const cuda::event&) {
      const cuda::replay_report replay = graph.replay();
      run_info info = info_of(graph.captured());
      info.host_issue_ms = replay.host_launch_ms;
      return info;
    };
    std::vector<cuda::stream> loop_streams;
    for (unsigned i = 0; i < best.streams; ++i) {
      loop_streams.emplace_back(cuda::stream::options{cuda::stream_sync::non_blocking, 0});
    }
    const runner loop = [this, &loop_streams, &best](const cuda::event&) {
      return chunk_loop(loop_streams, best.chunk_bytes);
    };

    std::vector<accumulator> rows(4);
    rows[0].result.kind = best.kind;
    rows[0].result.name = best.name + ", again";
    rows[1].result.kind = variant_kind::pipeline_recorded;
    rows[1].result.name = best.name + ", recording on";
    rows[2].result.kind = variant_kind::pipeline_graph;
    rows[2].result.name = best.name + ", graph replay";
    rows[3].result.kind = variant_kind::chunk_loop;
    rows[3].result.name = "bare loop, same chunks";
    std::vector<variant_result> measured =
        measure(std::move(rows), {pipeline_runner(off), recorded, replayed, loop}, true);
    result.best_again = std::move(measured[0]);
    result.best_recorded = std::move(measured[1]);
    result.best_graph = std::move(measured[2]);
    result.best_loop = std::move(measured[3]);
    if (last) {
      last->program_name = std::string(to_string(workload_.kind)) + ": " + best.name + " (recorded)";
      result.best_timeline = std::move(last);
      result.best_program = std::move(last_program);
    }
  }

  const workload_config& workload_;
  const bench_config& config_;
  run_clock& clock_;
  const std::function<void(const std::string&)>& announce_;
  std::size_t elements_;
  std::size_t bytes_;
  cuda::pinned_buffer<float> in_;
  cuda::pinned_buffer<float> out_;
  float* out_on_device_ = nullptr;  // out_ as the device addresses it
  std::vector<float> reference_;    // compute-bound only
  cuda::stream streams_[2] = {cuda::stream(cuda::stream::options{cuda::stream_sync::non_blocking, 0}),
                              cuda::stream(cuda::stream::options{cuda::stream_sync::non_blocking, 0})};
  cuda::device_buffer<float> d_in_;
  cuda::device_buffer<float> d_out_;
  pipeline::stage_function stage_ = [this](std::span<const float> in, std::span<float> out,
                                           cuda::stream_view stream, std::size_t) {
    launch(in.data(), out.data(), in.size(), stream.get());
  };
};

void check_config(const bench_config& config) {
  if (config.reps == 0) throw invalid_input("reps: 0 is out of range (expected >= 1)");
  for (const workload_config& w : config.workloads) {
    if (w.elements < 2) {
      throw invalid_input("elements: " + std::to_string(w.elements) + " is out of range (expected >= 2)");
    }
    for (const std::size_t chunk : w.chunk_bytes) {
      if (chunk == 0 || chunk % sizeof(float) != 0) {
        throw invalid_input("chunk_bytes: " + std::to_string(chunk) +
                            " is out of range (expected a positive multiple of 4)");
      }
    }
    for (const unsigned streams : w.stream_counts) {
      if (streams == 0) throw invalid_input("streams: 0 is out of range (expected >= 1)");
    }
  }
}

}  // namespace

std::string_view to_string(workload_kind kind) noexcept {
  return kind == workload_kind::transfer_bound ? "transfer-bound" : "compute-bound";
}

std::string_view to_string(variant_kind kind) noexcept {
  switch (kind) {
    case variant_kind::floor_h2d: return "floor_h2d";
    case variant_kind::floor_d2h: return "floor_d2h";
    case variant_kind::floor_both_directions: return "floor_both_directions";
    case variant_kind::floor_kernel: return "floor_kernel";
    case variant_kind::sequential: return "sequential";
    case variant_kind::two_stream: return "two_stream";
    case variant_kind::pipeline_default: return "pipeline_default";
    case variant_kind::pipeline: return "pipeline";
    case variant_kind::pipeline_recorded: return "pipeline_recorded";
    case variant_kind::pipeline_graph: return "pipeline_graph";
    case variant_kind::chunk_loop: return "chunk_loop";
  }
  return "unknown";
}

stats summarize(std::vector<double> samples) {
  stats s;
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  s.min = sorted.front();
  s.max = sorted.back();
  s.samples = std::move(samples);
  return s;
}

const variant_result& workload_result::floor(variant_kind kind) const {
  for (const variant_result& f : floors) {
    if (f.kind == kind) return f;
  }
  throw error("workload_result: no floor " + std::string(to_string(kind)));
}

const variant_result* workload_result::find(variant_kind kind) const noexcept {
  for (const variant_result& v : variants) {
    if (v.kind == kind) return &v;
  }
  return nullptr;
}

device_info query_device() {
  device_info d;
  cuda::check(cudaGetDevice(&d.ordinal), "cudaGetDevice");
  cudaDeviceProp properties{};
  cuda::check(cudaGetDeviceProperties(&properties, d.ordinal), "cudaGetDeviceProperties");
  d.name = properties.name;
  d.global_memory_bytes = properties.totalGlobalMem;
  const auto attribute = [&d](cudaDeviceAttr what, int& value, const char* name) {
    cuda::check(cudaDeviceGetAttribute(&value, what, d.ordinal), "cudaDeviceGetAttribute", name);
  };
  attribute(cudaDevAttrComputeCapabilityMajor, d.compute_major, "compute capability major");
  attribute(cudaDevAttrComputeCapabilityMinor, d.compute_minor, "compute capability minor");
  attribute(cudaDevAttrMultiProcessorCount, d.sm_count, "multiprocessor count");
  attribute(cudaDevAttrAsyncEngineCount, d.async_engine_count, "async engine count");
  cuda::check(cudaDriverGetVersion(&d.driver_version), "cudaDriverGetVersion");
  cuda::check(cudaRuntimeGetVersion(&d.runtime_version), "cudaRuntimeGetVersion");
  return d;
}

std::size_t count_steps(const bench_config& config) noexcept {
  std::size_t steps = 0;
  for (const workload_config& w : config.workloads) {
    // 4 floors, sequential, two-stream, default Pipeline, the sweep, the best again.
    steps += 4 + 3 + w.chunk_bytes.size() * w.stream_counts.size() + 1;
  }
  return steps;
}

bench_result run_benchmark(const bench_config& config, const progress_callback& progress) {
  check_config(config);
  bench_result result;
  result.device = query_device();
  result.warmup = config.warmup;
  result.reps = config.reps;
  const std::size_t steps = count_steps(config);
  std::size_t step = 0;
  run_clock clock;
  for (const workload_config& workload : config.workloads) {
    const std::function<void(const std::string&)> announce = [&](const std::string& what) {
      ++step;
      if (progress) progress(step, steps, std::string(to_string(workload.kind)) + " " + what);
    };
    workload_bench bench(workload, config, clock, announce);
    workload_result measured = bench.run();
    if (measured.best_timeline) measured.best_timeline->device = result.device.name;
    result.workloads.push_back(std::move(measured));
  }
  return result;
}

std::string format_bytes(std::size_t bytes) {
  constexpr std::size_t KiB = 1024;
  constexpr std::size_t MiB = KiB * 1024;
  constexpr std::size_t GiB = MiB * 1024;
  const auto scaled = [bytes](std::size_t unit, const char* suffix) {
    if (bytes % unit == 0) return std::to_string(bytes / unit) + " " + suffix;
    return number(static_cast<double>(bytes) / static_cast<double>(unit), "%.3g") + " " + suffix;
  };
  if (bytes >= GiB) return scaled(GiB, "GiB");
  if (bytes >= MiB) return scaled(MiB, "MiB");
  if (bytes >= KiB) return scaled(KiB, "KiB");
  return std::to_string(bytes) + " B";
}

}  // namespace overlap::bench
