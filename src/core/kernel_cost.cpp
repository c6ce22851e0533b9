#include "overlap/core/kernel_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {

namespace {

using json = nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;

void require_coefficient(double value, std::string_view field, std::string_view name) {
  if (!limits::is_time(value)) {
    throw invalid_input(
        fmt::format("{}.{}: {} is out of range (expected {})", field, name, value, limits::time_expected));
  }
}

/// A coefficient pair and its sum of squared residuals.
struct LineFit {
  double fixed = 0.0;
  double slope = 0.0;
  double sse = std::numeric_limits<double>::infinity();
};

double sum_of_squares(const std::vector<double>& x, const std::vector<double>& y, double fixed,
                      double slope) {
  double sse = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = fixed + slope * x[i] - y[i];
    sse += r * r;
  }
  return sse;
}

// Least squares of y = fixed + slope * x with fixed, slope >= 0. With two
// unknowns the constrained optimum is the unconstrained one when that is
// feasible, else the better of the two boundary fits (fixed = 0, slope = 0).
LineFit fit_non_negative_line(const std::vector<double>& x, const std::vector<double>& y) {
  const auto n = static_cast<double>(x.size());
  double mean_x = 0.0;
  double mean_y = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mean_x += x[i] / n;
    mean_y += y[i] / n;
  }
  double sxx = 0.0;
  double sxy = 0.0;
  double xx = 0.0;
  double xy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mean_x) * (x[i] - mean_x);
    sxy += (x[i] - mean_x) * (y[i] - mean_y);
    xx += x[i] * x[i];
    xy += x[i] * y[i];
  }
  if (sxx > 0.0) {
    const double slope = sxy / sxx;
    const double fixed = mean_y - slope * mean_x;
    if (slope >= 0.0 && fixed >= 0.0) return {fixed, slope, sum_of_squares(x, y, fixed, slope)};
  }
  // Wave rounding can map every sample to one size: then only the boundary fits remain.
  LineFit best{mean_y, 0.0, sum_of_squares(x, y, mean_y, 0.0)};
  if (xx > 0.0) {
    const double slope = xy / xx;  // >= 0: x and y are
    const double sse = sum_of_squares(x, y, 0.0, slope);
    if (sse < best.sse) best = {0.0, slope, sse};
  }
  return best;
}

void validate_samples(const std::vector<KernelSample>& samples) {
  std::set<std::uint64_t> sizes;
  bool any_time = false;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].bytes == 0) {
      throw invalid_input(fmt::format("samples[{}].bytes: 0 is out of range (expected > 0)", i));
    }
    if (!(std::isfinite(samples[i].ms) && samples[i].ms >= 0.0)) {
      throw invalid_input(
          fmt::format("samples[{}].ms: {} is not a time (expected a finite number >= 0)", i, samples[i].ms));
    }
    sizes.insert(samples[i].bytes);
    any_time = any_time || samples[i].ms > 0.0;
  }
  if (sizes.size() < 2) {
    throw invalid_input(
        fmt::format("samples: {} distinct sizes (expected at least 2 to tell the fixed "
                    "cost from the per-byte cost)",
                    sizes.size()));
  }
  if (!any_time) throw invalid_input("samples: every time is 0 (expected some kernel time to fit)");
}

}  // namespace

std::uint64_t KernelCost::quantized_bytes(std::uint64_t bytes) const noexcept {
  if (wave_bytes == 0 || bytes % wave_bytes == 0) return bytes;
  return (bytes / wave_bytes + 1) * wave_bytes;
}

double KernelCost::time(std::uint64_t bytes) const noexcept {
  return fixed_ms + ms_per_mib * (static_cast<double>(quantized_bytes(bytes)) / kMiB);
}

void KernelCost::validate(std::string_view field) const {
  require_coefficient(fixed_ms, field, "fixed_ms");
  require_coefficient(ms_per_mib, field, "ms_per_mib");
  if (fixed_ms == 0.0 && ms_per_mib == 0.0) {
    throw invalid_input(
        fmt::format("{}: fixed_ms and ms_per_mib are both 0 (expected a kernel that takes time)", field));
  }
}

std::string KernelCost::to_json() const {
  const json value = {{"fixed_ms", fixed_ms}, {"ms_per_mib", ms_per_mib}, {"wave_bytes", wave_bytes}};
  // Names from input may be any bytes; JSON is UTF-8 (bad bytes become U+FFFD).
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

KernelCost KernelCost::from_json(std::string_view text, std::string_view field) {
  json value;
  try {
    value = json::parse(text);
  } catch (const json::exception& e) {  // out_of_range too: a number past a double, 1e400
    throw invalid_input(fmt::format("{}: not valid JSON ({})", field, e.what()));
  }
  if (!value.is_object()) {
    throw invalid_input(
        fmt::format(R"({}: expected an object {{"fixed_ms", "ms_per_mib", "wave_bytes"}})", field));
  }
  constexpr std::array<std::string_view, 3> known = {"fixed_ms", "ms_per_mib", "wave_bytes"};
  for (const auto& [key, member] : value.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw invalid_input(
          fmt::format("{}.{}: unknown field (expected fixed_ms, ms_per_mib, wave_bytes)", field, key));
    }
  }
  KernelCost cost;
  const auto number = [&](std::string_view name) {
    const auto member = value.find(name);
    if (member == value.end())
      throw invalid_input(fmt::format("{}.{}: required (expected a number)", field, name));
    if (!member->is_number()) {
      throw invalid_input(fmt::format("{}.{}: {} is not a number", field, name, member->dump()));
    }
    return member->get<double>();
  };
  cost.fixed_ms = number("fixed_ms");
  cost.ms_per_mib = number("ms_per_mib");
  if (const auto wave = value.find("wave_bytes"); wave != value.end()) {
    if (!wave->is_number_unsigned()) {
      throw invalid_input(fmt::format("{}.wave_bytes: {} is not a byte count (expected an integer >= 0)",
                                      field, wave->dump()));
    }
    cost.wave_bytes = wave->get<std::uint64_t>();
  }
  cost.validate(field);
  return cost;
}

KernelFit fit_kernel_cost(const std::vector<KernelSample>& samples,
                          const std::vector<std::uint64_t>& wave_candidates) {
  validate_samples(samples);
  std::vector<std::uint64_t> waves = {0};
  for (std::size_t i = 0; i < wave_candidates.size(); ++i) {
    if (wave_candidates[i] == 0) {
      throw invalid_input(fmt::format("wave_candidates[{}]: 0 is out of range (expected > 0)", i));
    }
    waves.push_back(wave_candidates[i]);
  }
  std::vector<double> y;
  y.reserve(samples.size());
  double total_squares = 0.0;
  for (const KernelSample& s : samples) {
    y.push_back(s.ms);
    total_squares += s.ms * s.ms;
  }
  // A later candidate must beat the best by more than rounding noise, so
  // that a wave size every sample is a multiple of does not displace "none".
  const double noise = total_squares * 1e-18;
  KernelFit best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (const std::uint64_t wave : waves) {
    const KernelCost rounding{0.0, 0.0, wave};
    std::vector<double> x;
    x.reserve(samples.size());
    for (const KernelSample& s : samples)
      x.push_back(static_cast<double>(rounding.quantized_bytes(s.bytes)) / kMiB);
    const LineFit line = fit_non_negative_line(x, y);
    if (line.sse < best_sse - noise) {
      best_sse = line.sse;
      best.cost = KernelCost{line.fixed, line.slope, wave};
    }
  }
  best.relative_rms = std::sqrt(std::max(0.0, best_sse) / total_squares);
  return best;
}

}  // namespace overlap
