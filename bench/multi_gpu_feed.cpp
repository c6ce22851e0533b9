// The Feed over one GPU and over two: frames of uint32 through x -> a*x + b
// iterated k times, a transfer-bound job (k = 1) and a compute-bound one
// (issue 37, part 3).
//
//   multi_gpu_feed [--frames F] [--frame-mib M] [--reps R] [--json FILE]
//
// Rows, each a Feed with its default slots and an idle producer and consumer:
//   feed_1gpu   GPU 0 alone
//   feed_2gpu   feed_options::devices = {0, 1}: frame k on GPU k mod 2
// Each row runs once checked (a distinct random frame written into every
// slot, every element of every result checked against the closed form
// a^k x + b (a^k - 1) / (a - 1) mod 2^32), then R rounds time every row in
// turn (host clock around run()); medians with min and max.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "multi_gpu_affine.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/feed.hpp"

namespace {

using multi_gpu::affine;
using multi_gpu::clock_type;
using multi_gpu::iterated;
using multi_gpu::launch;
using multi_gpu::ms_since;
using multi_gpu::stats;
using multi_gpu::summarize;
using overlap::cuda::Feed;
using overlap::cuda::feed_options;

std::uint32_t frame_value(std::size_t frame, std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(frame) << 32) ^ i;
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return static_cast<std::uint32_t>(x ^ (x >> 31));
}

struct job {
  const char* name;
  int k;
};

/// Runs `feed` over `frames` frames once, every element checked; exits on a wrong one.
void checked_run(Feed<std::uint32_t>& feed, std::size_t frames, int k, const char* row,
                 const char* job_name) {
  const affine f = iterated(k);
  std::size_t wrong = 0;
  const auto report = feed.run(
      [&](std::span<std::uint32_t> slot, std::size_t frame) -> std::optional<std::size_t> {
        if (frame == frames) return std::nullopt;
        for (std::size_t i = 0; i < slot.size(); ++i) slot[i] = frame_value(frame, i);
        return slot.size();
      },
      [k](std::span<const std::uint32_t> in, std::span<std::uint32_t> out, overlap::cuda::stream_view s,
          std::size_t) { launch(in.data(), out.data(), in.size(), k, s.get()); },
      [&](std::span<const std::uint32_t> out, std::size_t frame) {
        for (std::size_t i = 0; i < out.size(); ++i)
          if (out[i] != f.a * frame_value(frame, i) + f.b) ++wrong;
      });
  if (wrong > 0 || report.items != frames) {
    std::fprintf(stderr, "multi_gpu_feed: %s, %s: %zu wrong elements, %zu of %zu frames\n", job_name, row,
                 wrong, report.items, frames);
    std::exit(1);
  }
}

double timed_run(Feed<std::uint32_t>& feed, std::size_t frames, int k) {
  const auto started = clock_type::now();
  (void)feed.run(
      [frames](std::span<std::uint32_t> slot, std::size_t frame) -> std::optional<std::size_t> {
        if (frame == frames) return std::nullopt;
        return slot.size();
      },
      [k](std::span<const std::uint32_t> in, std::span<std::uint32_t> out, overlap::cuda::stream_view s,
          std::size_t) { launch(in.data(), out.data(), in.size(), k, s.get()); },
      [](std::span<const std::uint32_t>, std::size_t) {});
  return ms_since(started);
}

std::string stats_json(const stats& s) {
  std::ostringstream o;
  o << "{\"median\": " << s.median << ", \"min\": " << s.min << ", \"max\": " << s.max << "}";
  return o.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t frames = 200;
  std::size_t frame_mib = 4;
  int reps = 7;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--frames" && has_value) {
      frames = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--frame-mib" && has_value) {
      frame_mib = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--reps" && has_value) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--json" && has_value) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: multi_gpu_feed [--frames F] [--frame-mib M] [--reps R] [--json FILE]\n");
      return 2;
    }
  }
  if (frames == 0 || frame_mib == 0 || reps < 1) {
    std::fprintf(stderr, "multi_gpu_feed: --frames, --frame-mib and --reps must be positive\n");
    return 2;
  }
  if (overlap::cuda::device_count() < 2) {
    std::fprintf(stderr, "multi_gpu_feed: needs 2 GPUs (%d visible)\n", overlap::cuda::device_count());
    return 2;
  }
  const std::size_t elements = frame_mib * (std::size_t{1} << 20) / sizeof(std::uint32_t);
  feed_options one;
  one.slot_elements = elements;
  feed_options two = one;
  two.devices = {0, 1};
  std::ostringstream json;
  json << "{\"frames\": " << frames << ", \"frame_mib\": " << frame_mib << ", \"reps\": " << reps;
  for (const job j : {job{"transfer_bound", 1}, job{"compute_bound", 2048}}) {
    Feed<std::uint32_t> feed_1gpu(one);
    Feed<std::uint32_t> feed_2gpu(two);
    checked_run(feed_1gpu, frames, j.k, "feed_1gpu", j.name);
    checked_run(feed_2gpu, frames, j.k, "feed_2gpu", j.name);
    std::vector<double> t1;
    std::vector<double> t2;
    for (int r = 0; r < reps; ++r) {  // rows alternate run by run
      t1.push_back(timed_run(feed_1gpu, frames, j.k));
      t2.push_back(timed_run(feed_2gpu, frames, j.k));
    }
    const stats s1 = summarize(t1);
    const stats s2 = summarize(t2);
    const double gb = 2.0 * static_cast<double>(frames * elements * sizeof(std::uint32_t)) / 1e9;
    std::printf("%s (k = %d): 1 GPU %.2f ms (%.1f GB/s both ways), 2 GPUs %.2f ms (%.1f GB/s): %.3fx\n",
                j.name, j.k, s1.median, gb / (s1.median / 1e3), s2.median, gb / (s2.median / 1e3),
                s1.median / s2.median);
    json << ", \"" << j.name << R"(": {"k": )" << j.k << ", \"feed_1gpu_ms\": " << stats_json(s1)
         << ", \"feed_2gpu_ms\": " << stats_json(s2)
         << ", \"two_over_one_throughput\": " << s1.median / s2.median << "}";
  }
  json << ", \"every_element_right\": true}\n";
  std::fputs(json.str().c_str(), stdout);
  if (!json_path.empty()) std::ofstream(json_path) << json.str();
  return 0;
}
