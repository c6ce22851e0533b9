// The transfer-bound floor from the link's peak rates (no GPU): the largest
// of bytes in / peak H2D, bytes out / peak D2H and all bytes / peak both
// directions, with the term that binds named.
#include <gtest/gtest.h>

#include "overlap/bench/link_floor.hpp"
#include "overlap/core/error.hpp"

namespace overlap::bench {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

TEST(BenchLinkFloor, BothDirectionsBindWhenTheSharedRateIsBelowTheSumOfTheOthers) {
  // 256 MiB each way: H2D 5.2 ms at 52 GB/s, D2H 5.3 ms at 51 GB/s, both 5.4 ms at 100 GB/s.
  const link_floor f = make_link_floor({52.0, 64 * MiB, 0.01}, {51.0, 16 * MiB, 0.02}, {100.0, 64 * MiB, 0.0},
                                       256 * MiB, 256 * MiB);
  EXPECT_NEAR(f.h2d_ms, 256.0 * MiB / 52e6, 1e-12);
  EXPECT_NEAR(f.d2h_ms, 256.0 * MiB / 51e6, 1e-12);
  EXPECT_NEAR(f.both_ms, 512.0 * MiB / 100e6, 1e-12);
  EXPECT_EQ(f.bound_by, link_term::both_directions);
  EXPECT_DOUBLE_EQ(f.ms, f.both_ms);
  EXPECT_DOUBLE_EQ(f.binding_peak().gigabytes_per_second, 100.0);
  EXPECT_EQ(f.binding_peak().at_bytes, 64 * MiB);
}

TEST(BenchLinkFloor, OneDirectionBindsWhenItIsTheSlowest) {
  // A slow D2H: 256 MiB at 20 GB/s is 13.4 ms, more than 512 MiB at 60 GB/s.
  const link_floor d2h =
      make_link_floor({50.0, MiB, 0.0}, {20.0, MiB, 0.0}, {60.0, MiB, 0.0}, 256 * MiB, 256 * MiB);
  EXPECT_EQ(d2h.bound_by, link_term::d2h);
  EXPECT_DOUBLE_EQ(d2h.ms, d2h.d2h_ms);
  // More bytes in than out: H2D binds.
  const link_floor h2d =
      make_link_floor({50.0, MiB, 0.0}, {50.0, MiB, 0.0}, {90.0, MiB, 0.0}, 256 * MiB, 16 * MiB);
  EXPECT_EQ(h2d.bound_by, link_term::h2d);
  EXPECT_DOUBLE_EQ(h2d.ms, h2d.h2d_ms);
}

TEST(BenchLinkFloor, TiesGoToBothDirections) {
  // 100 MB each way: every term is 2 ms.
  const link_floor f =
      make_link_floor({50.0, MiB, 0.0}, {50.0, MiB, 0.0}, {100.0, MiB, 0.0}, 100'000'000, 100'000'000);
  EXPECT_EQ(f.bound_by, link_term::both_directions);
  EXPECT_DOUBLE_EQ(f.ms, 2.0);
}

TEST(BenchLinkFloor, ARateThatIsNotPositiveIsBadInputNamingThePeak) {
  try {
    (void)make_link_floor({50.0, MiB, 0.0}, {0.0, MiB, 0.0}, {90.0, MiB, 0.0}, MiB, MiB);
    FAIL() << "expected invalid_input";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("d2h:"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)make_link_floor({-1.0, MiB, 0.0}, {50.0, MiB, 0.0}, {90.0, MiB, 0.0}, MiB, MiB),
               invalid_input);
}

TEST(BenchLinkFloor, TermsHaveNamesForPeopleAndKeysForJson) {
  EXPECT_EQ(to_string(link_term::both_directions), "both directions");
  EXPECT_EQ(to_string(link_term::h2d), "H2D");
  EXPECT_EQ(key_of(link_term::both_directions), "both_directions");
  EXPECT_EQ(key_of(link_term::d2h), "d2h");
}

}  // namespace
}  // namespace overlap::bench
