// What the test apps of `overlap audit` share (tests/apps/*.cu).
//
// Each app is a small CUDA program of the kind a user writes, with no
// overlap library in it: `overlap trace` / `overlap audit` run it unmodified.
// Most plant one performance trap or race and, given --repaired, run the same
// work without it. This header holds what every app needs and none of the
// traps: checked CUDA calls, fixed-seed random data, the y = 2x + 1 and "busy"
// kernels with their host references, exact verification, a timer, and the
// chunked pipeline the clean apps issue.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

/// Every CUDA call of an app goes through CHECK: on an error it names the
/// call and where it was made, and exits with status 3.
#define CHECK(call) ::app::check_call((call), #call, __FILE__, __LINE__)

namespace app {

inline const char* program = "app";  ///< the app's name in messages (set by Args)

inline void check_call(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s failed at %s:%d: %s (%s)\n", program, call, file, line,
               cudaGetErrorName(status), cudaGetErrorString(status));
  std::exit(3);
}

// --- command line ----------------------------------------------------------------

/// The apps' arguments: flags and `--name N` values, anything else refused
/// (exit 2).
class Args {
 public:
  Args(int argc, char** argv, const char* name) : name_(name) {
    program = name;
    for (int i = 1; i < argc; ++i) args_.emplace_back(argv[i]);
  }

  /// True when `flag` was given (and consumes it).
  bool flag(std::string_view flag) {
    for (auto it = args_.begin(); it != args_.end(); ++it) {
      if (*it == flag) {
        args_.erase(it);
        return true;
      }
    }
    return false;
  }

  /// The positive integer after `flag`, or `fallback` when it is absent.
  std::size_t value(std::string_view flag, std::size_t fallback) {
    for (auto it = args_.begin(); it != args_.end(); ++it) {
      if (*it != flag) continue;
      if (it + 1 == args_.end()) fail(std::string(flag) + " needs a value");
      const std::string text = *(it + 1);
      char* end = nullptr;
      const unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || text[0] == '-' || *end != '\0' || parsed == 0)
        fail(std::string(flag) + " needs a positive integer, not '" + text + "'");
      args_.erase(it, it + 2);
      return static_cast<std::size_t>(parsed);
    }
    return fallback;
  }

  /// Refuses whatever was not read.
  void finish() const {
    if (!args_.empty()) fail("unknown argument '" + args_.front() + "'");
  }

  /// Reads --repaired (run the twin without the trap), then finish().
  bool repaired() {
    repaired_ = flag("--repaired");
    finish();
    return repaired_;
  }

  /// The app's one line of output: "app_x[ repaired]: ok 12.345 ms".
  void print_ok(double elapsed_ms) const {
    std::printf("%s%s: ok %.3f ms\n", name_, repaired_ ? " repaired" : "", elapsed_ms);
    std::fflush(stdout);
  }

  [[noreturn]] void fail(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\n", name_, message.c_str());
    std::exit(2);
  }

 private:
  const char* name_;
  std::vector<std::string> args_;
  bool repaired_ = false;
};

// --- sizes and chunks --------------------------------------------------------------

constexpr std::size_t MiB = std::size_t{1} << 20;

/// 64 MiB of floats and 12345 more, so no chunk count used here divides it:
/// every pipeline ends with a short remainder chunk.
constexpr std::size_t default_elements = 64 * MiB / sizeof(float) + 12345;

/// A contiguous piece of the data, in elements.
struct Chunk {
  std::size_t offset = 0;
  std::size_t count = 0;
  [[nodiscard]] std::size_t bytes() const { return count * sizeof(float); }
};

/// `chunks` chunks of n / chunks elements, then the remainder (if any) as
/// one more, shorter chunk.
inline std::vector<Chunk> split(std::size_t n, std::size_t chunks) {
  const std::size_t size = n / chunks > 0 ? n / chunks : 1;
  std::vector<Chunk> plan;
  for (std::size_t offset = 0; offset < n; offset += size)
    plan.push_back({offset, std::min(size, n - offset)});
  return plan;
}

// --- memory and streams ------------------------------------------------------------

template <typename T>
T* alloc_pinned(std::size_t n) {
  void* p = nullptr;
  CHECK(cudaMallocHost(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}

template <typename T>
T* alloc_device(std::size_t n) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}

inline void free_pinned(void* p) {
  CHECK(cudaFreeHost(p));
}
inline void free_device(void* p) {
  CHECK(cudaFree(p));
}

/// `count` streams created with `flags` (cudaStreamNonBlocking, or
/// cudaStreamDefault for blocking streams, as cudaStreamCreate makes).
inline std::vector<cudaStream_t> create_streams(std::size_t count, unsigned flags) {
  std::vector<cudaStream_t> streams(count);
  for (cudaStream_t& s : streams) CHECK(cudaStreamCreateWithFlags(&s, flags));
  return streams;
}

inline void synchronize_streams(const std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) CHECK(cudaStreamSynchronize(s));
}

inline void destroy_streams(const std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) CHECK(cudaStreamDestroy(s));
}

// --- data ----------------------------------------------------------------------------

/// splitmix64: a fast, seeded generator (filling 64 MiB takes tens of
/// milliseconds, not seconds, so it adds little to a traced run).
inline std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Random floats of magnitude 0.5 to 1000, either sign: never zero.
inline void fill_random(float* data, std::size_t n, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t u = next_random(state);
    const float magnitude = 0.5F + static_cast<float>(u >> 40) * (999.5F / 16777216.0F);
    const auto sign = static_cast<std::uint32_t>(u & 1U) << 31U;  // branch-free: the sign is a coin toss
    data[i] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
  }
}

/// Random odd (so never zero) 32-bit integers.
inline void fill_random(std::uint32_t* data, std::size_t n, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<std::uint32_t>(next_random(state) >> 32) | 1U;
}

/// Checks every element: got[i] must equal expected(i) exactly. On a
/// mismatch names the first and counts them, and exits with status 1.
template <typename T, typename Expected>
void verify(const char* what, const T* got, std::size_t n, Expected&& expected) {
  std::size_t wrong = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(got[i] == expected(i)) && wrong++ == 0) first = i;
  }
  if (wrong == 0) return;
  std::fprintf(
      stderr, "%s: wrong %s: %zu of %zu elements differ; the first at index %zu is %.9g, expected %.9g\n",
      program, what, wrong, n, first, static_cast<double>(got[first]), static_cast<double>(expected(first)));
  std::exit(1);
}

// --- kernels -------------------------------------------------------------------------

constexpr unsigned threads_per_block = 256;

/// Blocks for a grid-stride loop over n elements (at most 4096).
inline unsigned blocks_for(std::size_t n) {
  const std::size_t blocks = (n + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

/// y = 2x + 1, on the host (the reference) and in kernels. 2x is exact, so
/// the device's result (fused into one multiply-add or not) equals the
/// host's bit for bit.
__host__ __device__ inline float scale_reference(float x) {
  return 2.0F * x + 1.0F;
}

/// The busy kernel's step: a 32-bit linear congruential generator.
constexpr std::uint32_t busy_multiplier = 1664525U;
constexpr std::uint32_t busy_increment = 1013904223U;

/// busy_kernel's result for one element, by jumping the generator ahead
/// `iterations` steps in O(log iterations) (Brown, "Random number generation
/// with arbitrary strides", 1994).
inline std::uint32_t busy_reference(std::uint32_t x, std::uint32_t iterations) {
  std::uint32_t multiplier = 1;  // of the steps taken so far
  std::uint32_t increment = 0;
  std::uint32_t step_multiplier = busy_multiplier;  // of 2^k steps
  std::uint32_t step_increment = busy_increment;
  for (std::uint32_t left = iterations; left > 0; left >>= 1U) {
    if ((left & 1U) != 0) {
      multiplier *= step_multiplier;
      increment = increment * step_multiplier + step_increment;
    }
    step_increment = (step_multiplier + 1U) * step_increment;
    step_multiplier *= step_multiplier;
  }
  return multiplier * x + increment;
}

}  // namespace app

// The kernels live outside any namespace: the audit labels a kernel with its
// demangled name, and "scale_kernel" reads better than "app::scale_kernel".

/// y = 2x + 1.
__global__ void scale_kernel(const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = app::scale_reference(x[i]);
}

/// Applies the generator's step `iterations` times to each element: a chain
/// of dependent integer multiply-adds, so its time grows linearly with
/// `iterations` (a few cycles each, about 2-3 ns on an H100) and does not
/// depend on the number of blocks while there is at most one block per SM.
/// Launched with a few blocks it leaves the other SMs to other streams. The
/// step's constants come in as parameters: were they compile-time constants,
/// the compiler could fold an unrolled run of steps into one multiply-add.
__global__ void busy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                            std::uint32_t iterations, std::uint32_t multiplier, std::uint32_t increment) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint32_t v = in[i];
    for (std::uint32_t k = 0; k < iterations; ++k) v = v * multiplier + increment;
    out[i] = v;
  }
}

namespace app {

/// scale_kernel over n elements; `blocks` 0 takes blocks_for(n).
inline void launch_scale(const float* x, float* y, std::size_t n, cudaStream_t stream, unsigned blocks = 0) {
  scale_kernel<<<blocks != 0 ? blocks : blocks_for(n), threads_per_block, 0, stream>>>(x, y, n);
  CHECK(cudaGetLastError());
}

/// Checks out[i] == 2 * in[i] + 1 for every element.
inline void verify_scaled(const float* in, const float* out, std::size_t n, const char* what = "output") {
  verify(what, out, n, [in](std::size_t i) { return scale_reference(in[i]); });
}

/// busy_kernel with `blocks` blocks of threads_per_block threads, whatever n is.
inline void launch_busy(const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::uint32_t iterations,
                        unsigned blocks, cudaStream_t stream) {
  busy_kernel<<<blocks, threads_per_block, 0, stream>>>(in, out, n, iterations, busy_multiplier,
                                                        busy_increment);
  CHECK(cudaGetLastError());
}

// --- the clean pipeline ------------------------------------------------------------

/// One chunk of y = 2x + 1 on `stream`: upload, kernel (of `blocks` blocks;
/// 0: as many as the chunk needs), download.
inline void issue_chunk(const float* h_in, float* d_in, float* d_out, float* h_out, const Chunk& c,
                        cudaStream_t stream, unsigned blocks = 0) {
  CHECK(cudaMemcpyAsync(d_in + c.offset, h_in + c.offset, c.bytes(), cudaMemcpyHostToDevice, stream));
  launch_scale(d_in + c.offset, d_out + c.offset, c.count, stream, blocks);
  CHECK(cudaMemcpyAsync(h_out + c.offset, d_out + c.offset, c.bytes(), cudaMemcpyDeviceToHost, stream));
}

/// Every chunk in turn, depth-first: chunk k's upload, kernel and download
/// on streams[k % streams.size()], so chunk k + 1's upload overlaps chunk
/// k's kernel and download. Each chunk keeps its stream from one call to the
/// next, so calling this again reuses every buffer in stream order.
inline void issue_pipeline(const float* h_in, float* d_in, float* d_out, float* h_out,
                           const std::vector<Chunk>& plan, const std::vector<cudaStream_t>& streams) {
  for (std::size_t k = 0; k < plan.size(); ++k)
    issue_chunk(h_in, d_in, d_out, h_out, plan[k], streams[k % streams.size()]);
}

/// A small clean pipeline from start to end: n random floats through
/// y = 2x + 1 in 4 chunks on 2 non-blocking streams, waited for and checked,
/// `rounds` times over the same buffers with `between()` called between two
/// rounds, then everything freed. For the apps that test how the tracer
/// copes with the process (a crash, a signal, a fork) rather than with its
/// CUDA work. Nothing is allocated or freed between rounds: the device
/// would sit idle while the host is in those calls.
template <typename Between>
void run_small_pipeline(std::size_t n, std::uint64_t seed, int rounds, Between&& between) {
  float* h_in = alloc_pinned<float>(n);
  float* h_out = alloc_pinned<float>(n);
  float* d_in = alloc_device<float>(n);
  float* d_out = alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = create_streams(2, cudaStreamNonBlocking);
  fill_random(h_in, n, seed);
  for (int round = 0; round < rounds; ++round) {
    if (round > 0) between();
    issue_pipeline(h_in, d_in, d_out, h_out, split(n, 4), streams);
    synchronize_streams(streams);
    verify_scaled(h_in, h_out, n);
  }
  destroy_streams(streams);
  free_device(d_out);
  free_device(d_in);
  free_pinned(h_out);
  free_pinned(h_in);
}

inline void run_small_pipeline(std::size_t n, std::uint64_t seed) {
  run_small_pipeline(n, seed, 1, [] {});
}

// --- timing ----------------------------------------------------------------------------

/// Host wall time since construction.
class Timer {
 public:
  [[nodiscard]] double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace app
