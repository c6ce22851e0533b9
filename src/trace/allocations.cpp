#include "allocations.hpp"

#include <fmt/format.h>

namespace overlap::trace::detail {

void Allocations::add(std::uint64_t ptr, std::uint64_t bytes, const std::string& memory) {
  if (ptr == 0) return;
  const bool device = memory == "device" || memory == "managed" || memory == "async" || memory == "graph";
  const std::string kind = memory.empty() ? std::string("device") : memory;
  const std::uint32_t n = ++counts_[kind];
  Allocation a{bytes == 0 ? 1 : bytes, fmt::format("{}#{}", kind, n), !device, device};
  if (a.pinned) host_sizes_[a.name] = a.size;
  live_[ptr] = std::move(a);
}

bool Allocations::host_readable(const std::string& buffer) {
  // Names are "<memory>#<n>" (add()).
  return buffer.starts_with("managed#") || buffer.starts_with("pinned#") || buffer.starts_with("registered#");
}

std::optional<std::uint64_t> Allocations::host_buffer_size(const std::string& buffer) const {
  const auto it = host_sizes_.find(buffer);
  if (it == host_sizes_.end()) return std::nullopt;
  return it->second;
}

void Allocations::remove(std::uint64_t ptr) {
  live_.erase(ptr);
}

std::optional<Region> Allocations::find(std::uint64_t ptr) const {
  auto it = live_.upper_bound(ptr);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (ptr - it->first >= it->second.size) return std::nullopt;
  return Region{it->second.name, ptr - it->first, it->second.size, it->second.pinned, it->second.device};
}

Access Allocations::access(std::uint64_t ptr, std::uint64_t bytes, access_mode mode) const {
  if (const auto region = find(ptr)) return Access{region->buffer, region->offset, bytes, mode};
  return Access{fmt::format("host@{:#x}", ptr), 0, bytes, mode};
}

}  // namespace overlap::trace::detail
