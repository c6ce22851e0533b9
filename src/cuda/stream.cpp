#include "overlap/cuda/stream.hpp"

#include <utility>

#include "overlap/cuda/error.hpp"

namespace overlap::cuda {

void stream_view::synchronize() const {
  check(cudaStreamSynchronize(handle_), "cudaStreamSynchronize");
}

bool stream_view::is_idle() const {
  const cudaError_t status = cudaStreamQuery(handle_);
  if (status == cudaErrorNotReady) return false;
  check(status, "cudaStreamQuery");
  return true;
}

int stream_view::device() const {
  int device = 0;
  check(cudaStreamGetDevice(handle_, &device), "cudaStreamGetDevice");
  return device;
}

stream::stream(options opts) {
  const unsigned flags = opts.sync == stream_sync::non_blocking ? cudaStreamNonBlocking : cudaStreamDefault;
  check(cudaStreamCreateWithPriority(&handle_, flags, opts.priority), "cudaStreamCreateWithPriority");
}

stream::~stream() {
  if (handle_ != nullptr) (void)cudaStreamDestroy(handle_);  // destructors do not throw
}

stream::stream(stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

stream& stream::operator=(stream&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

}  // namespace overlap::cuda
