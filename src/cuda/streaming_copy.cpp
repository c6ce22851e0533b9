#include "streaming_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace overlap::cuda::detail {

void copy_streaming(void* to, const void* from, std::size_t bytes) noexcept {
#if defined(__SSE2__)
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
  // Streaming stores need 16-byte aligned destinations: the bytes before the
  // first aligned one go through memcpy, as do the last, partial block's.
  constexpr std::size_t block = 64;  // a cache line: four 16-byte stores
  const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(d) & 15U;
  const std::size_t head = std::min(bytes, misaligned == 0 ? 0 : 16 - misaligned);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (std::size_t left = bytes / block; left > 0; --left) {
    // The source may be unaligned: unaligned loads cost nothing extra here.
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
    d += block;
    s += block;
  }
  // Streaming stores are weakly ordered: fence them before anyone (the DMA
  // issued after this returns, another thread) may read the destination.
  _mm_sfence();
  std::memcpy(d, s, bytes % block);
#else
  std::memcpy(to, from, bytes);
#endif
}

void copy_host(host_stores stores, void* to, const void* from, std::size_t bytes) noexcept {
  if (stores == host_stores::streaming) {
    copy_streaming(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

}  // namespace overlap::cuda::detail
