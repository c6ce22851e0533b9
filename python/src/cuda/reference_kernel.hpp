// The benchmark's reference stage: y = 2x + 1 over float32, launched from
// C++ so that overlap.bench can time the C++ Pipeline in the same process.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace overlap::python {

/// Launches y = 2x + 1 over `count` floats on `stream`; throws overlap::error
/// naming the launch if it fails.
void launch_reference_affine(const float* in, float* out, std::size_t count, cudaStream_t stream);

}  // namespace overlap::python
