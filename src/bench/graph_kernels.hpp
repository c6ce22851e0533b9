// The kernels of `overlap bench`'s Graph rows (issue 13) and the host
// computations their outputs are checked against; defined in
// graph_branches.cu. Integer work, so every check is exact. Private to
// src/bench.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace overlap::bench::detail {

/// Threads per block of a branch kernel (one element per thread).
inline constexpr unsigned branch_threads = 256;

/// (a) One kernel of a branch: every element of data[0, n) goes through
/// `iterations` rounds of an LCG step and an xorshift, salted by `salt`, in
/// place. `blocks` blocks of branch_threads threads (a grid-stride loop
/// covers any n). Dependent integer rounds: compute-bound on few SMs, exact.
/// Throws cuda_error when the launch fails.
void launch_branch_step(std::uint32_t* data, std::size_t n, unsigned iterations, std::uint32_t salt,
                        unsigned blocks, cudaStream_t stream);
/// The host's result of launch_branch_step for one element.
[[nodiscard]] std::uint32_t branch_step_reference(std::uint32_t value, unsigned iterations,
                                                  std::uint32_t salt) noexcept;
/// The salt of kernel `kernel` of branch `branch`: distinct per kernel of a
/// branch, so that running its kernels out of order gives a different result.
[[nodiscard]] inline std::uint32_t branch_salt(unsigned branch, unsigned kernel) noexcept {
  return 0x9E3779B9U * (branch * 65537U + kernel + 1U);
}

/// (b) One tiny node: one thread sums in[0, count), mixes the sum with
/// `salt` and writes it to *out. One block of one thread: launch cost alone.
void launch_tiny_node(const std::uint32_t* in, std::uint32_t count, std::uint32_t* out, std::uint32_t salt,
                      cudaStream_t stream);
/// The host's result of launch_tiny_node over `count` values at `in`.
[[nodiscard]] std::uint32_t tiny_node_reference(const std::uint32_t* in, std::uint32_t count,
                                                std::uint32_t salt) noexcept;

}  // namespace overlap::bench::detail
