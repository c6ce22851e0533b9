// y = 2x + 1 on the device: the stage most GPU tests stream through a
// Pipeline. x * 2 is exact, so the device's output equals the host's
// reference bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "overlap/cuda/stream.hpp"

namespace overlap_test {

/// Launches out[i] = 2 * in[i] + 1 over in.size() elements on `stream` and
/// checks the launch (throws overlap::cuda_error).
void launch_axpb(std::span<const float> in, std::span<float> out, overlap::cuda::stream_view stream);

/// The same kernel with `blocks` x `threads` exactly as given and the launch
/// left unchecked: for tests of what a Pipeline does with a bad launch.
void launch_axpb_unchecked(std::span<const float> in, std::span<float> out, overlap::cuda::stream_view stream,
                           unsigned blocks, unsigned threads);

/// out[i] = in[4i] + in[4i+1] + in[4i+2] + in[4i+3] (wrapping) for every
/// element of `out`, on `stream`: a 4-to-1 reduction, exact on the host too.
void launch_sum_of_four(std::span<const std::uint32_t> in, std::span<std::uint32_t> out,
                        overlap::cuda::stream_view stream);

/// The host's y = 2x + 1 of every element: what launch_axpb must produce.
[[nodiscard]] std::vector<float> axpb_reference(std::span<const float> input);

}  // namespace overlap_test
