// The frames workload (issue 12): the CUDA tutorial's ping-pong, 100 frames
// of 4 MiB through y = 2x + 1, as the tutorial writes it (two streams, two
// buffers, a stream synchronize before each buffer's reuse), as the best
// hand-written loop we found writes it (the default Feed's slot count on one
// host thread, streams by stage), and through cuda::Feed with default and given slot counts,
// against the copy rate at
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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
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
        bytes_(f_.frame_elements * sizeof(float)),
        n_(f_.frame_elements),
        copy_in_(n_),
        copy_out_(n_),
        copy_d_in_(n_, up_),
        copy_d_out_(n_, up_),
        ping_in_(2 * n_),
        ping_out_(2 * n_),
        ping_d_in_(2 * n_, up_),
        ping_d_out_(2 * n_, up_),
        tuned_slots_(default_feed_slots(cuda::builtin_model_of_current_device())),
        tuned_in_(tuned_slots_ * n_),
        tuned_out_(tuned_slots_ * n_),
        tuned_d_in_(tuned_slots_ * n_, up_),
        tuned_d_out_(tuned_slots_ * n_, up_) {
    tuned_.resize(tuned_slots_);
    up_.synchronize();  // the device buffers were allocated in stream order
    fill_random(ping_in_.span(), config.seed ^ 0xF4A3E5ULL, -1000.0F, 1000.0F);
    fill_random(tuned_in_.span(), config.seed ^ 0x7A11EDULL, -1000.0F, 1000.0F);
  }

  // Every row is set up (each Feed checked once) first, then all are timed
  // alternating run by run: the Feeds and the ping-pong are compared with
  // the copy rate measured between their runs.
  feed_result run() {
    std::vector<row_spec> rows;
    rows.push_back(copy_rate_row());
    rows.push_back(ping_pong_row());
    rows.push_back(hand_tuned_row());
    rows.push_back(feed_row(variant_kind::feed_default, "Feed (default slots)", defaults(), 0.0));
    for (const unsigned slots : f_.slot_counts) {
      cuda::feed_options options = defaults();
      options.slots = slots;
      rows.push_back(feed_row(variant_kind::feed, fmt::format("Feed {} slots", slots), options, 0.0));
    }
    cuda::feed_options graphs = defaults();
    graphs.issue = cuda::feed_issue::graph_per_slot;
    rows.push_back(feed_row(variant_kind::feed_graphs, "Feed (default slots), graph per slot", graphs, 0.0));
    cuda::feed_options dedicated = defaults();
    dedicated.issuing_thread = cuda::feed_issuing_thread::dedicated;
    rows.push_back(
        feed_row(variant_kind::feed_dedicated, "Feed (default slots), dedicated issuer", dedicated, 0.0));
    for (const double us : f_.producer_us) {
      rows.push_back(feed_row(variant_kind::feed_paced, fmt::format("Feed, producer {:g} us per frame", us),
                              defaults(), us));
      rows.push_back(feed_row(variant_kind::feed_paced,
                              fmt::format("Feed, producer {:g} us, dedicated issuer", us), dedicated, us));
    }
    std::vector<variant_result> timed = time_rows(clock_, config_.warmup, config_.reps, rows);
    feed_result r;
    r.frames = f_.frames;
    r.frame_bytes = bytes_;
    r.frame_copies = std::move(timed[0]);
    const std::size_t feeds = 5 + f_.slot_counts.size();  // and the two hand-written loops
    for (std::size_t i = 1; i <= feeds; ++i) r.variants.push_back(std::move(timed[i]));
    const double gpu_bound_ms = r.variants[2].device_ms.median;  // the default Feed, idle producer
    for (std::size_t p = 0; p < 2 * f_.producer_us.size(); ++p) {
      paced_result paced;
      paced.producer_us = f_.producer_us[p / 2];
      paced.floor_ms = std::max(paced.producer_us * static_cast<double>(f_.frames) / 1e3, gpu_bound_ms);
      paced.row = std::move(timed[1 + feeds + p]);
      paced.row.verified = true;
      paced.issuing_thread = p % 2 == 0 ? "automatic" : "dedicated";
      r.paced.push_back(std::move(paced));
    }
    for (variant_result& v : r.variants)
      v.verified = true;  // the ping-pong every run; each Feed in its check
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

  // Every frame H2D on one stream and D2H on another, at once.
  row_spec copy_rate_row() {
    announce_("floor: frame copies both ways");
    return {variant_kind::floor_frame_copies,
            "floor: frame copies both ways",
            [this](const cuda::event& start) {
              start.wait_on(up_);
              start.wait_on(down_);
              for (std::size_t k = 0; k < f_.frames; ++k) {
                cuda::check(cudaMemcpyAsync(copy_d_in_.data(), copy_in_.data(), bytes_,
                                            cudaMemcpyHostToDevice, up_.get()),
                            "cudaMemcpyAsync", "frame copies H2D");
                cuda::check(cudaMemcpyAsync(copy_out_.data(), copy_d_out_.data(), bytes_,
                                            cudaMemcpyDeviceToHost, down_.get()),
                            "cudaMemcpyAsync", "frame copies D2H");
              }
              up_.synchronize();
              down_.synchronize();
              return shape(2);
            },
            {}};
  }

  // The tutorial's loop: frame k on buffer and stream k mod 2, after a
  // synchronize with that stream's previous frame; both outputs checked.
  row_spec ping_pong_row() {
    announce_("hand-written ping-pong");
    row_hooks hooks;
    hooks.before = [this] {
      std::fill(ping_out_.data(), ping_out_.data() + 2 * n_, std::numeric_limits<float>::quiet_NaN());
    };
    hooks.check = [this](unsigned run) {
      for (std::size_t i = 0; i < 2 * n_; ++i) {
        if (ping_out_[i] != 2.0F * ping_in_[i] + 1.0F) {
          throw wrong_output(
              fmt::format("frames: hand-written ping-pong, run {}: element {} of the two buffers "
                          "is {}, expected {}",
                          run + 1, i, ping_out_[i], 2.0F * ping_in_[i] + 1.0F),
              i);
        }
      }
    };
    return {variant_kind::ping_pong, "hand-written ping-pong (2 streams)",
            [this](const cuda::event& start) {
              cuda::stream* streams[2] = {&up_, &down_};
              for (cuda::stream* s : streams) start.wait_on(*s);
              for (std::size_t frame = 0; frame < f_.frames; ++frame) {
                const std::size_t buf = frame % 2;
                cuda::stream& s = *streams[buf];
                s.synchronize();  // before overwriting this buffer, as the tutorial does
                cuda::check(cudaMemcpyAsync(ping_d_in_.data() + buf * n_, ping_in_.data() + buf * n_, bytes_,
                                            cudaMemcpyHostToDevice, s.get()),
                            "cudaMemcpyAsync", "ping-pong H2D");
                launch_affine(ping_d_in_.data() + buf * n_, ping_d_out_.data() + buf * n_, n_, s.get());
                cuda::check(cudaMemcpyAsync(ping_out_.data() + buf * n_, ping_d_out_.data() + buf * n_,
                                            bytes_, cudaMemcpyDeviceToHost, s.get()),
                            "cudaMemcpyAsync", "ping-pong D2H");
              }
              for (cuda::stream* s : streams) s->synchronize();
              return shape(2);
            },
            hooks};
  }

  // The best hand-written loop found for this work (bench/RESULTS.md, issue
  // 12 part 4): the default Feed's slot count, one host thread, streams by
  // stage (every upload on one stream, every kernel on a second, every
  // download on a third, events between), and frame k's D2H issued once the
  // host has seen frame k - N's done, as a consumer of slot k mod N must;
  // the host also waits for frame k - N's upload before reusing its input,
  // as a producer must. Its waits spin: the lowest latency, a core busy.
  // The outputs of the last N frames are checked after every run.
  row_spec hand_tuned_row() {
    const std::string name = fmt::format("hand-tuned: {} slots by stage, one thread", tuned_slots_);
    announce_(name);
    row_hooks hooks;
    hooks.before = [this] {
      std::fill(tuned_out_.data(), tuned_out_.data() + tuned_slots_ * n_,
                std::numeric_limits<float>::quiet_NaN());
    };
    hooks.check = [this, name](unsigned run) {
      for (std::size_t i = 0; i < tuned_slots_ * n_; ++i) {
        if (tuned_out_[i] != 2.0F * tuned_in_[i] + 1.0F) {
          throw wrong_output(fmt::format("frames: {}, run {}: element {} of the slots' outputs is {}, "
                                         "expected {}",
                                         name, run + 1, i, tuned_out_[i], 2.0F * tuned_in_[i] + 1.0F),
                             i);
        }
      }
    };
    return {variant_kind::hand_tuned_slots, name,
            [this](const cuda::event& start) {
              for (const cuda::stream* s : {&up_, &tuned_kernels_, &down_}) start.wait_on(*s);
              for (std::size_t frame = 0; frame < f_.frames; ++frame) {
                const std::size_t slot = frame % tuned_slots_;
                const std::size_t at = slot * n_;
                tuned_slot& t = tuned_[slot];
                const bool reused = frame >= tuned_slots_;
                if (reused) {
                  t.uploaded.synchronize();  // frame - N's input was read: the producer may refill it
                  t.computed.wait_on(up_);   // and its kernel read the device input
                }
                cuda::check(cudaMemcpyAsync(tuned_d_in_.data() + at, tuned_in_.data() + at, bytes_,
                                            cudaMemcpyHostToDevice, up_.get()),
                            "cudaMemcpyAsync", "hand-tuned H2D");
                t.uploaded.record(up_);
                t.uploaded.wait_on(tuned_kernels_);
                if (reused) t.ready.wait_on(tuned_kernels_);  // frame - N's D2H read the device output
                launch_affine(tuned_d_in_.data() + at, tuned_d_out_.data() + at, n_, tuned_kernels_.get());
                t.computed.record(tuned_kernels_);
                if (reused) t.ready.synchronize();  // the consumer is done with frame - N's output
                t.computed.wait_on(down_);
                cuda::check(cudaMemcpyAsync(tuned_out_.data() + at, tuned_d_out_.data() + at, bytes_,
                                            cudaMemcpyDeviceToHost, down_.get()),
                            "cudaMemcpyAsync", "hand-tuned D2H");
                t.ready.record(down_);
              }
              for (const cuda::stream* s : {&up_, &tuned_kernels_, &down_}) s->synchronize();
              run_info info = shape(3);
              info.per_stage = true;
              return info;
            },
            hooks};
  }

  // A Feed, checked once (a distinct frame written into every slot, every
  // element of every result checked), then timed with an idle consumer and
  // a producer that does nothing, or spins for `producer_us`.
  // A Feed of one frame per slot, everything else as the user gets it.
  [[nodiscard]] cuda::feed_options defaults() const {
    cuda::feed_options options;
    options.slot_elements = n_;
    return options;
  }

  row_spec feed_row(variant_kind kind, const std::string& name, const cuda::feed_options& options,
                    double producer_us) {
    announce_(name);
    frame_feed& feed = *feeds_.emplace_back(std::make_unique<frame_feed>(options));
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
                      name, wrong, checked.items, frames, first_wrong / n_, first_wrong % n_),
          first_wrong);
    }
    return {kind,
            name,
            [&feed, frames, producer_us](const cuda::event&) {
              const cuda::feed_report report = feed.run(
                  [&](std::span<float> slot, std::size_t k) -> std::optional<std::size_t> {
                    if (k == frames) return std::nullopt;
                    if (producer_us > 0.0) busy_for(producer_us);
                    return slot.size();
                  },
                  affine_stage, [](std::span<const float>, std::size_t) {});
              run_info info;
              info.chunks = frames;
              info.chunk_bytes = report.slot_elements * sizeof(float);
              info.streams = report.slots;
              info.host_issue_ms = report.host_issue_ms;
              return info;
            },
            {}};
  }

  const bench_config& config_;
  const feed_config& f_;
  run_clock& clock_;
  const announce_row& announce_;
  std::size_t bytes_;
  std::size_t n_;
  cuda::stream up_{cuda::stream::options{cuda::stream_sync::non_blocking, 0}};
  cuda::stream down_{cuda::stream::options{cuda::stream_sync::non_blocking, 0}};
  // The copy rate's frame buffers, and the ping-pong's two of each.
  cuda::pinned_buffer<float> copy_in_;
  cuda::pinned_buffer<float> copy_out_;
  cuda::device_buffer<float> copy_d_in_;
  cuda::device_buffer<float> copy_d_out_;
  cuda::pinned_buffer<float> ping_in_;
  cuda::pinned_buffer<float> ping_out_;
  cuda::device_buffer<float> ping_d_in_;
  cuda::device_buffer<float> ping_d_out_;
  // The hand-tuned loop's slots: a frame's input and output each, and the
  // events between its three streams (up_, tuned_kernels_, down_).
  struct tuned_slot {
    cuda::event uploaded;
    cuda::event computed;
    cuda::event ready;
  };
  unsigned tuned_slots_;
  cuda::pinned_buffer<float> tuned_in_;
  cuda::pinned_buffer<float> tuned_out_;
  cuda::device_buffer<float> tuned_d_in_;
  cuda::device_buffer<float> tuned_d_out_;
  cuda::stream tuned_kernels_{cuda::stream::options{cuda::stream_sync::non_blocking, 0}};
  std::vector<tuned_slot> tuned_;
  std::vector<std::unique_ptr<frame_feed>> feeds_;
};

}  // namespace

feed_result measure_frames(const bench_config& config, run_clock& clock, const announce_row& announce) {
  return frames_bench(config, clock, announce).run();
}

}  // namespace overlap::bench::detail
