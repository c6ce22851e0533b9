// Byte sizes as people write them: "4096", "64 KiB", "1.5GiB", "2 MB".
//
// One parser for spec files and command-line flags (in core, so that the
// simulator's planner can print sizes too). Units are B, KB, MB,
// GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024); the
// number may have a decimal fraction as long as the size is a whole number
// of bytes ("1.5KiB" is 1536, "0.5 B" is refused). Arithmetic is exact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace overlap {

/// What a size should look like, for "(expected ...)" in error messages.
inline constexpr std::string_view kByteSizeExpected =
    "a byte count >= 0, optionally with a unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";

/// The size `text` stands for, or nothing when it is not a size (garbage,
/// a negative number, a fraction of a byte, or more than 2^64 - 1 bytes).
[[nodiscard]] std::optional<std::uint64_t> parse_byte_size(std::string_view text);

/// The same for input, throwing overlap::invalid_input "<field>: 'text' is
/// not a byte count (expected ...)" when it is not a size, and when it is over
/// limits::max_bytes (1 TiB).
[[nodiscard]] std::uint64_t parse_byte_size(std::string_view text, std::string_view field);

/// A size for people, exact: in the largest binary unit that gives at most
/// two decimals ("256 MiB", "1.5 GiB", "1.25 KiB"), else in bytes
/// ("1000000 B"). parse_byte_size reads it back to the same value.
[[nodiscard]] std::string format_byte_size(std::uint64_t bytes);

}  // namespace overlap
