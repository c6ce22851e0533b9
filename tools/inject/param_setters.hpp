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

}  // namespace overlap::inject::params
