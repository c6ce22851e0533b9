// The pageable workload (issue 12): the transfer-bound data (y = 2x + 1) in
// std::vectors, moved the naive way (cudaMemcpyAsync straight from them,
// docs/hardware.md's 4 streams x 32 chunks), by Pipelines that register them
// for each run, stage them through pinned slots, or choose (automatic), by
// a Pipeline over pinned copies, and by Pipelines over the vectors kept
// registered by the caller. The floor is the host's copy rate: (bytes in +
// bytes out) / the fastest multi-threaded copy from pageable into pinned
// memory (memcpy or streaming stores), measured here over several thread
// counts. Every output element
// of every run is checked.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "host_parallel.hpp"
#include "output_check.hpp"
#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"
#include "random_fill.hpp"
#include "streaming_copy.hpp"
#include "timed_rows.hpp"
#include "workload.hpp"

namespace overlap::bench::detail {

namespace {

class pageable_bench {
 public:
  pageable_bench(const bench_config& config, run_clock& clock, const announce_row& announce)
      : config_(config),
        p_(config.pageable),
        clock_(clock),
        announce_(announce),
        n_(p_.elements),
        bytes_(n_ * sizeof(float)),
        in_(n_),
        out_(n_),
        reference_(n_) {
    fill_random(in_, config.seed ^ 0x9A6EULL, -1000.0F, 1000.0F);
    parallel_for(n_, [this](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) reference_[i] = 2.0F * in_[i] + 1.0F;
    });
  }

  pageable_result run() {
    pageable_result r;
    r.elements = n_;
    r.bytes = bytes_;
    measure_copy_floor(r);
    r.variants.push_back(measure_naive());
    cuda::host_path path{};
    r.variants.push_back(measure_pipeline(variant_kind::pageable_registered,
                                          "Pipeline, register_in_place each run",
                                          cuda::pageable_memory::register_in_place, false, path));
    r.variants.push_back(measure_pipeline(variant_kind::pageable_staged, "Pipeline, stage",
                                          cuda::pageable_memory::stage, false, path));
    r.variants.push_back(measure_pipeline(variant_kind::pageable_automatic, "Pipeline, automatic",
                                          cuda::pageable_memory::automatic, false, path));
    r.automatic_one_shot = cuda::to_string(path);
    r.variants.push_back(measure_pinned());
    r.variants.push_back(measure_pipeline(variant_kind::pageable_kept, "Pipeline, vectors registered once",
                                          cuda::pageable_memory::reject, true, path));
    r.variants.push_back(measure_pipeline(variant_kind::pageable_kept_automatic,
                                          "Pipeline, automatic, vectors registered once",
                                          cuda::pageable_memory::automatic, true, path));
    r.automatic_kept = cuda::to_string(path);
    return r;
  }

 private:
  // The fastest host copy from pageable into pinned memory, over thread
  // counts, with memcpy and with streaming stores (glibc's memcpy streams
  // only above a threshold that scales with the L3, 300 MiB as the lent VM
  // reports it, so the two differ there).
  void measure_copy_floor(pageable_result& r) {
    announce_("floor: host copy pageable -> pinned");
    cuda::pinned_buffer<float> pinned(n_);
    auto* to = reinterpret_cast<std::byte*>(pinned.data());
    const auto* from = reinterpret_cast<const std::byte*>(in_.data());
    double best = 0.0;
    for (const cuda::detail::host_stores stores :
         {cuda::detail::host_stores::cached, cuda::detail::host_stores::streaming}) {
      for (const unsigned threads : p_.copy_threads) {
        std::vector<double> ms;
        for (unsigned rep = 0; rep < config_.warmup + config_.reps; ++rep) {
          const auto started = host_clock::now();
          const std::size_t per = (bytes_ + threads - 1) / threads;
          std::vector<std::thread> pool;
          for (unsigned t = 0; t < threads; ++t) {
            const std::size_t begin = std::min(bytes_, t * per);
            const std::size_t end = std::min(bytes_, begin + per);
            pool.emplace_back(
                [=] { cuda::detail::copy_host(stores, to + begin, from + begin, end - begin); });
          }
          for (std::thread& t : pool) t.join();
          if (rep >= config_.warmup) ms.push_back(milliseconds_since(started));
        }
        const double gbps = static_cast<double>(bytes_) / (summarize(ms).median * 1e6);
        (stores == cuda::detail::host_stores::streaming ? r.streaming_copy_gbps : r.copy_gbps)
            .emplace_back(threads, gbps);
        best = std::max(best, gbps);
      }
    }
    if (std::memcmp(to, from, bytes_) != 0)
      throw wrong_output("pageable: the host copy floor's last copy differs from its source", 0);
    r.copy_floor_ms = static_cast<double>(2 * bytes_) / (best * 1e6);
  }

  row_hooks checked(const std::string& name, std::span<const float> out) {
    row_hooks hooks;
    hooks.before = [this] { std::fill(out_.begin(), out_.end(), std::numeric_limits<float>::quiet_NaN()); };
    hooks.check = [this, name, out](unsigned run) {
      verify_output(in_, out, reference_, tolerance{}, fmt::format("pageable {}, run {}", name, run + 1));
    };
    return hooks;
  }

  [[nodiscard]] run_info shape(std::size_t chunk_bytes, std::size_t chunks, unsigned streams) const {
    run_info info;
    info.chunks = chunks;
    info.chunk_bytes = chunk_bytes;
    info.streams = streams;
    return info;
  }

  // docs/hardware.md's naive pipeline: 4 streams x 32 chunks, cudaMemcpyAsync from the vectors.
  variant_result measure_naive() {
    const std::string name = "naive: cudaMemcpyAsync from the vectors";
    announce_(name);
    constexpr unsigned streams = 4;
    constexpr std::size_t chunks = 32;
    std::vector<cuda::stream> s;
    for (unsigned i = 0; i < streams; ++i)
      s.emplace_back(cuda::stream::options{cuda::stream_sync::non_blocking, 0});
    cuda::device_buffer<float> d_in(n_, s[0]);
    cuda::device_buffer<float> d_out(n_, s[0]);
    s[0].synchronize();
    return time_row(
        clock_, config_.warmup, config_.reps, variant_kind::pageable_naive, name,
        [&](const cuda::event& start) {
          for (cuda::stream& x : s) start.wait_on(x);
          const std::size_t per = (n_ + chunks - 1) / chunks;
          for (std::size_t c = 0; c < chunks; ++c) {
            const std::size_t offset = c * per;
            const std::size_t count = std::min(per, n_ - offset);
            const cudaStream_t st = s[c % streams].get();
            cuda::check(cudaMemcpyAsync(d_in.data() + offset, in_.data() + offset, count * sizeof(float),
                                        cudaMemcpyHostToDevice, st),
                        "cudaMemcpyAsync", "naive pageable H2D");
            launch_affine(d_in.data() + offset, d_out.data() + offset, count, st);
            cuda::check(cudaMemcpyAsync(out_.data() + offset, d_out.data() + offset, count * sizeof(float),
                                        cudaMemcpyDeviceToHost, st),
                        "cudaMemcpyAsync", "naive pageable D2H");
          }
          for (cuda::stream& x : s) x.synchronize();
          return shape(per * sizeof(float), chunks, streams);
        },
        checked(name, out_));
  }

  [[nodiscard]] cuda::pipeline_options options(cuda::pageable_memory policy) const {
    cuda::pipeline_options o;
    o.chunk_bytes = p_.chunk_bytes;
    o.streams = p_.streams;
    o.pageable = policy;
    return o;
  }

  static void affine_stage(std::span<const float> in, std::span<float> out, cuda::stream_view s,
                           std::size_t /*chunk*/) {
    launch_affine(in.data(), out.data(), in.size(), s.get());
  }

  variant_result measure_pipeline(variant_kind kind, const std::string& name, cuda::pageable_memory policy,
                                  bool keep_registered, cuda::host_path& path) {
    announce_(name);
    std::optional<cuda::host_registration> kept_in;
    std::optional<cuda::host_registration> kept_out;
    if (keep_registered) {
      kept_in.emplace(in_.data(), bytes_);
      kept_out.emplace(out_.data(), bytes_);
    }
    cuda::Pipeline<float> pipeline(options(policy));
    return time_row(
        clock_, config_.warmup, config_.reps, kind, name,
        [&](const cuda::event&) {
          const cuda::run_report report = pipeline.run(in_, out_, affine_stage);
          path = report.host;
          run_info info = shape(report.chunk_bytes, report.chunks, report.streams);
          info.host_issue_ms = report.host_issue_ms;
          return info;
        },
        checked(name, out_));
  }

  variant_result measure_pinned() {
    const std::string name = "Pipeline, pinned copies of the data";
    announce_(name);
    cuda::pinned_buffer<float> in(n_);
    cuda::pinned_buffer<float> out(n_);
    std::memcpy(in.data(), in_.data(), bytes_);
    cuda::Pipeline<float> pipeline(options(cuda::pageable_memory::reject));
    row_hooks hooks;
    hooks.before = [&] { std::fill(out.data(), out.data() + n_, std::numeric_limits<float>::quiet_NaN()); };
    hooks.check = [&](unsigned run) {
      verify_output(in_, out.span(), reference_, tolerance{},
                    fmt::format("pageable {}, run {}", name, run + 1));
    };
    return time_row(
        clock_, config_.warmup, config_.reps, variant_kind::pageable_pinned, name,
        [&](const cuda::event&) {
          const cuda::run_report report = pipeline.run(in.span(), out.span(), affine_stage);
          run_info info = shape(report.chunk_bytes, report.chunks, report.streams);
          info.host_issue_ms = report.host_issue_ms;
          return info;
        },
        hooks);
  }

  const bench_config& config_;
  const pageable_config& p_;
  run_clock& clock_;
  const announce_row& announce_;
  std::size_t n_;
  std::size_t bytes_;
  std::vector<float> in_;
  std::vector<float> out_;
  std::vector<float> reference_;
};

}  // namespace

pageable_result measure_pageable(const bench_config& config, run_clock& clock, const announce_row& announce) {
  return pageable_bench(config, clock, announce).run();
}

}  // namespace overlap::bench::detail
