// The memory a traced process allocated, to turn pointers into named buffers.
//
// Device, managed and pinned host allocations, host registrations and
// stream-ordered allocations are tracked from their calls, each under a name
// that stays unique when an address is reused after a free ("device#3").
// A host pointer CUDA never saw is pageable memory: it is named by address.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "overlap/core/program.hpp"

namespace overlap::trace::detail {

/// What a pointer falls in.
struct Region {
  std::string buffer;        ///< buffer name for Access
  std::uint64_t offset = 0;  ///< from the buffer's start
  std::uint64_t size = 0;    ///< the buffer's size
  bool pinned = false;       ///< pinned or registered host memory
  bool device = false;       ///< device or managed memory
};

class Allocations {
 public:
  /// Records an allocation of `bytes` at `ptr`; `memory` is "device",
  /// "managed", "pinned", "async", "graph" (a graph's memory node) or "registered".
  void add(std::uint64_t ptr, std::uint64_t bytes, const std::string& memory);
  /// Forgets the allocation starting at `ptr` (a free or unregister).
  void remove(std::uint64_t ptr);
  /// The allocation containing `ptr`, if any.
  [[nodiscard]] std::optional<Region> find(std::uint64_t ptr) const;
  /// The access of `bytes` at `ptr`: within a known allocation, or on an
  /// unknown region named by its address (pageable host memory).
  [[nodiscard]] Access access(std::uint64_t ptr, std::uint64_t bytes, access_mode mode) const;
  /// The size of the pinned or registered host buffer named `buffer` (as
  /// Region::buffer names it), freed or not; empty for any other name.
  [[nodiscard]] std::optional<std::uint64_t> host_buffer_size(const std::string& buffer) const;
  /// The host can read buffer `buffer` in place, without a copy: managed
  /// memory, and pinned or registered host memory (which kernels can write
  /// through the device's mapping).
  [[nodiscard]] static bool host_readable(const std::string& buffer);

 private:
  struct Allocation {
    std::uint64_t size = 0;
    std::string name;
    bool pinned = false;
    bool device = false;
  };
  std::map<std::uint64_t, Allocation> live_;  // by start address
  std::map<std::string, std::uint32_t> counts_;
  std::map<std::string, std::uint64_t> host_sizes_;  // pinned and registered buffers, by name
};

}  // namespace overlap::trace::detail
