// The capture pass that infers what a kernel touches from its pointer
// parameters (and from the address-like words of its struct parameters:
// PyTorch's and cuBLAS's kernels take their tensors' addresses in structs
// passed by value).
//
// A trace shows a kernel's 8-byte parameters, not the bytes it loads and
// stores. A parameter that points into an allocation is taken to start the
// kernel's part of it: programs split work as `kernel<<<g, b, 0, s[i]>>>(d + i * n)`,
// so the part runs from that pointer to the next pointer into the same
// allocation that the trace shows being used as a start (by any kernel's
// parameter, copy or memset, at any time while the allocation lived), no
// further than the largest copy or memset that starts at that very pointer,
// else to the allocation's end. Disjoint slices of one buffer on several
// streams then never overlap. The accesses are marked inferred: the checker
// reports races resting on them as possible, never as errors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "allocations.hpp"
#include "overlap/core/program.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace::detail {

/// Where the trace shows each allocation's pieces start, for the whole run.
class KernelExtents {
 public:
  /// Replays the allocations and frees of `trace.calls[order]` (host order,
  /// as capture converts them, so buffers get the same names) and records
  /// every pointer used as a start: kernel pointer parameters, copy sources
  /// and destinations, memset destinations; and how far copies and memsets
  /// starting there reach.
  KernelExtents(const RawTrace& trace, const std::vector<std::size_t>& order);

  /// The inferred accesses of a kernel launched with pointer parameters
  /// `ptrs` and address-like words of struct parameters `struct_ptrs` while
  /// `live` are the allocations: a read and a write of each part a value
  /// starts (one per distinct part), each naming the position it came from
  /// (struct words after the parameters); values in no allocation are not
  /// accesses.
  [[nodiscard]] std::vector<Access> kernel_accesses(const std::vector<std::uint64_t>& ptrs,
                                                    const std::vector<std::uint64_t>& struct_ptrs,
                                                    const Allocations& live) const;

 private:
  // Per buffer: offsets used as starts, each with the end of the largest
  // copy or memset starting there (0: none does).
  std::map<std::string, std::map<std::uint64_t, std::uint64_t>> starts_;
};

/// The accesses of a launch that was measured (`--accesses measured`): its
/// measured ranges in the allocations `live` holds (source measured; inferred
/// where its table overflowed and the ranges are a hull), then those of
/// `inferred` (from its parameters) on buffers it was not measured touching.
/// The measuring run is joined by order (measured_run.hpp); where it put a
/// range in a buffer none of the launch's parameters points into, the join
/// went wrong for this launch (a caching allocator that took a new block in
/// one run and reused one in the other, say), and `inferred` is returned
/// unchanged: a wrong measurement would prove races that do not exist.
/// Measurement sees loads, stores, atomics and asynchronous and bulk copies,
/// not tensor-map (TMA) copies or texture reads: a buffer a parameter points
/// into that shows no measured access may still be touched that way, so its
/// inferred access stays, and a race resting on it stays possible.
[[nodiscard]] std::vector<Access> with_measured_accesses(const MeasuredAccesses& measured,
                                                         std::vector<Access> inferred,
                                                         const Allocations& live);

}  // namespace overlap::trace::detail
