// Host and device memory: pinned buffers, in-place registration, device
// buffers, and telling pinned from pageable memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>

#include "overlap/cuda/error.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::cuda {

/// True when `pointer` is page-locked host memory the GPU can DMA from
/// (cudaMallocHost, cudaHostAlloc or cudaHostRegister), false for pageable.
[[nodiscard]] bool is_pinned(const void* pointer);

/// Untyped owners; the typed wrappers below add the element type.
namespace detail {
void* allocate_pinned(std::size_t bytes, unsigned flags);
void free_pinned(void* pointer) noexcept;
void* allocate_device(std::size_t bytes, cudaStream_t stream);
void free_device(void* pointer, cudaStream_t stream) noexcept;
}  // namespace detail

/// Page-locked host memory for `size` elements of T (cudaHostAlloc).
template <typename T>
class pinned_buffer {
 public:
  pinned_buffer() = default;
  /// `flags` are cudaHostAlloc flags (cudaHostAllocDefault, ...Portable, ...WriteCombined).
  explicit pinned_buffer(std::size_t size, unsigned flags = cudaHostAllocDefault)
      : data_(static_cast<T*>(detail::allocate_pinned(size * sizeof(T), flags))), size_(size) {}
  ~pinned_buffer() { detail::free_pinned(data_); }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  /// Takes ownership of `o`'s memory; `o` is left empty (null, size 0).
  pinned_buffer(pinned_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  /// Swaps memory with `o`, which frees this one's former memory when it goes.
  pinned_buffer& operator=(pinned_buffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }

  /// The first element; null when empty (size 0 or moved from).
  [[nodiscard]] T* data() noexcept { return data_; }
  /// The first element; null when empty (size 0 or moved from).
  [[nodiscard]] const T* data() const noexcept { return data_; }
  /// Elements held (not bytes).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Every element, as a span of host memory.
  [[nodiscard]] std::span<T> span() noexcept { return {data_, size_}; }
  /// Every element, as a span of host memory.
  [[nodiscard]] std::span<const T> span() const noexcept { return {data_, size_}; }
  /// Element `i`, unchecked.
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  /// Element `i`, unchecked.
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Page-locks existing host memory in place (cudaHostRegister) for the
/// object's lifetime, so async copies from it overlap.
class host_registration {
 public:
  host_registration() = default;
  /// Registers `bytes` bytes at `pointer` until the destructor unregisters them; the memory must outlive
  /// the object. Throws cuda_error (e.g. when the range is already registered).
  host_registration(const void* pointer, std::size_t bytes);
  ~host_registration();
  host_registration(const host_registration&) = delete;
  host_registration& operator=(const host_registration&) = delete;
  /// Takes over `o`'s registration; `o` is left empty and unregisters nothing.
  host_registration(host_registration&& o) noexcept : pointer_(std::exchange(o.pointer_, nullptr)) {}
  /// Swaps registrations with `o`, which unregisters this one's former range when it goes.
  host_registration& operator=(host_registration&& o) noexcept {
    std::swap(pointer_, o.pointer_);
    return *this;
  }

 private:
  void* pointer_ = nullptr;
};

/// Device memory for `size` elements of T, allocated and freed in stream
/// order (cudaMallocAsync) where the device supports it, else cudaMalloc.
template <typename T>
class device_buffer {
 public:
  device_buffer() = default;
  /// Allocates `size` elements in stream order on `stream` (nothing for 0); throws cuda_error. The
  /// destructor frees them on the same stream, which must outlive the buffer.
  device_buffer(std::size_t size, stream_view stream)
      : data_(static_cast<T*>(detail::allocate_device(size * sizeof(T), stream.get()))),
        size_(size),
        stream_(stream.get()) {}
  ~device_buffer() { detail::free_device(data_, stream_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  /// Takes ownership of `o`'s memory and stream; `o` is left empty (null, size 0).
  device_buffer(device_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), stream_(o.stream_) {}
  /// Swaps memory and streams with `o`, which frees this one's former memory when it goes.
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(stream_, o.stream_);
    return *this;
  }

  /// The first element, in device memory; null when empty (size 0 or moved from).
  [[nodiscard]] T* data() noexcept { return data_; }
  /// The first element, in device memory; null when empty (size 0 or moved from).
  [[nodiscard]] const T* data() const noexcept { return data_; }
  /// Elements held (not bytes).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Every element, as a span of device memory (not to be read on the host).
  [[nodiscard]] std::span<T> span() noexcept { return {data_, size_}; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace overlap::cuda
