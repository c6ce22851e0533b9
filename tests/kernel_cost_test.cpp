// KernelCost: the per-chunk kernel curve, its fit from samples, its JSON.
#include "overlap/core/kernel_cost.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "message_of.hpp"
#include "overlap/core/error.hpp"

namespace {

using namespace overlap;

constexpr std::uint64_t MiB = 1ULL << 20;

using overlap::testing::message_of;

std::vector<KernelSample> samples_of(const KernelCost& cost, const std::vector<std::uint64_t>& sizes) {
  std::vector<KernelSample> samples;
  for (const std::uint64_t bytes : sizes) samples.push_back({bytes, cost.time(bytes)});
  return samples;
}

TEST(KernelCost, TimeIsFixedPlusPerMibOfWholeWaves) {
  const KernelCost linear{0.004, 0.5, 0};
  EXPECT_DOUBLE_EQ(linear.time(2 * MiB), 1.004);
  EXPECT_DOUBLE_EQ(linear.time(MiB / 2), 0.254);
  const KernelCost waves{0.25, 1.0, 4 * MiB};
  EXPECT_EQ(waves.quantized_bytes(1), 4 * MiB);
  EXPECT_EQ(waves.quantized_bytes(4 * MiB), 4 * MiB);
  EXPECT_EQ(waves.quantized_bytes(4 * MiB + 1), 8 * MiB);
  EXPECT_EQ(waves.quantized_bytes(0), 0u);
  // 1 MiB pays a whole 4 MiB wave: 0.25 + 4; 5 MiB pays two.
  EXPECT_DOUBLE_EQ(waves.time(MiB), 4.25);
  EXPECT_DOUBLE_EQ(waves.time(5 * MiB), 8.25);
}

TEST(KernelCost, FitRecoversALinearModelExactly) {
  const KernelCost truth{0.004, 0.0009, 0};
  const KernelFit fit = fit_kernel_cost(samples_of(truth, {MiB, 4 * MiB, 16 * MiB, 64 * MiB}), {4 * MiB});
  EXPECT_NEAR(fit.cost.fixed_ms, 0.004, 1e-12);
  EXPECT_NEAR(fit.cost.ms_per_mib, 0.0009, 1e-12);
  EXPECT_EQ(fit.cost.wave_bytes, 0u);  // no sample needs rounding: "none" wins the tie
  EXPECT_NEAR(fit.relative_rms, 0.0, 1e-9);
}

TEST(KernelCost, FitFindsTheWaveSizeAmongTheCandidates) {
  const KernelCost truth{0.01, 0.002, 4 * MiB};
  const std::vector<std::uint64_t> sizes = {MiB, 3 * MiB, 5 * MiB, 6 * MiB, 9 * MiB, 16 * MiB, 33 * MiB};
  const KernelFit fit = fit_kernel_cost(samples_of(truth, sizes), {2 * MiB, 4 * MiB, 8 * MiB});
  EXPECT_EQ(fit.cost.wave_bytes, 4 * MiB);
  EXPECT_NEAR(fit.cost.fixed_ms, 0.01, 1e-12);
  EXPECT_NEAR(fit.cost.ms_per_mib, 0.002, 1e-12);
  EXPECT_NEAR(fit.relative_rms, 0.0, 1e-9);
  // Without the right candidate the fit is only approximate, and says so.
  const KernelFit rough = fit_kernel_cost(samples_of(truth, sizes));
  EXPECT_EQ(rough.cost.wave_bytes, 0u);
  EXPECT_GT(rough.relative_rms, 0.01);
}

TEST(KernelCost, FitKeepsCoefficientsNonNegative) {
  // y = 2x - 1 through (1, 1), (2, 3), (3, 5): unconstrained fixed is -1.
  // Clamped to 0, the best slope through the origin is 22 / 14.
  const KernelFit fit = fit_kernel_cost({{MiB, 1.0}, {2 * MiB, 3.0}, {3 * MiB, 5.0}});
  EXPECT_DOUBLE_EQ(fit.cost.fixed_ms, 0.0);
  EXPECT_NEAR(fit.cost.ms_per_mib, 22.0 / 14.0, 1e-12);
  // Times falling with size: the slope clamps to 0, fixed is the mean.
  const KernelFit falling = fit_kernel_cost({{MiB, 3.0}, {2 * MiB, 1.0}});
  EXPECT_DOUBLE_EQ(falling.cost.ms_per_mib, 0.0);
  EXPECT_DOUBLE_EQ(falling.cost.fixed_ms, 2.0);
  EXPECT_NEAR(falling.relative_rms, std::sqrt(2.0 / 10.0), 1e-12);
}

TEST(KernelCost, FitRejectsBadSamples) {
  EXPECT_NE(message_of([] {
              (void)fit_kernel_cost({{MiB, 1.0}, {MiB, 1.1}});
            }).find("samples: 1 distinct sizes"),
            std::string::npos);
  EXPECT_EQ(message_of([] {
              (void)fit_kernel_cost({{MiB, 1.0}, {0, 1.0}});
            }).rfind("samples[1].bytes:", 0),
            0u);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message_of([&] {
              (void)fit_kernel_cost({{MiB, nan}, {2 * MiB, 1.0}});
            }).rfind("samples[0].ms:", 0),
            0u);
  EXPECT_EQ(message_of([] {
              (void)fit_kernel_cost({{MiB, -1.0}, {2 * MiB, 1.0}});
            }).rfind("samples[0].ms:", 0),
            0u);
  EXPECT_EQ(message_of([] { (void)fit_kernel_cost({{MiB, 0.0}, {2 * MiB, 0.0}}); }).rfind("samples:", 0), 0u);
  EXPECT_EQ(message_of([] {
              (void)fit_kernel_cost({{MiB, 1.0}, {2 * MiB, 2.0}}, {MiB, 0});
            }).rfind("wave_candidates[1]:", 0),
            0u);
}

TEST(KernelCost, ValidateNamesTheField) {
  EXPECT_EQ(message_of([] { KernelCost{-1.0, 1.0, 0}.validate(); }).rfind("kernel_cost.fixed_ms:", 0), 0u);
  EXPECT_EQ(message_of([] {
              KernelCost{0.0, std::nan(""), 0}.validate("pipeline.kernel_cost");
            }).rfind("pipeline.kernel_cost.ms_per_mib:", 0),
            0u);
  EXPECT_EQ(message_of([] {
              KernelCost{0.0, 0.0, 0}.validate();
            }).rfind("kernel_cost: fixed_ms and ms_per_mib", 0),
            0u);
  EXPECT_NO_THROW(KernelCost({0.0, 1.0, 0}).validate());
}

TEST(KernelCost, JsonRoundTripsAndNamesBadFields) {
  const KernelCost cost{0.004, 0.0009, 4 * MiB};
  EXPECT_EQ(KernelCost::from_json(cost.to_json()), cost);
  EXPECT_EQ(KernelCost::from_json(R"({"fixed_ms": 1, "ms_per_mib": 2})"), (KernelCost{1.0, 2.0, 0}));
  EXPECT_EQ(message_of([] {
              (void)KernelCost::from_json(R"({"fixed_ms": 1})");
            }).rfind("kernel_cost.ms_per_mib:", 0),
            0u);
  EXPECT_EQ(message_of([] {
              (void)KernelCost::from_json(R"({"fixed_ms": 1, "ms_per_mib": 1, "wave": 3})");
            }).rfind("kernel_cost.wave:", 0),
            0u);
  EXPECT_EQ(message_of([] {
              (void)KernelCost::from_json(R"({"fixed_ms": 1, "ms_per_mib": 1, "wave_bytes": -4})");
            }).rfind("kernel_cost.wave_bytes:", 0),
            0u);
  EXPECT_EQ(message_of([] {
              (void)KernelCost::from_json(R"({"fixed_ms": "fast", "ms_per_mib": 1})", "--kernel-cost");
            }).rfind("--kernel-cost.fixed_ms:", 0),
            0u);
  EXPECT_EQ(message_of([] { (void)KernelCost::from_json("[1, 2]"); }).rfind("kernel_cost:", 0), 0u);
  EXPECT_EQ(message_of([] { (void)KernelCost::from_json("{oops"); }).rfind("kernel_cost: not valid JSON", 0),
            0u);
}

}  // namespace
