// Streams: a non-owning stream_view and an owning RAII stream.
//
// stream_view cannot be made from 0 or nullptr by accident: the two default
// streams are named (stream_view::legacy_default(), per_thread_default()).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace overlap::cuda {

/// A non-owning handle to a CUDA stream, cheap to copy.
class stream_view {
 public:
  /// Views an existing stream. Use the named constants for the default streams.
  explicit stream_view(cudaStream_t handle) noexcept : handle_(handle) {}
  stream_view(std::nullptr_t) = delete;  // say legacy_default() or per_thread_default()
  stream_view(int) = delete;             // no stream 0 by accident

  /// The legacy default stream (cudaStreamLegacy): a barrier for blocking streams.
  [[nodiscard]] static stream_view legacy_default() noexcept { return stream_view(cudaStreamLegacy); }
  /// The calling thread's default stream (cudaStreamPerThread).
  [[nodiscard]] static stream_view per_thread_default() noexcept { return stream_view(cudaStreamPerThread); }

  /// The raw handle, for runtime calls and kernel launches.
  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  /// Blocks the host until the stream's work is done; throws cuda_error.
  void synchronize() const;
  /// True when all work is done (cudaStreamQuery), false while busy; throws on error.
  [[nodiscard]] bool is_idle() const;
  /// The GPU the stream belongs to (cudaStreamGetDevice; for a default
  /// stream, the current device); throws cuda_error.
  [[nodiscard]] int device() const;

  /// True when both view the same stream handle.
  friend bool operator==(stream_view a, stream_view b) noexcept { return a.handle_ == b.handle_; }

 private:
  cudaStream_t handle_;
};

/// Whether a new stream synchronizes with the legacy default stream.
enum class stream_sync { blocking, non_blocking };

/// An owned CUDA stream, destroyed with the object.
class stream {
 public:
  /// Named options rather than bare flags.
  struct options {
    /// Whether it synchronizes with the legacy default stream; non_blocking (the default) does not.
    stream_sync sync = stream_sync::non_blocking;
    /// CUDA priority: lower numbers are more urgent; 0 is the default.
    int priority = 0;
  };

  /// A non-blocking stream of the default priority; throws cuda_error.
  stream() : stream(options{}) {}
  /// Creates a stream on the current device (cudaStreamCreateWithPriority); throws cuda_error.
  explicit stream(options opts);
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  /// Takes ownership of `other`'s stream; `other` is left empty.
  stream(stream&& other) noexcept;
  /// Swaps streams with `other`, which destroys this one's former stream when it goes.
  stream& operator=(stream&& other) noexcept;

  /// A non-owning view, valid while this object owns the stream.
  [[nodiscard]] stream_view view() const noexcept { return stream_view(handle_); }
  /// Same as view().
  operator stream_view() const noexcept { return view(); }  // NOLINT: a stream is usable where a view is
  /// The raw handle (null when moved from); still owned by this object.
  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  /// Blocks the host until the stream's work is done; throws cuda_error.
  void synchronize() const { view().synchronize(); }

 private:
  cudaStream_t handle_ = nullptr;
};

}  // namespace overlap::cuda
