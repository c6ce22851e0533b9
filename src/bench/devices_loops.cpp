#include "devices_loops.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/device_scope.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::bench::detail {

void on_each_gpu(std::span<const int> devices, unsigned gpus, const std::function<void(unsigned g)>& f) {
  std::mutex failure_lock;
  std::exception_ptr failure;
  const auto body = [&](unsigned g) {
    try {
      const cuda::device_scope scope(devices[g]);
      f(g);
    } catch (...) {
      const std::lock_guard lock(failure_lock);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(gpus);
  for (unsigned g = 1; g < gpus; ++g) threads.emplace_back(body, g);
  body(0);  // the calling thread takes the first GPU
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

namespace {

// A new stream of GPU `device`.
cuda::stream stream_on(int device) {
  const cuda::device_scope scope(device);
  return {};
}

}  // namespace

share share_of(std::size_t n, unsigned gpus, unsigned g) noexcept {
  return {n * g / gpus, n * (g + 1) / gpus};
}

gpu_slots::gpu_slots(int device, unsigned streams, std::size_t slot_elements) : device_(device) {
  const cuda::device_scope scope(device);
  streams_.reserve(streams);
  for (unsigned s = 0; s < streams; ++s) {
    streams_.emplace_back();
    in_.emplace_back(slot_elements, streams_.back());
    out_.emplace_back(slot_elements, streams_.back());
  }
  for (const cuda::stream& s : streams_) s.synchronize();  // the slots exist before any stream uses them
}

gpu_slots::~gpu_slots() {
  // Freed on their own GPU, buffers before the streams they are freed on.
  const cuda::cleanup_device_scope on(device_);
  in_.clear();
  out_.clear();
  streams_.clear();
}

void gpu_slots::run_chunks(const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::size_t chunk,
                           unsigned rounds, work what) {
  const std::size_t slots = streams_.size();
  std::size_t c = 0;
  for (std::size_t offset = 0; offset < n; offset += chunk, ++c) {
    const std::size_t count = std::min(chunk, n - offset);
    const std::size_t slot = c % slots;
    const cuda::stream_view s = streams_[slot];
    std::uint32_t* const up = in_[slot].data();
    cuda::check(
        cudaMemcpyAsync(up, in + offset, count * sizeof(std::uint32_t), cudaMemcpyHostToDevice, s.get()),
        "cudaMemcpyAsync", "hand-written loop, upload");
    const std::uint32_t* down = up;
    if (what == work::copies_and_kernel) {
      launch_affine_rounds(up, out_[slot].data(), count, rounds, s.get());
      down = out_[slot].data();
    }
    cuda::check(
        cudaMemcpyAsync(out + offset, down, count * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s.get()),
        "cudaMemcpyAsync", "hand-written loop, download");
  }
  for (const cuda::stream& s : streams_) s.synchronize();
}

gpu_resident::gpu_resident(int device, const std::uint32_t* in, std::size_t n)
    : device_(device), stream_(stream_on(device)) {
  const cuda::device_scope scope(device);
  in_ = cuda::device_buffer<std::uint32_t>(n, stream_);
  out_ = cuda::device_buffer<std::uint32_t>(n, stream_);
  cuda::check(
      cudaMemcpyAsync(in_.data(), in, n * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream_.get()),
      "cudaMemcpyAsync", "the compute floor's upload");
  stream_.synchronize();
}

gpu_resident::~gpu_resident() {
  const cuda::cleanup_device_scope on(device_);
  in_ = {};
  out_ = {};
}

void gpu_resident::run_kernel(unsigned rounds) {
  launch_affine_rounds(in_.data(), out_.data(), in_.size(), rounds, stream_.get());
  stream_.synchronize();
}

void gpu_resident::download(std::uint32_t* out) {
  cuda::check(cudaMemcpyAsync(out, out_.data(), out_.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                              stream_.get()),
              "cudaMemcpyAsync", "the compute floor's download");
  stream_.synchronize();
}

}  // namespace overlap::bench::detail
