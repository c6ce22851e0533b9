// The words the trace file uses for API names, copy directions and stream
// kinds, decided from plain values.
//
// These small decisions (what `cudaMemcpyAsync_ptsz` is called, when a copy
// is "h2d", which default stream a handle means) are where the file and the
// converter must agree, so they live here without CUDA types and are unit-
// tested; the callbacks translate CUDA's enums into these values first.
#pragma once

#include <cstdint>
#include <string_view>

namespace overlap::inject {

/// CUPTI's function name without the entry-point suffixes a user never
/// writes: `_ptsz`/`_ptds` (per-thread default stream builds) and `_v<N>`
/// (ABI versions), in any order: "cuMemcpyHtoDAsync_v2_ptsz" -> "cuMemcpyHtoDAsync".
[[nodiscard]] std::string_view api_base_name(std::string_view function_name) noexcept;

/// Where one side of a copy lives, as far as it is known.
enum class MemorySide : std::uint8_t { unknown, host, device };

/// "h2d", "d2h", "d2d", "h2h", or "default" when a side is unknown.
[[nodiscard]] std::string_view copy_kind_name(MemorySide src, MemorySide dst) noexcept;

enum class StreamKind : std::uint8_t { blocking, non_blocking, legacy_default, per_thread_default };

[[nodiscard]] std::string_view stream_kind_name(StreamKind kind) noexcept;

/// The stream handles 0, cudaStreamLegacy (0x1) and cudaStreamPerThread (0x2).
[[nodiscard]] constexpr bool is_default_stream_handle(std::uintptr_t handle) noexcept {
  return handle <= 2;
}

/// Which default stream a default handle means: 0x2 is always the per-thread
/// stream, 0x1 always the legacy one, and 0 the per-thread one only when the
/// call came through a `_ptsz`/`_ptds` entry point.
[[nodiscard]] StreamKind default_stream_kind(std::uintptr_t handle, bool per_thread_entry) noexcept;

/// The kind of a created stream from its creation flags (0x1 = non-blocking,
/// the same bit in the runtime and the driver).
[[nodiscard]] constexpr StreamKind created_stream_kind(unsigned int flags) noexcept {
  return (flags & 0x1U) != 0 ? StreamKind::non_blocking : StreamKind::blocking;
}

}  // namespace overlap::inject
