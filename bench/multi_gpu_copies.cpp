// Concurrent host<->device copies on every GPU, measured as a plain CUDA
// program would: one host thread per GPU, its own pinned buffers and
// streams, all threads starting together at a barrier, timed on the host
// clock from the barrier to the last GPU's finish. It shares no code with
// `overlap probe --all-devices` (which queues trains behind held GPUs and
// times them with events), so the two check each other.
//
//   multi_gpu_copies [--bytes MiB] [--copies N] [--reps R] [--gpus G]
//
// Prints one JSON object: per GPU alone and all GPUs at once, H2D, D2H and
// both ways, each the median (with min and max) of R runs, in GB/s
// (1 GB = 1e9 bytes). Exit 1 on a CUDA error, 2 on bad arguments.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "multi_gpu_copies: %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

using clock_type = std::chrono::steady_clock;

/// One GPU's buffers and streams, made on its own thread's device.
struct Gpu {
  int device = 0;
  std::size_t bytes = 0;
  unsigned copies = 0;
  void* host_in = nullptr;   // H2D sources
  void* host_out = nullptr;  // D2H destinations
  void* dev_in = nullptr;
  void* dev_out = nullptr;
  cudaStream_t up = nullptr;
  cudaStream_t down = nullptr;

  void setup() {
    check(cudaSetDevice(device), "cudaSetDevice");
    const std::size_t total = bytes * copies;
    check(cudaMallocHost(&host_in, total), "cudaMallocHost");
    check(cudaMallocHost(&host_out, total), "cudaMallocHost");
    check(cudaMalloc(&dev_in, total), "cudaMalloc");
    check(cudaMalloc(&dev_out, total), "cudaMalloc");
    std::memset(host_in, 0x5a, total);
    std::memset(host_out, 0x3c, total);
    check(cudaMemset(dev_out, 1, total), "cudaMemset");
    check(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  void teardown() const {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamDestroy(up), "cudaStreamDestroy");
    check(cudaStreamDestroy(down), "cudaStreamDestroy");
    check(cudaFree(dev_in), "cudaFree");
    check(cudaFree(dev_out), "cudaFree");
    check(cudaFreeHost(host_in), "cudaFreeHost");
    check(cudaFreeHost(host_out), "cudaFreeHost");
  }
  /// Issues the copies and waits for them (the device is current).
  void copy(bool h2d, bool d2h) const {
    for (unsigned i = 0; i < copies; ++i) {
      const std::size_t at = i * bytes;
      if (h2d)
        check(cudaMemcpyAsync(static_cast<char*>(dev_in) + at, static_cast<char*>(host_in) + at, bytes,
                              cudaMemcpyHostToDevice, up),
              "cudaMemcpyAsync H2D");
      if (d2h)
        check(cudaMemcpyAsync(static_cast<char*>(host_out) + at, static_cast<char*>(dev_out) + at, bytes,
                              cudaMemcpyDeviceToHost, down),
              "cudaMemcpyAsync D2H");
    }
    check(cudaStreamSynchronize(up), "cudaStreamSynchronize");
    check(cudaStreamSynchronize(down), "cudaStreamSynchronize");
  }
};

/// Runs `gpus` (by index into all) at once, one thread each, and returns the
/// total GB/s: all their bytes over the barrier-to-last-finish span.
double run_together(std::vector<Gpu>& all, const std::vector<int>& gpus, bool h2d, bool d2h) {
  std::barrier start(static_cast<std::ptrdiff_t>(gpus.size()) + 1);
  std::vector<clock_type::time_point> ends(gpus.size());
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    threads.emplace_back([&, k] {
      const Gpu& g = all[static_cast<std::size_t>(gpus[k])];
      check(cudaSetDevice(g.device), "cudaSetDevice");
      start.arrive_and_wait();
      g.copy(h2d, d2h);
      ends[k] = clock_type::now();
    });
  }
  start.arrive_and_wait();
  const auto begin = clock_type::now();
  for (auto& t : threads) t.join();
  const auto last = *std::max_element(ends.begin(), ends.end());
  const double seconds = std::chrono::duration<double>(last - begin).count();
  double bytes = 0.0;
  for (const int i : gpus) {
    const Gpu& g = all[static_cast<std::size_t>(i)];
    bytes += static_cast<double>(g.bytes) * g.copies * ((h2d ? 1 : 0) + (d2h ? 1 : 0));
  }
  return bytes / seconds / 1e9;
}

struct Stats {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {median, v.front(), v.back()};
}
std::string json_of(const Stats& s) {
  char text[128];
  std::snprintf(text, sizeof text, R"({"median": %.3f, "min": %.3f, "max": %.3f})", s.median, s.min, s.max);
  return text;
}

unsigned parse_count(const char* text, const char* flag) {
  char* end = nullptr;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0' || value == 0 || value > 100000) {
    std::fprintf(stderr, "multi_gpu_copies: %s: '%s' is not a count from 1 to 100000\n", flag, text);
    std::exit(2);
  }
  return static_cast<unsigned>(value);
}

}  // namespace

int main(int argc, char** argv) {
  unsigned mib = 64;
  unsigned copies = 8;
  unsigned reps = 7;
  unsigned want_gpus = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 < argc && arg == "--bytes") {
      mib = parse_count(argv[++i], "--bytes");
    } else if (i + 1 < argc && arg == "--copies") {
      copies = parse_count(argv[++i], "--copies");
    } else if (i + 1 < argc && arg == "--reps") {
      reps = parse_count(argv[++i], "--reps");
    } else if (i + 1 < argc && arg == "--gpus") {
      want_gpus = parse_count(argv[++i], "--gpus");
    } else {
      std::fprintf(stderr, "usage: multi_gpu_copies [--bytes MiB] [--copies N] [--reps R] [--gpus G]\n");
      return 2;
    }
  }
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (want_gpus > 0) count = std::min(count, static_cast<int>(want_gpus));
  std::vector<Gpu> gpus(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) {
    Gpu& g = gpus[static_cast<std::size_t>(d)];
    g.device = d;
    g.bytes = static_cast<std::size_t>(mib) << 20;
    g.copies = copies;
    g.setup();
  }
  std::vector<int> everyone(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) everyone[static_cast<std::size_t>(d)] = d;

  struct Mode {
    const char* name;
    bool h2d;
    bool d2h;
  };
  const Mode modes[] = {{"h2d", true, false}, {"d2h", false, true}, {"both", true, true}};
  std::string out = "{\"gpus\": " + std::to_string(count) +
                    ", \"bytes_per_copy\": " + std::to_string(static_cast<std::size_t>(mib) << 20) +
                    ", \"copies\": " + std::to_string(copies) + ", \"reps\": " + std::to_string(reps);
  std::string alone = ", \"alone\": [";
  for (int d = 0; d < count; ++d) {
    alone += d == 0 ? "{" : ", {";
    for (std::size_t m = 0; m < 3; ++m) {
      (void)run_together(gpus, {d}, modes[m].h2d, modes[m].d2h);  // warm-up
      std::vector<double> rates;
      for (unsigned r = 0; r < reps; ++r)
        rates.push_back(run_together(gpus, {d}, modes[m].h2d, modes[m].d2h));
      alone += std::string(m == 0 ? "" : ", ") + "\"" + modes[m].name + "_gbps\": " + json_of(stats(rates));
    }
    alone += "}";
  }
  out += alone + "]";
  std::string together = ", \"together\": {";
  for (std::size_t m = 0; m < 3; ++m) {
    (void)run_together(gpus, everyone, modes[m].h2d, modes[m].d2h);  // warm-up
    std::vector<double> rates;
    for (unsigned r = 0; r < reps; ++r)
      rates.push_back(run_together(gpus, everyone, modes[m].h2d, modes[m].d2h));
    together += std::string(m == 0 ? "" : ", ") + "\"" + modes[m].name + "_gbps\": " + json_of(stats(rates));
  }
  out += together + "}}\n";
  for (Gpu& g : gpus) g.teardown();
  std::fputs(out.c_str(), stdout);
  return 0;
}
