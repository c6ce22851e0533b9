// Address-like argument values: see pointer_args.hpp.
#include "pointer_args.hpp"

#include <algorithm>
#include <cstring>

namespace overlap::inject {

namespace {

/// The range user-space addresses take on 64-bit Linux (x86-64: below
/// 2^47; AArch64: 2^48); below 2^32 lie sizes, counts and small offsets,
/// above 2^48 the bit patterns of most doubles.
bool looks_like_address(std::uint64_t value) {
  constexpr std::uint64_t lowest = std::uint64_t{1} << 32;
  constexpr std::uint64_t highest = std::uint64_t{1} << 48;
  return value >= lowest && value < highest;
}

/// The address-like 8-byte words of a struct parameter of `size` bytes.
void append_struct_words(const void* param, std::uint32_t size, std::vector<std::uint64_t>& out) {
  const auto* bytes = static_cast<const unsigned char*>(param);
  for (std::uint32_t at = 0; at + sizeof(std::uint64_t) <= size && out.size() < max_struct_words;
       at += sizeof(std::uint64_t)) {
    std::uint64_t value = 0;
    std::memcpy(&value, bytes + at, sizeof value);  // a struct's members are laid out at its alignment
    if (looks_like_address(value) && std::find(out.begin(), out.end(), value) == out.end())
      out.push_back(value);
  }
}

}  // namespace

void append_argument_values(std::span<const std::uint32_t> sizes, void* const* kernel_params,
                            PointerArgs& out) {
  if (kernel_params == nullptr) return;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (kernel_params[i] == nullptr) continue;
    if (sizes[i] == sizeof(std::uint64_t)) {
      std::uint64_t value = 0;
      std::memcpy(&value, kernel_params[i], sizeof value);  // arguments need not be 8-byte aligned
      if (value != 0) out.params.push_back(value);
    } else if (sizes[i] > sizeof(std::uint64_t)) {
      append_struct_words(kernel_params[i], sizes[i], out.in_structs);
    }
  }
}

}  // namespace overlap::inject
