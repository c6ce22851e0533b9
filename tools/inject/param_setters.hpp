// The small setters that api_params' two describe files share: each fills
// the fields of one class of call into CallFields from already-read values.
//
// Internal to the injection library (runtime_params.cpp, driver_params.cpp);
// header-only so the per-entry-point switches stay flat and readable.
#pragma once

#include <cstdint>
#include <string_view>

#include "api_params.hpp"

namespace overlap::inject::params {

/// The parameter struct CUPTI handed over, as the type its callback id has.
template <typename P>
inline const P& args(const void* params) {
  return *static_cast<const P*>(params);
}

inline std::uint64_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

/// A driver pointer (CUdeviceptr) is an address already.
inline std::uint64_t address(unsigned long long p) {  // NOLINT(google-runtime-int): CUdeviceptr's type
  return p;
}

/// Where the two sides of a copy are, as the call states it.
struct Sides {
  CopySide src;
  CopySide dst;
};

inline constexpr Sides device_to_device{CopySide::device, CopySide::device};

/// A synchronous copy: it runs on a default stream, which the record names.
inline void set_copy(CallFields& f, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, Sides sides) {
  f.cls = CallClass::copy;
  f.dst = dst;
  f.src = src;
  f.bytes = bytes;
  f.src_side = sides.src;
  f.dst_side = sides.dst;
  f.has_stream = true;
}

inline void set_memset(CallFields& f, std::uint64_t dst, std::uint64_t bytes) {
  f.cls = CallClass::memset;
  f.dst = dst;
  f.bytes = bytes;
  f.has_stream = true;
}

inline void set_async(CallFields& f, CUstream stream) {
  f.async = true;
  f.has_stream = true;
  f.stream = stream;
}

inline void set_stream(CallFields& f, CallClass cls, CUstream stream) {
  f.cls = cls;
  f.has_stream = true;
  f.stream = stream;
}

inline void set_event(CallFields& f, CallClass cls, const void* event) {
  f.cls = cls;
  f.event = address(event);
}

inline void set_dims(CallFields& f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz) {
  f.has_dims = true;
  f.grid = {gx, gy, gz};
  f.block = {bx, by, bz};
}

template <typename Out>
inline void set_alloc(CallFields& f, std::string_view memory, Out* const* out, bool outputs,
                      std::uint64_t bytes) {
  f.cls = CallClass::alloc;
  f.memory = memory;
  f.bytes = bytes;
  if (outputs && out != nullptr) f.ptr = address(*out);
}

inline void set_device_alloc(CallFields& f, std::string_view memory, const CUdeviceptr* out, bool outputs,
                             std::uint64_t bytes) {
  f.cls = CallClass::alloc;
  f.memory = memory;
  f.bytes = bytes;
  if (outputs && out != nullptr) f.ptr = *out;
}

inline void set_free(CallFields& f, std::string_view memory, std::uint64_t ptr) {
  f.cls = CallClass::free;
  f.memory = memory;
  f.ptr = ptr;
}

/// A batch call's first pointer and total bytes: at most the first
/// `max_batch_entries` entries are read (the arrays are the app's; a null
/// one reads as empty).
struct BatchExtent {
  std::uint64_t first = 0;
  std::uint64_t bytes = 0;
};

inline constexpr std::size_t max_batch_entries = 4096;

template <typename Pointer>
inline BatchExtent batch_extent(Pointer const* ptrs, const std::size_t* sizes, std::size_t count) {
  BatchExtent e;
  if (ptrs == nullptr || sizes == nullptr) return e;
  const std::size_t n = count < max_batch_entries ? count : max_batch_entries;
  if (n > 0) e.first = address(ptrs[0]);
  for (std::size_t i = 0; i < n; ++i) e.bytes += sizes[i];
  return e;
}

/// cudaMemPrefetchAsync and its driver and batch forms: `to` says where the
/// bytes go ("device" or "host").
inline void set_prefetch(CallFields& f, std::uint64_t ptr, std::uint64_t bytes, std::string_view to,
                         CUstream stream) {
  f.cls = CallClass::prefetch;
  f.ptr = ptr;
  f.bytes = bytes;
  f.to = to;
  f.has_stream = true;
  f.stream = stream;
}

inline void set_attach(CallFields& f, std::uint64_t ptr, std::uint64_t bytes, unsigned int flags,
                       CUstream stream) {
  f.cls = CallClass::attach;
  f.ptr = ptr;
  f.bytes = bytes;
  f.attach_flags = flags;
  f.has_stream = true;
  f.stream = stream;
}

}  // namespace overlap::inject::params
