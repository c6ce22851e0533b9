// The device side of measured accesses: functions the Compute Sanitizer
// patching API calls before each global-memory access of a patched kernel
// (measure.cpp names them to sanitizerPatchInstructions). Each merges the
// access into the launch's AccessTable (access_table.hpp), which
// sanitizerSetLaunchCallbackData handed over as `userdata`; a launch that was
// given no table (a graph's, say) passes null and is not measured.
//
// Built with `nvcc --fatbin --compile-as-tools-patch`: these run inside the
// app's kernels, so they are kept small, take no locks, and spend an atomic
// only when an access widens what its slot already holds (most accesses fall
// inside, and a plain load tells).
#include <cstdint>

#include "access_table.hpp"

namespace {

using overlap::measure::AccessSlot;
using overlap::measure::AccessTable;

// sanitizer_patching.h's result codes and access flags, restated so that the
// patches need not include the toolkit header.
constexpr int patch_success = 0;
constexpr std::uint32_t flag_read = 0x1;
constexpr std::uint32_t flag_write = 0x2;
constexpr std::uint32_t flag_prefetch = 0x8;

__device__ unsigned long long* as_ull(std::uint64_t* p) {
  return reinterpret_cast<unsigned long long*>(p);
}

/// Widens `slot` to [low, high); a stale plain read can only ask for an
/// atomic that was not needed, since the bounds only ever widen.
__device__ void widen(AccessSlot& slot, std::uint32_t low, std::uint32_t high) {
  if (~*static_cast<volatile std::uint32_t*>(&slot.not_low) > low) atomicMax(&slot.not_low, ~low);
  if (*static_cast<volatile std::uint32_t*>(&slot.high) < high) atomicMax(&slot.high, high);
}

/// Merges [address, address + size) in `mode` into the table of `slots`
/// regions of 2^shift bytes; false when probing found no slot. The range must
/// not cross a region of that table (callers split it).
__device__ bool merge(AccessSlot* table, unsigned slots, unsigned shift, std::uint64_t address,
                      std::uint32_t size, unsigned mode) {
  const std::uint64_t region = address >> shift;
  const std::uint64_t key = overlap::measure::region_key(region, mode);
  const auto low = static_cast<std::uint32_t>(address - (region << shift));
  const unsigned first = overlap::measure::first_slot(key, slots);
  for (unsigned probe = 0; probe < overlap::measure::max_probes; ++probe) {
    AccessSlot& slot = table[(first + probe) & (slots - 1U)];
    unsigned long long held = *static_cast<volatile unsigned long long*>(as_ull(&slot.key));
    if (held == 0) {
      held = atomicCAS(as_ull(&slot.key), 0ULL, static_cast<unsigned long long>(key));
      if (held == 0) held = key;
    }
    if (held == key) {
      widen(slot, low, low + size);
      return true;
    }
  }
  return false;
}

/// Records [address, address + size) in `mode`, fine regions first.
__device__ void record(AccessTable& t, std::uint64_t address, std::uint32_t size, unsigned mode) {
  using namespace overlap::measure;
  if (size == 0) return;
  // Most accesses are 1 to 16 bytes and aligned, inside one fine region;
  // bulk copies may span several, each merged on its own.
  const std::uint64_t end = address + size;
  for (std::uint64_t at = address; at < end;) {
    const std::uint64_t region_end = ((at >> fine_shift) + 1U) << fine_shift;
    const auto piece = static_cast<std::uint32_t>((end < region_end ? end : region_end) - at);
    if (!merge(t.fine, fine_slots, fine_shift, at, piece, mode) &&
        !merge(t.coarse, coarse_slots, coarse_shift, at, piece, mode)) {
      atomicAdd(&t.lost, 1U);
      atomicMax(as_ull(&t.not_hull_low[mode]), static_cast<unsigned long long>(~at));
      atomicMax(as_ull(&t.hull_high[mode]), static_cast<unsigned long long>(at + piece));
    }
    at += piece;
  }
}

/// The table of the grid running this code: `userdata` itself, or, for a
/// graph's kernel node, the table its directory files under this grid's id
/// (the directory's `unmatched` table where there is none, with the grid
/// noted among the first few such).
__device__ AccessTable& table_of(void* userdata) {
  using namespace overlap::measure;
  if (static_cast<const volatile std::uint32_t*>(userdata)[1] != kind_grid_directory)
    return *static_cast<AccessTable*>(userdata);
  auto& directory = *static_cast<GridDirectory*>(userdata);
  std::uint64_t grid = 0;
  asm("mov.u64 %0, %%gridid;" : "=l"(grid));
  const std::uint64_t key = grid + 1U;
  const unsigned first = first_slot(key, directory_slots);
  for (unsigned probe = 0; probe < directory_slots; ++probe) {
    volatile GridEntry& entry = directory.entries[(first + probe) & (directory_slots - 1U)];
    const std::uint64_t held = entry.key;
    if (held == key) {
      if (entry.seen == 0) entry.seen = 1;
      return *reinterpret_cast<AccessTable*>(entry.table);
    }
    if (held == 0) break;
  }
  for (std::uint64_t& slot : directory.unmatched_grids) {
    const unsigned long long held = *static_cast<volatile unsigned long long*>(as_ull(&slot));
    if (held == key) break;
    if (held == 0) {
      const unsigned long long was = atomicCAS(as_ull(&slot), 0ULL, static_cast<unsigned long long>(key));
      if (was == 0 || was == key) break;
    }
  }
  return directory.unmatched;
}

__device__ void record_flags(void* userdata, void* ptr, std::uint32_t size, std::uint32_t flags) {
  if (userdata == nullptr || (flags & flag_prefetch) != 0) return;
  AccessTable& t = table_of(userdata);
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  // An atomic both reads and writes; an access with neither flag is taken as a read.
  if ((flags & flag_write) != 0) record(t, address, size, overlap::measure::mode_write);
  if ((flags & flag_read) != 0 || (flags & flag_write) == 0)
    record(t, address, size, overlap::measure::mode_read);
}

}  // namespace

/// Each thread's start: a graph node's grid finds its entry (marking it
/// seen) even where it makes no access, so that "touched nothing" is told
/// from "never found its table".
extern "C" __device__ __noinline__ int OverlapBlockEnter(void* userdata, std::uint64_t /*pc*/) {
  if (userdata != nullptr &&
      static_cast<const volatile std::uint32_t*>(userdata)[1] == overlap::measure::kind_grid_directory)
    (void)table_of(userdata);
  return patch_success;
}

/// Every load, store and atomic to global memory.
extern "C" __device__ __noinline__ int OverlapGlobalAccess(void* userdata, std::uint64_t /*pc*/, void* ptr,
                                                           std::uint32_t size, std::uint32_t flags,
                                                           const void* /*data*/) {
  record_flags(userdata, ptr, size, flags);
  return patch_success;
}

/// cp.async: reads `size` bytes of global memory into shared memory.
extern "C" __device__ __noinline__ int OverlapMemcpyAsync(void* userdata, std::uint64_t /*pc*/, void* src,
                                                          std::uint32_t /*dst*/, std::uint32_t size) {
  if (src != nullptr) record_flags(userdata, src, size, flag_read);
  return patch_success;
}

/// cp.async.bulk global -> shared: bits 0..15 of `data` count 16-byte blocks.
extern "C" __device__ __noinline__ int OverlapBulkGlobalToShared(void* userdata, std::uint64_t /*pc*/,
                                                                 std::uint64_t src, std::uint32_t /*dst*/,
                                                                 std::uint32_t /*barrier*/,
                                                                 std::uint32_t data,
                                                                 std::uint32_t /*multicast*/) {
  record_flags(userdata, reinterpret_cast<void*>(src), (data & 0xFFFFU) * 16U, flag_read);
  return patch_success;
}

/// cp.async.bulk shared -> global: `blocks` 16-byte blocks written.
extern "C" __device__ __noinline__ int OverlapBulkSharedToGlobal(void* userdata, std::uint64_t /*pc*/,
                                                                 std::uint64_t dst, std::uint32_t /*src*/,
                                                                 std::uint32_t blocks) {
  record_flags(userdata, reinterpret_cast<void*>(dst), blocks * 16U, flag_write);
  return patch_success;
}

/// cp.reduce.async.bulk shared -> global: reads and writes `blocks` 16-byte blocks.
extern "C" __device__ __noinline__ int OverlapBulkReductionToGlobal(void* userdata, std::uint64_t /*pc*/,
                                                                    std::uint64_t dst, std::uint32_t /*src*/,
                                                                    std::uint32_t blocks) {
  record_flags(userdata, reinterpret_cast<void*>(dst), blocks * 16U, flag_read | flag_write);
  return patch_success;
}
