// overlap::cuda_error: a failed CUDA call, with what it was doing.
//
// Every runtime call in the CUDA layer goes through check(), which throws a
// cuda_error carrying the status, the call and the op/stream/chunk it served.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "overlap/core/error.hpp"

namespace overlap {

/// A CUDA runtime call failed.
class cuda_error : public error {
 public:
  /// `call` is the API call ("cudaMemcpyAsync"), `context` what it served
  /// ("H2D of chunk 3 on stream 2"); both appear in what().
  cuda_error(cudaError_t status, std::string_view call, std::string_view context);

  /// The status the call returned (never cudaSuccess).
  [[nodiscard]] cudaError_t status() const noexcept { return status_; }
  /// The API call that failed, e.g. "cudaMemcpyAsync".
  [[nodiscard]] const std::string& call() const noexcept { return call_; }
  /// What the call served; empty when none was given.
  [[nodiscard]] const std::string& context() const noexcept { return context_; }

 private:
  cudaError_t status_;
  std::string call_;
  std::string context_;
};

namespace cuda {

/// Throws cuda_error unless `status` is cudaSuccess.
inline void check(cudaError_t status, std::string_view call, std::string_view context = {}) {
  if (status != cudaSuccess) {
    // The failed call also left `status` as the thread's last error; the
    // exception reports it now, so clear it, or a later cudaGetLastError()
    // (the Pipeline's check after a stage's launch) would blame it on
    // unrelated work.
    (void)cudaGetLastError();
    throw cuda_error(status, call, context);
  }
}

/// Number of CUDA devices; 0 when there is none or no driver (never throws).
[[nodiscard]] int device_count() noexcept;

}  // namespace cuda
}  // namespace overlap
