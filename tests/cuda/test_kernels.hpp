// The kernels of the GPU tests that are not axpb, each behind a plain host
// launcher, so the test files themselves are C++ compiled by the host
// compiler: nvcc would parse each one (GoogleTest included) once per target
// architecture. The launchers enqueue and do not check: each call site
// checks cudaGetLastError() where its test asks for that.
#pragma once

#include <cstddef>
#include <cstdint>

#include "overlap/cuda/stream.hpp"

namespace overlap_test {

/// Holds each of `blocks` blocks for `us` microseconds of the GPU's global
/// timer, then writes out[i] = 2 * in[i] + 1 for i < n.
void launch_slow_axpb(const float* in, float* out, std::size_t n, long long us, unsigned blocks,
                      unsigned threads, overlap::cuda::stream_view stream);

/// One thread spins until the host sets *gate (mapped pinned memory), then
/// writes `value` to *out; after about 10 s of clock cycles it gives up and
/// writes -1, so a broken test fails instead of hanging.
void launch_wait_for_gate_then_write(const volatile int* gate, int* out, int value,
                                     overlap::cuda::stream_view stream);

/// out[i] = value for i < n.
void launch_fill(int* out, std::size_t n, int value, overlap::cuda::stream_view stream);

/// out[i] = ((in[4i] + in[4i+1]) + in[4i+2]) + in[4i+3] for i < outputs, in
/// that order, so the host repeats it exactly.
void launch_sum_of_four_doubles(const double* in, double* out, std::size_t outputs,
                                overlap::cuda::stream_view stream);

/// out[i] = in[i] * a + b (wrapping) for i < n, over `blocks` blocks (0 is a
/// bad configuration, for failure tests).
void launch_affine_u32(const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::uint32_t a,
                       std::uint32_t b, unsigned blocks, overlap::cuda::stream_view stream);

/// How launch_combine joins its two inputs.
enum class combine_op { add, multiply };

/// out[i] = x[i] + y[i] or x[i] * y[i] (wrapping) for i < n.
void launch_combine(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out, std::size_t n,
                    combine_op op, overlap::cuda::stream_view stream);

/// out[0] = the sum of x[i] ^ (y[i] * 3) over i < n (wrapping, so exact in
/// any order), in one block of 256 threads.
void launch_reduce(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out, std::size_t n,
                   overlap::cuda::stream_view stream);

/// Whether launch_rows adds the row above its first from `out`.
enum class row_boundary { none, add_row_above };

/// Rows [first, last) of a `cols`-wide matrix: out = in * 2 + 1, plus the row
/// above `first` of `out` (which another kernel wrote) with add_row_above.
void launch_rows(const std::uint32_t* in, std::uint32_t* out, std::size_t cols, std::size_t first,
                 std::size_t last, row_boundary boundary, overlap::cuda::stream_view stream);

/// One block of 32 threads spins for `ns` nanoseconds of the GPU's global
/// timer, then writes `value` to *out: small, so independent spins run side
/// by side on the SMs.
void launch_spin(std::uint32_t* out, unsigned long long ns, std::uint32_t value,
                 overlap::cuda::stream_view stream);

}  // namespace overlap_test
