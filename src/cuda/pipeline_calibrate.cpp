#include "pipeline_calibrate.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::cuda::detail {

namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// Holds a stream while launches are queued behind it, so the host's launch
// cost stays out of their timing: a host function that the stream runs
// first and that returns once the gate opens (or after two seconds, so a
// forgotten gate cannot hang the device). The destructor opens the gate and
// waits for the stream, so the callback never outlives the gate.
class stream_gate {
 public:
  explicit stream_gate(stream_view s) : stream_(s) {
    check(cudaLaunchHostFunc(s.get(), &stream_gate::wait, this), "cudaLaunchHostFunc", "holding the stream");
  }
  ~stream_gate() {
    open();
    (void)cudaStreamSynchronize(stream_.get());  // errors surface at the caller's next check
  }
  stream_gate(const stream_gate&) = delete;
  stream_gate& operator=(const stream_gate&) = delete;
  stream_gate(stream_gate&&) = delete;
  stream_gate& operator=(stream_gate&&) = delete;

  void open() noexcept { open_.store(true, std::memory_order_release); }

 private:
  static void CUDART_CB wait(void* self) {
    const auto& gate = *static_cast<const stream_gate*>(self);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!gate.open_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  }

  stream_view stream_;
  std::atomic<bool> open_{false};
};

// Input elements of each size timed: whole units, within the input, distinct.
std::vector<std::size_t> calibration_sizes(const erased_run& run, std::size_t unit) {
  std::vector<std::size_t> sizes;
  const std::size_t element = run.input_element_bytes;
  for (const std::size_t bytes : {256 * KiB, MiB, 4 * MiB, 16 * MiB}) {
    const std::size_t elements = std::min(bytes / element / unit * unit, run.input_elements / unit * unit);
    if (elements > 0 && (sizes.empty() || elements > sizes.back())) sizes.push_back(elements);
  }
  return sizes;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::optional<KernelFit> calibrate_stage(const erased_run& run, const output_ratio& ratio,
                                         const erased_stage& stage) {
  const std::vector<std::size_t> sizes = calibration_sizes(run, ratio.in);
  if (sizes.size() < 2) return std::nullopt;
  const std::size_t largest = sizes.back();
  const std::size_t largest_out = largest * ratio.out / ratio.in;

  const stream s(stream::options{stream_sync::non_blocking, 0});
  device_buffer<std::byte> in(largest * run.input_element_bytes, s);
  device_buffer<std::byte> out(std::max<std::size_t>(1, largest_out * run.output_element_bytes), s);
  // The user's own data: a kernel's time may depend on its values.
  check(cudaMemcpyAsync(in.data(), run.input, largest * run.input_element_bytes, cudaMemcpyHostToDevice,
                        s.get()),
        "cudaMemcpyAsync", "copying the input's first chunk for calibration");
  s.synchronize();

  event start(event_timing::enabled);
  event end(event_timing::enabled);
  std::vector<KernelSample> samples;
  for (const std::size_t elements : sizes) {
    const std::size_t bytes = elements * run.input_element_bytes;
    const auto launches = static_cast<unsigned>(std::clamp<std::size_t>(64 * MiB / bytes, 2, 16));
    std::vector<double> per_launch;
    for (int rep = 0; rep < 4; ++rep) {
      {
        stream_gate gate(s);
        start.record(s);
        for (unsigned i = 0; i < launches; ++i) {
          stage(in.data(), elements, out.data(), elements * ratio.out / ratio.in, s, 0);
          check(cudaGetLastError(), "kernel launch in the stage", "calibrating the stage");
        }
        end.record(s);
      }  // the gate opens; its destructor waits for the stream
      if (rep > 0)
        per_launch.push_back(static_cast<double>(end.elapsed_since(start)) / launches);  // 0 warms up
    }
    samples.push_back({bytes, median_of(per_launch)});
  }

  int device = 0;
  int sm_count = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  // One full wave of a grid of one element per thread: SMs x resident threads.
  std::vector<std::uint64_t> waves;
  for (const std::uint64_t threads_per_sm : {256, 512, 1024, 2048}) {
    waves.push_back(static_cast<std::uint64_t>(sm_count) * threads_per_sm * run.input_element_bytes);
  }
  return fit_kernel_cost(samples, waves);
}

}  // namespace overlap::cuda::detail
