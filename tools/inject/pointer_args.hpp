// The values of a kernel launch's arguments that may be addresses, taken
// from its argument array and the parameters' sizes. Pure: shared by the
// tracer (kernel_params.hpp) and the measuring library (tools/measure),
// whose joins compare the two runs' values position by position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace overlap::inject {

/// The values a launch passes that may be addresses.
struct PointerArgs {
  /// Every non-zero 8-byte parameter.
  std::vector<std::uint64_t> params;
  /// Words of the larger parameters (structs passed by value, as PyTorch's
  /// and cuBLAS's kernels take their tensors' addresses) that look like
  /// addresses: 8-byte words from 2^32 to 2^48, each value once, at most
  /// max_struct_words per launch.
  std::vector<std::uint64_t> in_structs;
  void clear() noexcept {
    params.clear();
    in_structs.clear();
  }
};

/// Most address-like words kept from one launch's struct parameters.
inline constexpr std::size_t max_struct_words = 64;

/// Appends to `out` the values that may be addresses of the arguments
/// `kernel_params` (one pointer per parameter) of a kernel whose parameters
/// take `sizes` bytes each.
void append_argument_values(std::span<const std::uint32_t> sizes, void* const* kernel_params,
                            PointerArgs& out);

}  // namespace overlap::inject
