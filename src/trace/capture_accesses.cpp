// Kernel accesses inferred from pointer parameters: see capture_accesses.hpp.
#include "capture_accesses.hpp"

#include <algorithm>
#include <set>

namespace overlap::trace::detail {

KernelExtents::KernelExtents(const RawTrace& trace, const std::vector<std::size_t>& order) {
  // The same allocation history as the conversion, so a pointer lands in
  // the buffer (by name) it will land in there, address reuse included.
  Allocations live;
  const auto start_at = [&](std::uint64_t ptr, std::uint64_t bytes) {
    const auto region = live.find(ptr);
    if (!region) return;
    std::uint64_t& reach = starts_[region->buffer][region->offset];
    if (bytes > 0) reach = std::max(reach, region->offset + bytes);
  };
  for (const std::size_t i : order) {
    const Call& c = trace.calls[i];
    switch (c.cls) {
      case call_class::alloc: live.add(c.ptr, c.bytes, c.memory); break;
      case call_class::free: live.remove(c.ptr); break;
      case call_class::host_register: live.add(c.ptr, c.bytes, "registered"); break;
      case call_class::host_unregister: live.remove(c.ptr); break;
      case call_class::copy:
        if (c.bytes == 0) break;
        start_at(c.src, c.bytes);
        start_at(c.dst, c.bytes);
        break;
      case call_class::memset:
        if (c.bytes > 0) start_at(c.dst, c.bytes);
        break;
      case call_class::launch:
        for (const std::uint64_t p : c.ptrs) start_at(p, 0);
        for (const std::uint64_t p : c.struct_ptrs) start_at(p, 0);
        break;
      default: break;
    }
  }
}

std::vector<Access> KernelExtents::kernel_accesses(const std::vector<std::uint64_t>& ptrs,
                                                   const std::vector<std::uint64_t>& struct_ptrs,
                                                   const Allocations& live) const {
  std::vector<Access> accesses;
  const std::size_t values = ptrs.size() + struct_ptrs.size();
  for (std::size_t k = 0; k < values; ++k) {
    const auto region = live.find(k < ptrs.size() ? ptrs[k] : struct_ptrs[k - ptrs.size()]);
    if (!region) continue;
    std::uint64_t end = region->size;
    if (const auto buffer = starts_.find(region->buffer); buffer != starts_.end()) {
      const auto& starts = buffer->second;
      if (const auto next = starts.upper_bound(region->offset); next != starts.end())
        end = std::min(end, next->first);
      if (const auto here = starts.find(region->offset); here != starts.end() && here->second > 0)
        end = std::min(end, here->second);
    }
    const std::uint64_t size = end - region->offset;
    const bool known = std::any_of(accesses.begin(), accesses.end(), [&](const Access& a) {
      return a.buffer == region->buffer && a.offset == region->offset && a.size == size;
    });
    if (known) continue;
    // The parameter's position lets the checker tell one kernel's launches
    // sharing an argument (not a race) from a buffer passed in turn as
    // input and output (ping-pong: a race when unordered).
    const auto parameter = static_cast<std::int32_t>(k);
    accesses.push_back(
        Access{region->buffer, region->offset, size, access_mode::read, access_source::inferred, parameter});
    accesses.push_back(
        Access{region->buffer, region->offset, size, access_mode::write, access_source::inferred, parameter});
  }
  return accesses;
}

std::vector<Access> with_measured_accesses(const MeasuredAccesses& measured, std::vector<Access> inferred,
                                           const Allocations& live) {
  std::vector<Access> out;
  std::set<std::string> seen;
  const access_source source = measured.exact ? access_source::measured : access_source::inferred;
  const auto take = [&](const auto& ranges, access_mode mode) {
    for (const auto& [address, bytes] : ranges) {
      const auto region = live.find(address);
      if (!region) continue;  // memory the trace does not know as an allocation
      out.push_back(Access{region->buffer, region->offset, bytes, mode, source});
      seen.insert(region->buffer);
    }
  };
  take(measured.reads, access_mode::read);
  take(measured.writes, access_mode::write);
  std::set<std::string> pointed;
  for (const Access& a : inferred) pointed.insert(a.buffer);
  if (!std::includes(pointed.begin(), pointed.end(), seen.begin(), seen.end())) return inferred;
  for (Access& a : inferred) {
    if (!seen.contains(a.buffer)) out.push_back(std::move(a));
  }
  return out;
}

}  // namespace overlap::trace::detail
