// The frames workload (issue 12): the CUDA tutorial's ping-pong, 100 frames
// of 4 MiB through y = 2x + 1, as the tutorial writes it (two streams, two
// buffers, a stream synchronize before each buffer's reuse) and through
// cuda::Feed with default and given slot counts, against the copy rate at
// the frame size measured in the same run (every frame H2D on one stream and
// D2H on another, at once). Then Feeds whose producer spends a fixed host
// time per frame, against max(that time x frames, the GPU-bound feed).
//
// The timed runs move the frames as the tutorial's loop does, with no host
// work on them; before its timed runs each Feed row runs once with a
// producer that writes a distinct frame into every slot and a consumer that
// checks every element of every result, and the ping-pong's two outputs are
// checked after every run.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <string>

#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/feed.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"
#include "random_fill.hpp"
#include "timed_rows.hpp"

namespace overlap::bench::detail {

namespace {

using frame_feed = cuda::Feed<float, float>;

// Element i of frame k in the checked run: exact through y = 2x + 1.
float frame_value(std::size_t frame, std::size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + frame * 131) % 8192) - 4096) * 0.5F;
}

void affine_stage(std::span<const float> in, std::span<float> out, cuda::stream_view s,
                  std::size_t /*item*/) {
  launch_affine(in.data(), out.data(), in.size(), s.get());
}

// Spins for `us` microseconds: host work the producer cannot skip.
void busy_for(double us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

class frames_bench {
 public:
  frames_bench(const bench_config& config, run_clock& clock, const announce_row& announce)
      : config_(config),
        f_(config.feed),
        clock_(clock),
        announce_(announce),
        bytes_(f_.frame_elements * sizeof(float)) {}

  feed_result run() {
    feed_result r;
    r.frames = f_.frames;
    r.frame_bytes = bytes_;
    r.frame_copies = measure_copy_rate();
    r.variants.push_back(measure_ping_pong());
    r.variants.push_back(measure_feed(variant_kind::feed_default, "Feed (default slots)", std::nullopt, 0.0));
    for (const unsigned slots : f_.slot_counts) {
      r.variants.push_back(measure_feed(variant_kind::feed, fmt::format("Feed {} slots", slots), slots, 0.0));
    }
    const double gpu_bound_ms = r.variants[1].device_ms.median;
    for (const double us : f_.producer_us) {
      paced_result paced;
      paced.producer_us = us;
      paced.floor_ms = std::max(us * static_cast<double>(f_.frames) / 1e3, gpu_bound_ms);
      paced.row = measure_feed(variant_kind::feed_paced, fmt::format("Feed, producer {:g} us per frame", us),
                               std::nullopt, us);
      r.paced.push_back(std::move(paced));
    }
    return r;
  }

 private:
  [[nodiscard]] run_info shape(unsigned streams) const {
    run_info info;
    info.chunks = f_.frames;
    info.chunk_bytes = bytes_;
    info.streams = streams;
    return info;
  }

  variant_result measure_copy_rate() {
    announce_("floor: frame copies both ways");
    cuda::pinned_buffer<float> host_in(f_.frame_elements);
    cuda::pinned_buffer<float> host_out(f_.frame_elements);
    cuda::stream up(cuda::stream::options{cuda::stream_sync::non_blocking, 0});
    cuda::stream down(cuda::stream::options{cuda::stream_sync::non_blocking, 0});
    cuda::device_buffer<float> d_in(f_.frame_elements, up);
    cuda::device_buffer<float> d_out(f_.frame_elements, up);
    up.synchronize();
    return time_row(clock_, config_.warmup, config_.reps, variant_kind::floor_frame_copies,
                    "floor: frame copies both ways", [&](const cuda::event& start) {
                      start.wait_on(up);
                      start.wait_on(down);
                      for (std::size_t k = 0; k < f_.frames; ++k) {
                        cuda::check(cudaMemcpyAsync(d_in.data(), host_in.data(), bytes_,
                                                    cudaMemcpyHostToDevice, up.get()),
                                    "cudaMemcpyAsync", "frame copies H2D");
                        cuda::check(cudaMemcpyAsync(host_out.data(), d_out.data(), bytes_,
                                                    cudaMemcpyDeviceToHost, down.get()),
                                    "cudaMemcpyAsync", "frame copies D2H");
                      }
                      up.synchronize();
                      down.synchronize();
                      return shape(2);
                    });
  }

  // The tutorial's loop: frame k on buffer and stream k mod 2, after a
  // synchronize with that stream's previous frame.
  variant_result measure_ping_pong() {
    announce_("hand-written ping-pong");
    const std::size_t n = f_.frame_elements;
    cuda::pinned_buffer<float> host_in(2 * n);
    cuda::pinned_buffer<float> host_out(2 * n);
    fill_random(host_in.span(), config_.seed ^ 0xF4A3E5ULL, -1000.0F, 1000.0F);
    cuda::stream streams[2] = {cuda::stream(cuda::stream::options{cuda::stream_sync::non_blocking, 0}),
                               cuda::stream(cuda::stream::options{cuda::stream_sync::non_blocking, 0})};
    cuda::device_buffer<float> d_in(2 * n, streams[0]);
    cuda::device_buffer<float> d_out(2 * n, streams[0]);
    streams[0].synchronize();
    row_hooks hooks;
    hooks.before = [&] {
      std::fill(host_out.data(), host_out.data() + 2 * n, std::numeric_limits<float>::quiet_NaN());
    };
    hooks.check = [&](unsigned run) {
      for (std::size_t i = 0; i < 2 * n; ++i) {
        if (host_out[i] != 2.0F * host_in[i] + 1.0F) {
          throw wrong_output(
              fmt::format("frames: hand-written ping-pong, run {}: element {} of the two buffers is "
                          "{}, expected {}",
                          run + 1, i, host_out[i], 2.0F * host_in[i] + 1.0F),
              i);
        }
      }
    };
    return time_row(
        clock_, config_.warmup, config_.reps, variant_kind::ping_pong, "hand-written ping-pong (2 streams)",
        [&](const cuda::event& start) {
          for (cuda::stream& s : streams) start.wait_on(s);
          for (std::size_t frame = 0; frame < f_.frames; ++frame) {
            const std::size_t buf = frame % 2;
            cuda::stream& s = streams[buf];
            s.synchronize();  // before overwriting this buffer, as the tutorial does
            cuda::check(cudaMemcpyAsync(d_in.data() + buf * n, host_in.data() + buf * n, bytes_,
                                        cudaMemcpyHostToDevice, s.get()),
                        "cudaMemcpyAsync", "ping-pong H2D");
            launch_affine(d_in.data() + buf * n, d_out.data() + buf * n, n, s.get());
            cuda::check(cudaMemcpyAsync(host_out.data() + buf * n, d_out.data() + buf * n, bytes_,
                                        cudaMemcpyDeviceToHost, s.get()),
                        "cudaMemcpyAsync", "ping-pong D2H");
          }
          for (cuda::stream& s : streams) s.synchronize();
          return shape(2);
        },
        hooks);
  }

  // One run that writes and checks every frame, then the timed runs.
  variant_result measure_feed(variant_kind kind, const std::string& name, std::optional<unsigned> slots,
                              double producer_us) {
    announce_(name);
    cuda::feed_options options;
    options.slot_elements = f_.frame_elements;
    options.slots = slots;
    frame_feed feed(options);
    const std::size_t frames = f_.frames;
    std::size_t wrong = 0;
    std::size_t first_wrong = 0;
    const cuda::feed_report checked = feed.run(
        [&](std::span<float> slot, std::size_t k) -> std::optional<std::size_t> {
          if (k == frames) return std::nullopt;
          for (std::size_t i = 0; i < slot.size(); ++i) slot[i] = frame_value(k, i);
          return slot.size();
        },
        affine_stage,
        [&](std::span<const float> out, std::size_t k) {
          for (std::size_t i = 0; i < out.size(); ++i) {
            if (out[i] != 2.0F * frame_value(k, i) + 1.0F && wrong++ == 0) first_wrong = k * out.size() + i;
          }
        });
    if (wrong > 0 || checked.items != frames) {
      throw wrong_output(
          fmt::format("frames: {}: {} wrong elements, {} of {} frames consumed (the first wrong "
                      "element is frame {}, element {})",
                      name, wrong, checked.items, frames, first_wrong / f_.frame_elements,
                      first_wrong % f_.frame_elements),
          first_wrong);
    }
    variant_result row = time_row(clock_, config_.warmup, config_.reps, kind, name, [&](const cuda::event&) {
      const cuda::feed_report report = feed.run(
          [&](std::span<float> slot, std::size_t k) -> std::optional<std::size_t> {
            if (k == frames) return std::nullopt;
            if (producer_us > 0.0) busy_for(producer_us);
            return slot.size();
          },
          affine_stage, [](std::span<const float>, std::size_t) {});
      run_info info = shape(report.slots);
      info.host_issue_ms = report.host_issue_ms;
      return info;
    });
    row.verified = true;
    return row;
  }

  const bench_config& config_;
  const feed_config& f_;
  run_clock& clock_;
  const announce_row& announce_;
  std::size_t bytes_;
};

}  // namespace

feed_result measure_frames(const bench_config& config, run_clock& clock, const announce_row& announce) {
  return frames_bench(config, clock, announce).run();
}

}  // namespace overlap::bench::detail
