// overlap::cuda::device_scope: a GPU made current for a scope, the one before
// restored after. Work spread over several GPUs (a Pipeline's or a Feed's
// parts, the host probe) runs each GPU's share on a thread of its own under
// one of these, so that every allocation, stream and launch lands on it.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::cuda {

/// Makes `device` current for its scope and restores the one before.
class device_scope {
 public:
  /// Throws cuda_error naming the GPU when it cannot be made current.
  explicit device_scope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice", "before switching GPU");
    check(cudaSetDevice(device), "cudaSetDevice", "GPU " + std::to_string(device));
  }
  ~device_scope() { (void)cudaSetDevice(previous_); }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;
  device_scope(device_scope&&) = delete;
  device_scope& operator=(device_scope&&) = delete;

 private:
  int previous_ = 0;
};

/// device_scope for destructors, which must not throw: makes `device`
/// current when it can and restores the one before; when it cannot, nothing
/// is switched, and what is freed under it goes where the runtime takes it.
/// Objects that own buffers or streams of one GPU free them under this, so
/// that a thread whose current GPU is another frees nothing there.
class cleanup_device_scope {
 public:
  /// Makes `device` current if it can; never throws.
  explicit cleanup_device_scope(int device) noexcept
      : switched_(cudaGetDevice(&previous_) == cudaSuccess && cudaSetDevice(device) == cudaSuccess) {}
  ~cleanup_device_scope() {
    if (switched_) (void)cudaSetDevice(previous_);
  }
  cleanup_device_scope(const cleanup_device_scope&) = delete;
  cleanup_device_scope& operator=(const cleanup_device_scope&) = delete;
  cleanup_device_scope(cleanup_device_scope&&) = delete;
  cleanup_device_scope& operator=(cleanup_device_scope&&) = delete;

 private:
  int previous_ = 0;
  bool switched_;
};

namespace detail {

/// Checks a list of GPUs to spread work over (pipeline_options::devices,
/// feed_options::devices): each visible, none twice. Throws invalid_input
/// naming the entry ("devices[1]: 7 is not a GPU here (2 visible: 0 to 1)").
inline void check_device_list(const std::vector<int>& devices) {
  int visible = 0;
  check(cudaGetDeviceCount(&visible), "cudaGetDeviceCount", "checking the devices to run on");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int d = devices[i];
    const std::string entry = "devices[" + std::to_string(i) + "]: ";
    if (d < 0 || d >= visible)
      throw invalid_input(entry + std::to_string(d) + " is not a GPU here (" + std::to_string(visible) +
                          " visible: 0 to " + std::to_string(visible - 1) + ")");
    for (std::size_t k = 0; k < i; ++k) {
      if (devices[k] == d) throw invalid_input(entry + "GPU " + std::to_string(d) + " is listed twice");
    }
  }
}

}  // namespace detail

}  // namespace overlap::cuda
