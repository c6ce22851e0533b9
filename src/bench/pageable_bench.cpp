// The pageable workload (issue 12): the transfer-bound data (y = 2x + 1) in
// std::vectors, moved the naive way (cudaMemcpyAsync straight from them,
// docs/hardware.md's 4 streams x 32 chunks), by Pipelines that register them
// for each run, stage them through pinned slots, or choose (automatic), by
// a Pipeline over pinned copies, and by Pipelines over the vectors kept
// registered by the caller. The floor is the host's copy rate: (bytes in +
// bytes out) / the fastest multi-threaded copy from pageable into pinned
// memory (memcpy or streaming stores), measured here over several thread
// counts, and swept again after each round of the one-shot rows, which run
// alternating (issue 38: the host's copy rate drifts between calls, and
// the staged row with it). Every output element of every run is checked.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "host_parallel.hpp"
#include "output_check.hpp"
#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"
#include "random_fill.hpp"
#include "row_samples.hpp"
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
        reference_(n_),
        copy_target_(n_) {
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

    announce_("naive, register_in_place, stage and automatic alternating, the host copy swept after each");
    cuda::host_path not_judged{};  // the paths of the rows whose policy fixes it
    cuda::host_path one_shot{};
    std::vector<double> floor_ms;
    const std::function<void(unsigned)> sweep_copy = [&](unsigned round) {
      const double ms = copy_floor_once();
      if (round >= config_.warmup) floor_ms.push_back(ms);  // as the rows keep their timed runs only
    };
    r.variants =
        time_rows(clock_, config_.warmup, config_.reps,
                  {naive_row(),
                   pipeline_row(variant_kind::pageable_registered, "Pipeline, register_in_place each run",
                                cuda::pageable_memory::register_in_place, not_judged),
                   pipeline_row(variant_kind::pageable_staged, "Pipeline, stage",
                                cuda::pageable_memory::stage, not_judged),
                   pipeline_row(variant_kind::pageable_automatic, "Pipeline, automatic",
                                cuda::pageable_memory::automatic, one_shot)},
                  sweep_copy);
    r.automatic_one_shot = cuda::to_string(one_shot);

    // Each of these rows runs alone: alternating with the pinned row, the
    // Pipelines over the registered vectors ran 1.16x its time on the lent
    // H200 (7.1 ms against 6.1; 5.9-6.5 each alone), while a caller who
    // registers its vectors once runs on them again and again.
    const auto alone = [this, &r](const row_spec& row) {
      announce_(row.name);
      r.variants.push_back(
          time_row(clock_, config_.warmup, config_.reps, row.kind, row.name, row.run, row.hooks));
    };
    alone(pinned_row());
    cuda::host_path kept{};
    {
      const cuda::host_registration kept_in(in_.data(), bytes_);
      const cuda::host_registration kept_out(out_.data(), bytes_);
      alone(pipeline_row(variant_kind::pageable_kept, "Pipeline, vectors registered once",
                         cuda::pageable_memory::reject, not_judged));
      alone(pipeline_row(variant_kind::pageable_kept_automatic,
                         "Pipeline, automatic, vectors registered once", cuda::pageable_memory::automatic,
                         kept));
    }
    r.automatic_kept = cuda::to_string(kept);
    r.paired = paired_of(r, std::move(floor_ms));
    return r;
  }

 private:
  // The one-shot rows against the host copy swept after each of their rounds.
  [[nodiscard]] static pageable_result::paired_rounds paired_of(const pageable_result& r,
                                                                std::vector<double> floor_ms) {
    const auto row = [&r](variant_kind kind) -> const variant_result& {
      return *std::find_if(r.variants.begin(), r.variants.end(),
                           [kind](const variant_result& v) { return v.kind == kind; });
    };
    const auto samples = [&row](variant_kind kind) -> const std::vector<double>& {
      return row(kind).device_ms.samples;
    };
    const double pinned = row(variant_kind::pageable_pinned).device_ms.median;
    // Staging moves each byte through host memory three times where the copy
    // floor moves it twice (judge_pageable in tools/overlap/bench_verdicts.cpp).
    std::vector<double> stage_floor_ms;
    stage_floor_ms.reserve(floor_ms.size());
    for (const double ms : floor_ms) stage_floor_ms.push_back(std::max(1.5 * ms, pinned));
    pageable_result::paired_rounds paired;
    const std::vector<double>& staged = samples(variant_kind::pageable_staged);
    paired.stage_to_floor = run_by_run(staged, stage_floor_ms);
    paired.naive_to_staged = run_by_run(samples(variant_kind::pageable_naive), staged);
    paired.copy_floor_ms = summarize(std::move(floor_ms));
    return paired;
  }

  // The host copy settings the floor tries: each kind of store, each thread count.
  [[nodiscard]] std::vector<std::pair<cuda::detail::host_stores, unsigned>> copy_settings() const {
    std::vector<std::pair<cuda::detail::host_stores, unsigned>> settings;
    for (const cuda::detail::host_stores stores :
         {cuda::detail::host_stores::cached, cuda::detail::host_stores::streaming}) {
      for (const unsigned threads : p_.copy_threads) settings.emplace_back(stores, threads);
    }
    return settings;
  }

  // One host copy of the whole input into the pinned target, split over
  // `threads` threads started for it; its milliseconds.
  double time_host_copy(cuda::detail::host_stores stores, unsigned threads) {
    auto* to = reinterpret_cast<std::byte*>(copy_target_.data());
    const auto* from = reinterpret_cast<const std::byte*>(in_.data());
    const auto started = host_clock::now();
    const std::size_t per = (bytes_ + threads - 1) / threads;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      const std::size_t begin = std::min(bytes_, t * per);
      const std::size_t end = std::min(bytes_, begin + per);
      pool.emplace_back([=] { cuda::detail::copy_host(stores, to + begin, from + begin, end - begin); });
    }
    for (std::thread& t : pool) t.join();
    return milliseconds_since(started);
  }

  void check_copy_target(const char* which) const {
    if (std::memcmp(copy_target_.data(), in_.data(), bytes_) != 0)
      throw wrong_output(
          fmt::format("pageable: the host copy floor's last copy{} differs from its source", which), 0);
  }

  // The fastest host copy from pageable into pinned memory, over thread
  // counts, with memcpy and with streaming stores (glibc's memcpy streams
  // only above a threshold that scales with the L3, 300 MiB as the lent VM
  // reports it, so the two differ there).
  void measure_copy_floor(pageable_result& r) {
    announce_("floor: host copy pageable -> pinned");
    double best = 0.0;
    for (const auto& [stores, threads] : copy_settings()) {
      std::vector<double> ms;
      for (unsigned rep = 0; rep < config_.warmup + config_.reps; ++rep) {
        const double took = time_host_copy(stores, threads);
        if (rep >= config_.warmup) ms.push_back(took);
      }
      const double gbps = static_cast<double>(bytes_) / (summarize(ms).median * 1e6);
      (stores == cuda::detail::host_stores::streaming ? r.streaming_copy_gbps : r.copy_gbps)
          .emplace_back(threads, gbps);
      best = std::max(best, gbps);
    }
    check_copy_target("");
    r.copy_floor_ms = static_cast<double>(2 * bytes_) / (best * 1e6);
  }

  // The same floor from one copy per setting: the host as it is now.
  double copy_floor_once() {
    double fastest_ms = std::numeric_limits<double>::infinity();
    for (const auto& [stores, threads] : copy_settings())
      fastest_ms = std::min(fastest_ms, time_host_copy(stores, threads));
    check_copy_target(" after a round");
    return 2.0 * fastest_ms;
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

  // A Pipeline run's shape and host issue time.
  [[nodiscard]] run_info info_of(const cuda::run_report& report) const {
    run_info info = shape(report.chunk_bytes, report.chunks, report.streams);
    info.host_issue_ms = report.host_issue_ms;
    return info;
  }

  // docs/hardware.md's naive pipeline: 4 streams x 32 chunks, cudaMemcpyAsync from the vectors.
  struct naive_streams {
    static constexpr unsigned count = 4;
    static constexpr std::size_t chunks = 32;
    explicit naive_streams(std::size_t n) {
      for (unsigned i = 0; i < count; ++i)
        s.emplace_back(cuda::stream::options{cuda::stream_sync::non_blocking, 0});
      d_in = cuda::device_buffer<float>(n, s[0]);
      d_out = cuda::device_buffer<float>(n, s[0]);
      s[0].synchronize();
    }
    std::vector<cuda::stream> s;
    cuda::device_buffer<float> d_in;
    cuda::device_buffer<float> d_out;
  };

  row_spec naive_row() {
    const std::string name = "naive: cudaMemcpyAsync from the vectors";
    naive_ = std::make_unique<naive_streams>(n_);
    naive_streams& x = *naive_;
    runner run = [this, &x](const cuda::event& start) {
      for (cuda::stream& st : x.s) start.wait_on(st);
      const std::size_t per = (n_ + naive_streams::chunks - 1) / naive_streams::chunks;
      for (std::size_t c = 0; c < naive_streams::chunks; ++c) {
        const std::size_t offset = c * per;
        const std::size_t count = std::min(per, n_ - offset);
        const cudaStream_t st = x.s[c % naive_streams::count].get();
        cuda::check(cudaMemcpyAsync(x.d_in.data() + offset, in_.data() + offset, count * sizeof(float),
                                    cudaMemcpyHostToDevice, st),
                    "cudaMemcpyAsync", "naive pageable H2D");
        launch_affine(x.d_in.data() + offset, x.d_out.data() + offset, count, st);
        cuda::check(cudaMemcpyAsync(out_.data() + offset, x.d_out.data() + offset, count * sizeof(float),
                                    cudaMemcpyDeviceToHost, st),
                    "cudaMemcpyAsync", "naive pageable D2H");
      }
      for (cuda::stream& st : x.s) st.synchronize();
      return shape(per * sizeof(float), naive_streams::chunks, naive_streams::count);
    };
    return row_spec{variant_kind::pageable_naive, name, std::move(run), checked(name, out_)};
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

  // A Pipeline over the vectors with `policy`; each run reports its host path into `path`.
  row_spec pipeline_row(variant_kind kind, const std::string& name, cuda::pageable_memory policy,
                        cuda::host_path& path) {
    cuda::Pipeline<float>& pipeline = pipelines_.emplace_back(options(policy));
    runner run = [this, &pipeline, &path](const cuda::event&) {
      const cuda::run_report report = pipeline.run(in_, out_, affine_stage);
      path = report.host;
      return info_of(report);
    };
    return row_spec{kind, name, std::move(run), checked(name, out_)};
  }

  row_spec pinned_row() {
    const std::string name = "Pipeline, pinned copies of the data";
    pinned_in_ = cuda::pinned_buffer<float>(n_);
    pinned_out_ = cuda::pinned_buffer<float>(n_);
    std::memcpy(pinned_in_.data(), in_.data(), bytes_);
    cuda::Pipeline<float>& pipeline = pipelines_.emplace_back(options(cuda::pageable_memory::reject));
    row_hooks hooks;
    hooks.before = [this] {
      std::fill(pinned_out_.data(), pinned_out_.data() + n_, std::numeric_limits<float>::quiet_NaN());
    };
    hooks.check = [this, name](unsigned run) {
      verify_output(in_, pinned_out_.span(), reference_, tolerance{},
                    fmt::format("pageable {}, run {}", name, run + 1));
    };
    runner run = [this, &pipeline](const cuda::event&) {
      const cuda::run_report report = pipeline.run(pinned_in_.span(), pinned_out_.span(), affine_stage);
      return info_of(report);
    };
    return row_spec{variant_kind::pageable_pinned, name, std::move(run), std::move(hooks)};
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
  cuda::pinned_buffer<float> copy_target_;  ///< where the host copy floor copies the input
  std::unique_ptr<naive_streams> naive_;
  std::deque<cuda::Pipeline<float>> pipelines_;  ///< one per row; a deque keeps each where the runner sees it
  cuda::pinned_buffer<float> pinned_in_;
  cuda::pinned_buffer<float> pinned_out_;
};

}  // namespace

pageable_result measure_pageable(const bench_config& config, run_clock& clock, const announce_row& announce) {
  return pageable_bench(config, clock, announce).run();
}

}  // namespace overlap::bench::detail
