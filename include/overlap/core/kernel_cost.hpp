// overlap::KernelCost: what a kernel costs as a function of the bytes it processes.
//
// A chunk of 1/64 of the data does not take 1/64 of the time: every launch
// pays a fixed cost (launch, set-up, a tail of idle SMs), and a grid that
// does not fill the last wave of blocks over the SMs takes as long as one
// that does. The model: time(bytes) = fixed_ms + ms_per_mib x q(bytes) / MiB,
// where q rounds bytes up to a whole number of waves (wave_bytes, the bytes
// one full wave of blocks over all SMs processes; 0 = no rounding).
// fit_kernel_cost recovers the model from measured (bytes, ms) samples.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {

/// A kernel's time as a function of its input bytes. Times in milliseconds.
struct KernelCost {
  double fixed_ms = 0.0;         ///< paid by every launch, whatever its size (>= 0)
  double ms_per_mib = 0.0;       ///< per MiB of (wave-rounded) input (>= 0)
  std::uint64_t wave_bytes = 0;  ///< bytes of one full wave; 0 = sizes are not rounded

  /// `bytes` rounded up to a whole number of waves (unchanged when wave_bytes is 0).
  [[nodiscard]] std::uint64_t quantized_bytes(std::uint64_t bytes) const noexcept;
  /// Time of one kernel over `bytes` of input, in ms.
  [[nodiscard]] double time(std::uint64_t bytes) const noexcept;

  /// Throws overlap::invalid_input naming the bad field as "<field>.fixed_ms"
  /// (negative, NaN or infinite), "<field>.ms_per_mib", or "<field>" when
  /// both coefficients are zero (a kernel that costs nothing is a slip).
  void validate(std::string_view field = "kernel_cost") const;

  /// {"fixed_ms": ..., "ms_per_mib": ..., "wave_bytes": ...}, indented.
  [[nodiscard]] std::string to_json() const;
  /// Parses and validates that JSON; unknown or missing fields are errors
  /// named "<field>.<name>". wave_bytes may be left out (0).
  [[nodiscard]] static KernelCost from_json(std::string_view text, std::string_view field = "kernel_cost");

  /// Equal when all three fields are.
  friend bool operator==(const KernelCost&, const KernelCost&) = default;
};

/// One measured kernel run.
struct KernelSample {
  std::uint64_t bytes = 0;  ///< input bytes (> 0)
  double ms = 0.0;          ///< its time (finite, >= 0)
};

/// The result of fit_kernel_cost.
struct KernelFit {
  KernelCost cost;  ///< the best-fitting model
  /// RMS of the residuals over the RMS of the measured times: 0 = exact.
  double relative_rms = 0.0;
};

/// Least-squares fit of fixed_ms and ms_per_mib (both kept >= 0) to
/// `samples`, trying no wave rounding and each of `wave_candidates` (bytes
/// of one full wave, e.g. SMs x blocks per SM x threads x bytes per thread)
/// and keeping the one with the smallest residual; a tie keeps the earlier
/// (no rounding first). Throws overlap::invalid_input for fewer than two
/// distinct sizes, a bad sample ("samples[i].bytes", "samples[i].ms"), all
/// times zero, or a zero candidate ("wave_candidates[i]").
[[nodiscard]] KernelFit fit_kernel_cost(const std::vector<KernelSample>& samples,
                                        const std::vector<std::uint64_t>& wave_candidates = {});

}  // namespace overlap
