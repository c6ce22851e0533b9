#include "overlap/cuda/memory.hpp"

#include <fmt/format.h>

namespace overlap::cuda {

bool is_pinned(const void* pointer) {
  cudaPointerAttributes attributes{};
  check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  // Registered and cudaMallocHost memory both report cudaMemoryTypeHost;
  // plain malloc'd memory reports cudaMemoryTypeUnregistered.
  return attributes.type == cudaMemoryTypeHost;
}

namespace detail {

void* allocate_pinned(std::size_t bytes, unsigned flags) {
  void* pointer = nullptr;
  if (bytes == 0) return nullptr;
  check(cudaHostAlloc(&pointer, bytes, flags), "cudaHostAlloc", fmt::format("{} bytes", bytes));
  return pointer;
}

void free_pinned(void* pointer) noexcept {
  if (pointer != nullptr) (void)cudaFreeHost(pointer);
}

namespace {

bool supports_stream_ordered_allocation() {
  int device = 0;
  int supported = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess)
    return false;
  return supported != 0;
}

}  // namespace

void* allocate_device(std::size_t bytes, cudaStream_t stream) {
  void* pointer = nullptr;
  if (bytes == 0) return nullptr;
  if (supports_stream_ordered_allocation()) {
    check(cudaMallocAsync(&pointer, bytes, stream), "cudaMallocAsync", fmt::format("{} bytes", bytes));
  } else {
    check(cudaMalloc(&pointer, bytes), "cudaMalloc", fmt::format("{} bytes", bytes));
  }
  return pointer;
}

void free_device(void* pointer, cudaStream_t stream) noexcept {
  if (pointer == nullptr) return;
  if (supports_stream_ordered_allocation()) {
    (void)cudaFreeAsync(pointer, stream);
  } else {
    (void)cudaFree(pointer);
  }
}

}  // namespace detail

host_registration::host_registration(const void* pointer, std::size_t bytes)
    : pointer_(const_cast<void*>(pointer)) {
  // cudaHostRegister takes a non-const pointer but does not write through it.
  check(cudaHostRegister(pointer_, bytes, cudaHostRegisterDefault), "cudaHostRegister",
        fmt::format("{} bytes at {}", bytes, pointer));
}

host_registration::~host_registration() {
  if (pointer_ != nullptr) (void)cudaHostUnregister(pointer_);
}

}  // namespace overlap::cuda
