// The Pipeline over one GPU and over two, against the best hand-written
// two-GPU loop and the host's floor, on a transfer-bound and a
// compute-bound job (issue 37, part 3).
//
//   multi_gpu_pipeline [--mib-each-way M] [--reps R] [--model host.json] [--json FILE]
//
// Both jobs stream M MiB (default 1024) of uint32 through x -> a*x + b
// iterated k times on the device and back: k = 1 (transfer-bound) and k = 4096
// (compute-bound). Every output element is checked against the closed form
// a^k x + b (a^k - 1) / (a - 1) (mod 2^32) after every run. Rows:
//   pipeline_1gpu    Pipeline<uint32_t> with default options on GPU 0
//   pipeline_2gpu    the same with devices = {0, 1}
//   hand_2gpu        a hand-written loop, one host thread per GPU, each GPU
//                    its half, chunks depth-first over S streams with a device
//                    slot per stream; the best (chunk, S) of a sweep
//   copies_2gpu      transfer-bound only: the copies alone, both GPUs both ways
//                    at once, 64 MiB each, one thread per GPU (the floor this run reaches)
// The sweep runs first (median of 3 per configuration); then R rounds, each
// running every row once in turn; medians with min and max. With --model (a
// file from `overlap probe --all-devices`), the probed floor is the bytes
// both ways over the host's both-ways rate.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "multi_gpu_affine.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using multi_gpu::affine;
using multi_gpu::clock_type;
using multi_gpu::iterated;
using multi_gpu::launch;
using multi_gpu::ms_since;
using multi_gpu::stats;
using multi_gpu::summarize;
using overlap::cuda::check;

/// The hand-written loop's buffers on one GPU: a device slot per stream.
struct hand_gpu {
  int device = 0;
  std::vector<cudaStream_t> streams;
  std::vector<std::uint32_t*> in, out;
  hand_gpu(int d, unsigned s, std::size_t chunk_elements) : device(d) {
    check(cudaSetDevice(d), "cudaSetDevice");
    for (unsigned i = 0; i < s; ++i) {
      cudaStream_t st = nullptr;
      check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
      streams.push_back(st);
      std::uint32_t* a = nullptr;
      std::uint32_t* b = nullptr;
      check(cudaMalloc(&a, chunk_elements * 4), "cudaMalloc");
      check(cudaMalloc(&b, chunk_elements * 4), "cudaMalloc");
      in.push_back(a);
      out.push_back(b);
    }
  }
  ~hand_gpu() {
    (void)cudaSetDevice(device);
    for (std::size_t i = 0; i < streams.size(); ++i) {
      (void)cudaStreamDestroy(streams[i]);
      (void)cudaFree(in[i]);
      (void)cudaFree(out[i]);
    }
  }
  hand_gpu(const hand_gpu&) = delete;
  hand_gpu& operator=(const hand_gpu&) = delete;
};

/// Runs one GPU's half depth-first: chunk c on stream c mod S.
void hand_half(hand_gpu& g, const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::size_t chunk,
               int k, bool kernel) {
  check(cudaSetDevice(g.device), "cudaSetDevice");
  const std::size_t s = g.streams.size();
  std::size_t c = 0;
  for (std::size_t off = 0; off < n; off += chunk, ++c) {
    const std::size_t len = std::min(chunk, n - off);
    cudaStream_t st = g.streams[c % s];
    check(cudaMemcpyAsync(g.in[c % s], in + off, len * 4, cudaMemcpyHostToDevice, st), "H2D");
    if (kernel) launch(g.in[c % s], g.out[c % s], len, k, st);
    check(
        cudaMemcpyAsync(out + off, kernel ? g.out[c % s] : g.in[c % s], len * 4, cudaMemcpyDeviceToHost, st),
        "D2H");
  }
  for (cudaStream_t st : g.streams) check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
}

/// Both GPUs' halves at once, one thread each; milliseconds from start to the last end.
double run_two(std::vector<hand_gpu*> gpus, const std::uint32_t* in, std::uint32_t* out, std::size_t n,
               std::size_t chunk, int k, bool kernel) {
  const std::size_t half = n / 2;
  const auto start = clock_type::now();
  std::thread second([&] { hand_half(*gpus[1], in + half, out + half, n - half, chunk, k, kernel); });
  hand_half(*gpus[0], in, out, half, chunk, k, kernel);
  second.join();
  return ms_since(start);
}

bool matches(const std::uint32_t* in, const std::uint32_t* out, std::size_t n, affine f) {
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i] != f.a * in[i] + f.b) {
      std::fprintf(stderr, "multi_gpu_pipeline: element %zu is %u, expected %u\n", i, out[i],
                   f.a * in[i] + f.b);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 1024;
  unsigned reps = 7;
  std::string model_path;
  std::string json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--mib-each-way") {
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (arg == "--reps") {
      reps = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    } else if (arg == "--model") {
      model_path = argv[i + 1];
    } else if (arg == "--json") {
      json_path = argv[i + 1];
    } else {
      std::fprintf(stderr,
                   "usage: multi_gpu_pipeline [--mib-each-way M] [--reps R] [--model F] [--json F]\n");
      return 2;
    }
  }
  if (mib == 0 || reps == 0 || argc % 2 == 0) {
    std::fprintf(stderr, "multi_gpu_pipeline: --mib-each-way and --reps take a number > 0\n");
    return 2;
  }
  if (overlap::cuda::device_count() < 2) {
    std::printf("{\"skipped\": \"needs 2 GPUs\"}\n");
    return 0;
  }
  try {
    const std::size_t n = mib * (std::size_t{1} << 20) / 4;
    overlap::cuda::pinned_buffer<std::uint32_t> input(n);
    overlap::cuda::pinned_buffer<std::uint32_t> output(n);
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (std::size_t i = 0; i < n; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      input.data()[i] = static_cast<std::uint32_t>(state) | 1U;  // never zero
    }
    const std::span<const std::uint32_t> in(input.data(), n);
    const std::span<std::uint32_t> out(output.data(), n);
    std::string json = "{\"mib_each_way\": " + std::to_string(mib) + ", \"reps\": " + std::to_string(reps);
    bool all_right = true;

    for (const int k : {1, 4096}) {
      const bool transfer = k == 1;
      const affine f = iterated(k);
      const auto stage = [k](std::span<const std::uint32_t> a, std::span<std::uint32_t> b,
                             overlap::cuda::stream_view s,
                             std::size_t) { launch(a.data(), b.data(), a.size(), k, s.get()); };
      overlap::cuda::pipeline_options one;
      overlap::cuda::pipeline_options two;
      two.devices = {0, 1};
      overlap::cuda::Pipeline<std::uint32_t> p1(one);
      overlap::cuda::Pipeline<std::uint32_t> p2(two);
      // The two-GPU Pipeline with its chunks given, beside the default's.
      std::vector<std::pair<std::string, std::unique_ptr<overlap::cuda::Pipeline<std::uint32_t>>>> sized;
      if (transfer) {
        for (const std::size_t chunk_mib : {4, 8}) {
          overlap::cuda::pipeline_options o = two;
          o.chunk_bytes = chunk_mib << 20;
          sized.emplace_back("pipeline_2gpu_" + std::to_string(chunk_mib) + "MiB",
                             std::make_unique<overlap::cuda::Pipeline<std::uint32_t>>(o));
        }
        // The hand loop's own layout: chunks round-robin over 2 streams, 8 MiB.
        overlap::cuda::pipeline_options rr = two;
        rr.chunk_bytes = std::size_t{8} << 20;
        rr.streams = 2;
        rr.assignment = overlap::cuda::stream_assignment::round_robin;
        sized.emplace_back("pipeline_2gpu_8MiB_rr2",
                           std::make_unique<overlap::cuda::Pipeline<std::uint32_t>>(rr));
      }
      const auto checked = [&](const char* row) {
        if (!matches(input.data(), output.data(), n, f)) {
          std::fprintf(stderr, "multi_gpu_pipeline: %s (k = %d) wrote a wrong element\n", row, k);
          all_right = false;
        }
        std::memset(output.data(), 0xA5, n * 4);
      };
      // The hand-written loop's sweep: median of 3 per (chunk, streams).
      std::ostringstream sweep;
      double best_ms = 1e300;
      std::size_t best_chunk = 0;
      unsigned best_streams = 0;
      for (const std::size_t chunk_mib : {2, 4, 8, 16, 32}) {
        for (const unsigned s : {2U, 3U, 4U}) {
          const std::size_t chunk = chunk_mib * (std::size_t{1} << 20) / 4;
          hand_gpu g0(0, s, chunk);
          hand_gpu g1(1, s, chunk);
          (void)run_two({&g0, &g1}, input.data(), output.data(), n, chunk, k, true);
          std::vector<double> t;
          t.reserve(3);
          for (int r = 0; r < 3; ++r)
            t.push_back(run_two({&g0, &g1}, input.data(), output.data(), n, chunk, k, true));
          checked("hand_2gpu sweep");
          const double m = summarize(t).median;
          sweep << (sweep.tellp() > 0 ? ", " : "") << "\"" << chunk_mib << "MiB_x" << s << "\": " << m;
          if (m < best_ms) {
            best_ms = m;
            best_chunk = chunk;
            best_streams = s;
          }
        }
      }
      hand_gpu g0(0, best_streams, best_chunk);
      hand_gpu g1(1, best_streams, best_chunk);
      // Copies alone at 64 MiB (the floor this run reaches), no kernel.
      const std::size_t floor_chunk = (std::size_t{64} << 20) / 4;
      hand_gpu c0(0, 2, floor_chunk);
      hand_gpu c1(1, 2, floor_chunk);
      check(cudaSetDevice(0), "cudaSetDevice");
      (void)p1.run(in, out, stage);
      (void)p2.run(in, out, stage);
      for (auto& [name, p] : sized) (void)p->run(in, out, stage);
      std::map<std::string, std::vector<double>> rows;
      for (unsigned r = 0; r < reps; ++r) {
        auto t = clock_type::now();
        (void)p1.run(in, out, stage);
        rows["pipeline_1gpu"].push_back(ms_since(t));
        checked("pipeline_1gpu");
        t = clock_type::now();
        (void)p2.run(in, out, stage);
        rows["pipeline_2gpu"].push_back(ms_since(t));
        checked("pipeline_2gpu");
        rows["hand_2gpu"].push_back(run_two({&g0, &g1}, input.data(), output.data(), n, best_chunk, k, true));
        checked("hand_2gpu");
        for (auto& [name, p] : sized) {
          t = clock_type::now();
          (void)p->run(in, out, stage);
          rows[name].push_back(ms_since(t));
          checked(name.c_str());
        }
        if (transfer) {
          rows["copies_2gpu"].push_back(
              run_two({&c0, &c1}, input.data(), output.data(), n, floor_chunk, k, false));
          std::memset(output.data(), 0xA5, n * 4);
        }
      }
      std::ostringstream o;
      o << ", \"" << (transfer ? "transfer_bound" : "compute_bound") << R"(": {"k": )" << k
        << R"(, "hand_best": {"chunk_mib": )" << best_chunk * 4 / (1 << 20)
        << ", \"streams\": " << best_streams << "}, \"hand_sweep_ms\": {" << sweep.str() << "}";
      std::map<std::string, stats> s;
      for (const auto& [row, t] : rows) {
        s[row] = summarize(t);
        o << ", \"" << row << R"(_ms": {"median": )" << s[row].median << ", \"min\": " << s[row].min
          << ", \"max\": " << s[row].max << "}";
      }
      o << ", \"two_over_one_throughput\": " << s["pipeline_1gpu"].median / s["pipeline_2gpu"].median
        << ", \"pipeline_2gpu_over_hand\": " << s["pipeline_2gpu"].median / s["hand_2gpu"].median;
      if (transfer) {
        o << ", \"pipeline_2gpu_over_copies\": " << s["pipeline_2gpu"].median / s["copies_2gpu"].median;
        if (!model_path.empty()) {
          const overlap::DeviceModel model = overlap::DeviceModel::load(model_path);
          if (model.host) {
            const double floor_ms =
                2.0 * static_cast<double>(n) * 4 / (model.host->both_gigabytes_per_second * 1e6);
            o << ", \"probed_floor_ms\": " << floor_ms
              << ", \"pipeline_2gpu_over_probed_floor\": " << s["pipeline_2gpu"].median / floor_ms;
          }
        }
      }
      o << "}";
      json += o.str();
      std::fprintf(stderr, "%s done\n", transfer ? "transfer-bound" : "compute-bound");
    }
    json += std::string(", \"every_element_right\": ") + (all_right ? "true" : "false") + "}\n";
    std::fputs(json.c_str(), stdout);
    if (!json_path.empty()) std::ofstream(json_path) << json;
    return all_right ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multi_gpu_pipeline: %s\n", e.what());
    return 1;
  }
}
