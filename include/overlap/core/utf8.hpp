// UTF-8 validation for text that echoes input: the trace writer and the
// CLI's error lines escape whatever bytes this does not accept.
//
// Header-only, so the injection library (which links nothing of overlap)
// shares it with the CLI.
#pragma once

#include <cstddef>
#include <string_view>

namespace overlap {

/// Length (2 to 4) of the well-formed multi-byte UTF-8 sequence starting at
/// text[at], or 0 when the bytes there are not one: an ASCII byte, a stray
/// continuation byte, a truncated sequence, an overlong form, a surrogate or
/// a code point above U+10FFFF.
[[nodiscard]] inline std::size_t utf8_sequence_length(std::string_view text, std::size_t at) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong
    if (lead == 0xED) second_max = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong
    if (lead == 0xF4) second_max = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < second_min || byte(at + 1) > second_max) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(at + k) < 0x80 || byte(at + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace overlap
