// Byte sizes as people write them, and back.
#include "overlap/core/byte_size.hpp"

#include <gtest/gtest.h>

#include <string>

#include "overlap/core/error.hpp"

namespace {

using overlap::format_byte_size;
using overlap::parse_byte_size;

TEST(ByteSize, ParsesPlainNumbersAndUnits) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("12 B"), 12u);
  EXPECT_EQ(parse_byte_size("64KiB"), 65536u);
  EXPECT_EQ(parse_byte_size(" 256 MiB "), 256u << 20);
  EXPECT_EQ(parse_byte_size("2GiB"), 2ULL << 30);
  EXPECT_EQ(parse_byte_size("1TiB"), 1ULL << 40);
  EXPECT_EQ(parse_byte_size("3KB"), 3000u);
  EXPECT_EQ(parse_byte_size("1GB"), 1000000000u);
}

TEST(ByteSize, ParsesExactFractions) {
  EXPECT_EQ(parse_byte_size("1.5GiB"), 3ULL << 29);
  EXPECT_EQ(parse_byte_size("0.25 KiB"), 256u);
  EXPECT_EQ(parse_byte_size("1.1GB"), 1100000000u);
  EXPECT_EQ(parse_byte_size("2."), 2u);
  EXPECT_EQ(parse_byte_size("0.1KiB"), std::nullopt);  // 102.4 bytes
  EXPECT_EQ(parse_byte_size("1.5"), std::nullopt);     // half a byte
}

TEST(ByteSize, RejectsGarbage) {
  for (const char* text : {"", "MiB", "-4", "+4", "4 MiBs", "4mib", "1e9", ".5KiB", "4 4", "0x10", "1.2.3KiB",
                           "18446744073709551616", "16777216TiB"}) {
    EXPECT_EQ(parse_byte_size(text), std::nullopt) << text;
  }
  EXPECT_EQ(parse_byte_size("18446744073709551615"), 18446744073709551615ULL);
}

TEST(ByteSize, ThrowingFormNamesTheField) {
  try {
    (void)parse_byte_size("lots", "--bytes-in");
    FAIL() << "no error";
  } catch (const overlap::invalid_input& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--bytes-in: 'lots' is not a byte count (expected", 0), 0u)
        << e.what();
  }
}

TEST(ByteSize, FormatsExactlyAndReadsBack) {
  EXPECT_EQ(format_byte_size(0), "0 B");
  EXPECT_EQ(format_byte_size(1000), "1000 B");
  EXPECT_EQ(format_byte_size(1024), "1 KiB");
  EXPECT_EQ(format_byte_size(256u << 20), "256 MiB");
  EXPECT_EQ(format_byte_size(3ULL << 29), "1.5 GiB");
  EXPECT_EQ(format_byte_size(1280), "1.25 KiB");
  EXPECT_EQ(format_byte_size(1000000), "1000000 B");
  for (const std::uint64_t bytes : {0ULL, 1000ULL, 1280ULL, 3ULL << 29, 12345678ULL, 5ULL << 40}) {
    EXPECT_EQ(parse_byte_size(format_byte_size(bytes)), bytes) << format_byte_size(bytes);
  }
}

}  // namespace
