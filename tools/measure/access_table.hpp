// The per-launch table in which the device patch (patches.cu) merges a
// kernel's global-memory accesses, and the host (access_intervals.hpp)
// reads them back as byte intervals. Shared by the device and host code, so
// it is plain C++ of fixed layout.
//
// Why a hash table of regions rather than a list of accesses: a kernel makes
// millions of accesses, and the audit only needs which bytes it read and
// wrote. Memory is cut into regions; a slot holds one region and one mode
// (read or write) and the lowest and highest byte touched in it, so dense
// accesses (the common case: a kernel's slice of a buffer) come back exact,
// and sparse accesses inside one region come back as their hull. Fine
// regions (64 KiB) are tried first; a kernel touching more of them than the
// fine table holds goes on in coarse regions (16 MiB); what fits in neither
// is counted as lost and widens a per-mode hull, which the host reports as
// incomplete rather than dropping it silently. The table's size is fixed
// (about 40 KiB) whatever the kernel does.
#pragma once

#include <cstddef>
#include <cstdint>

// The key functions run in the device patch and on the host alike.
#ifdef __CUDACC__
#define OVERLAP_MEASURE_SHARED __host__ __device__
#else
#define OVERLAP_MEASURE_SHARED
#endif

namespace overlap::measure {

/// One region and mode: `key` is 0 while free, else region_key(); `not_low`
/// holds the bitwise complement of the lowest offset touched (so that a zeroed
/// slot means "none yet" and atomicMax lowers the offset); `high` the end of
/// the highest access (offset of its last byte + 1).
struct AccessSlot {
  std::uint64_t key;
  std::uint32_t not_low;
  std::uint32_t high;
};

inline constexpr unsigned fine_shift = 16;    ///< fine regions: 64 KiB
inline constexpr unsigned coarse_shift = 24;  ///< coarse regions: 16 MiB
inline constexpr unsigned fine_slots = 2048;  ///< powers of two (the hash masks)
inline constexpr unsigned coarse_slots = 512;
inline constexpr unsigned max_probes = 16;  ///< linear probing gives up after this many slots

/// Access modes as the table keys them.
inline constexpr unsigned mode_read = 0;
inline constexpr unsigned mode_write = 1;

/// What `kind` says of the memory a patched kernel is handed.
inline constexpr std::uint32_t kind_table = 0;                     ///< an AccessTable (zeroed, so 0)
inline constexpr std::uint32_t kind_grid_directory = 0x67726964U;  ///< a GridDirectory

/// What one launch touched. Zeroed before the launch; filled by the device.
struct AccessTable {
  /// Accesses that found no slot in either table; each widened `hull`.
  std::uint32_t lost;
  std::uint32_t kind;  ///< kind_table
  /// Per mode, the lowest address and the end of the highest of the lost
  /// accesses; kept as the complement of the low end, as in AccessSlot.
  std::uint64_t not_hull_low[2];
  std::uint64_t hull_high[2];
  AccessSlot fine[fine_slots];
  AccessSlot coarse[coarse_slots];
};

/// Graph kernel nodes of one launch that run the same kernel cannot be
/// handed tables of their own: the launch's callback data does not tell them
/// apart, and a kernel's own data is one pointer. So a kernel that runs as a
/// graph node is handed a directory instead, once for good (when its data is
/// read does not matter then), and each node's entry is written into it, on
/// the graph launch's stream, before the graph runs: its grid id (what the
/// node launch callback and the device's %gridid both give) and its table.
/// An access whose grid finds no entry lands in `unmatched`, and the host
/// then marks every node of that kernel in that launch as not measured
/// rather than guess.
struct GridEntry {
  std::uint64_t key;    ///< grid id + 1; 0 while free
  std::uint64_t table;  ///< the node's AccessTable (device address)
  /// Set by the device when the node's grid finds the entry (each thread
  /// looks as it starts): a node whose entry was never found did not run
  /// with the directory, and its empty table would say "touched nothing"
  /// wrongly, so it is written as not measured.
  std::uint64_t seen;
};

inline constexpr unsigned directory_slots = 4096;  ///< a power of two (the hash masks)
inline constexpr unsigned unmatched_grid_slots = 4;

struct GridDirectory {
  std::uint32_t reserved;
  std::uint32_t kind;  ///< kind_grid_directory: where AccessTable has its `kind`
  /// The first grids (keys, as in GridEntry) whose accesses found no entry.
  std::uint64_t unmatched_grids[unmatched_grid_slots];
  GridEntry entries[directory_slots];
  AccessTable unmatched;
};

// The device tells the two apart by `kind` alone.
static_assert(offsetof(AccessTable, kind) == sizeof(std::uint32_t) &&
              offsetof(GridDirectory, kind) == sizeof(std::uint32_t));

/// The key of `region` (an address shifted right by the table's shift) in
/// `mode`: never 0, the free slot's key.
OVERLAP_MEASURE_SHARED constexpr std::uint64_t region_key(std::uint64_t region, unsigned mode) {
  return ((region << 1U) | mode) + 1U;
}

/// The slot where probing for `key` starts in a table of `slots` (a power of two).
OVERLAP_MEASURE_SHARED constexpr unsigned first_slot(std::uint64_t key, unsigned slots) {
  // Fibonacci hashing: neighbouring regions land far apart.
  return static_cast<unsigned>((key * 0x9E3779B97F4A7C15ULL) >> 40U) & (slots - 1U);
}

}  // namespace overlap::measure
