#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::bench {

namespace {

__global__ void affine_rounds_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                                     unsigned rounds) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    std::uint32_t x = in[i];
    for (unsigned r = 0; r < rounds; ++r) {
      x = x * affine_mul + affine_add;
      // Opaque to the compiler, so that it cannot fold rounds together
      // (x * mul^2 + ...): each round costs its multiply-add.
      asm volatile("" : "+r"(x));
    }
    out[i] = x;
  }
}

// One full wave of blocks on the current GPU: as many as its SMs hold at
// once. A grid-stride loop over them does every element; a grid of a fixed
// size would leave the last of its waves partly empty, and one large launch
// (the compute floor) would pay for that tail where a chunked pipeline's
// overlapping kernels fill it.
unsigned full_wave_blocks(unsigned threads) {
  constexpr int most_gpus = 64;
  static std::array<std::atomic<unsigned>, most_gpus> known{};
  int device = 0;
  cuda::check(cudaGetDevice(&device), "cudaGetDevice");
  if (device < most_gpus) {
    if (const unsigned blocks = known[static_cast<std::size_t>(device)].load(); blocks > 0) return blocks;
  }
  int sms = 0;
  cuda::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute",
              "multiprocessor count");
  int per_sm = 0;
  cuda::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, affine_rounds_kernel,
                                                            static_cast<int>(threads), 0),
              "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const auto blocks = static_cast<unsigned>(std::max(1, sms * per_sm));
  if (device < most_gpus) known[static_cast<std::size_t>(device)].store(blocks);
  return blocks;
}

}  // namespace

void launch_affine_rounds(const std::uint32_t* in, std::uint32_t* out, std::size_t n, unsigned rounds,
                          cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned threads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>((n + threads - 1) / threads, full_wave_blocks(threads)));
  affine_rounds_kernel<<<blocks, threads, 0, stream>>>(in, out, n, rounds);
  cuda::check(cudaGetLastError(), "affine_rounds_kernel launch");
}

}  // namespace overlap::bench
