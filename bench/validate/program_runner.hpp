// Issues a pipeline Program (make_pipeline_program) for real, op by op, in
// its issue order: the program the simulator predicts is the program that
// runs, with no second description of the schedule to drift from it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "overlap/core/program.hpp"

namespace overlap::validate {

/// Launches the stage on one chunk: device input, device output, elements, stream.
using chunk_kernel = std::function<void(const float*, float*, std::size_t, cudaStream_t)>;

/// The streams, events and device ring a Program needs, made once.
class program_runner {
 public:
  /// `host_in` and `host_out` are pinned; `slot_bytes` sizes each ring slot.
  program_runner(const Program& program, const float* host_in, float* host_out, std::size_t slot_bytes,
                 chunk_kernel kernel);
  ~program_runner();
  program_runner(const program_runner&) = delete;
  program_runner& operator=(const program_runner&) = delete;

  /// Issues every op and returns the host milliseconds from the first call
  /// to the end of the Program's final cudaDeviceSynchronize. Throws cuda_error.
  double run();
  /// Host milliseconds the last run() spent issuing, up to its final synchronize.
  [[nodiscard]] double last_issue_ms() const noexcept { return issue_ms_; }

 private:
  struct resources;
  const Program& program_;
  const float* host_in_;
  float* host_out_;
  chunk_kernel kernel_;
  std::unique_ptr<resources> r_;
  double issue_ms_ = 0.0;
};

}  // namespace overlap::validate
