// The hand-written several-GPU runs of the devices section: each GPU's share
// of the data on a host thread of its own, in chunks depth-first over its
// streams (the loop a careful engineer writes first), the same with the
// kernel left out (the copies floor), and the kernel alone over data already
// on the GPU (the compute floor). Private to src/bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::bench::detail {

/// Runs f(g) for g in [0, gpus) at once, each on a thread of its own with
/// devices[g] current; rethrows the first failure after every thread ended.
void on_each_gpu(std::span<const int> devices, unsigned gpus, const std::function<void(unsigned g)>& f);

/// [begin, end) of GPU g's share when n elements are split evenly over `gpus`.
struct share {
  std::size_t begin = 0;  ///< first element
  std::size_t end = 0;    ///< one past the last
};
[[nodiscard]] share share_of(std::size_t n, unsigned gpus, unsigned g) noexcept;

/// One GPU's streams and a device slot (in and out) per stream, made on
/// that GPU; freed there when it goes.
class gpu_slots {
 public:
  /// `streams` streams and slots of `slot_elements` uint32 on GPU `device`; throws cuda_error.
  gpu_slots(int device, unsigned streams, std::size_t slot_elements);
  ~gpu_slots();
  gpu_slots(const gpu_slots&) = delete;
  gpu_slots& operator=(const gpu_slots&) = delete;
  gpu_slots(gpu_slots&&) = delete;
  gpu_slots& operator=(gpu_slots&&) = delete;

  /// Streams (and slots) on the GPU.
  [[nodiscard]] unsigned stream_count() const noexcept { return static_cast<unsigned>(streams_.size()); }

  /// What run_chunks issues per chunk.
  enum class work { copies_and_kernel, copies_only };

  /// in[0..n) -> out[0..n) in chunks of `chunk` elements, chunk c on stream
  /// c mod S: upload, `rounds` steps (or none: copies_only sends the upload
  /// back), download; then waits for every stream. The caller has made the
  /// GPU current.
  void run_chunks(const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::size_t chunk,
                  unsigned rounds, work what);

 private:
  int device_;
  std::vector<cuda::stream> streams_;
  std::vector<cuda::device_buffer<std::uint32_t>> in_;
  std::vector<cuda::device_buffer<std::uint32_t>> out_;
};

/// One GPU's share held on the GPU, for the kernel alone.
class gpu_resident {
 public:
  /// Uploads in[0..n) to GPU `device` and makes room for as much output; throws cuda_error.
  gpu_resident(int device, const std::uint32_t* in, std::size_t n);
  ~gpu_resident();
  gpu_resident(const gpu_resident&) = delete;
  gpu_resident& operator=(const gpu_resident&) = delete;
  gpu_resident(gpu_resident&&) = delete;
  gpu_resident& operator=(gpu_resident&&) = delete;

  /// `rounds` steps of every element, on the GPU; waits for them. The caller has made the GPU current.
  void run_kernel(unsigned rounds);
  /// Downloads the output to out[0..n); waits for it. The caller has made the GPU current.
  void download(std::uint32_t* out);

 private:
  int device_;
  cuda::stream stream_;
  cuda::device_buffer<std::uint32_t> in_;
  cuda::device_buffer<std::uint32_t> out_;
};

}  // namespace overlap::bench::detail
