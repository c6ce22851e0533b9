// Reads a launch's AccessTable (access_table.hpp) back as the byte intervals
// the kernel read and wrote, and writes them as the trace's `accesses` record
// of the measuring run's file (docs/trace-format.md). Pure C++: unit-tested
// on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "access_table.hpp"
#include "pointer_args.hpp"

namespace overlap::measure {

/// A half-open byte range [begin, end).
struct Interval {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  friend bool operator==(const Interval&, const Interval&) = default;
};

/// What one launch read and wrote, each sorted, disjoint and not touching
/// (ranges that meet are merged).
struct LaunchAccesses {
  std::vector<Interval> reads;
  std::vector<Interval> writes;
  /// Accesses that fit no slot: the intervals then include their hull, a
  /// superset of what they touched, and are not exact.
  std::uint32_t lost = 0;
};

/// The intervals `table` holds.
[[nodiscard]] LaunchAccesses read_table(const AccessTable& table);

/// Sorts and merges `intervals` in place (meeting ranges become one).
void merge_intervals(std::vector<Interval>& intervals);

/// Appends the `launch` record of the measuring run's `seq`th event, a
/// launch of `kernel` with address-like argument values `args`: its
/// intervals as flat [address, bytes, ...] lists, and `args` as the trace's
/// `ptrs` and `sptrs`. A kernel node of a graph launch says so with `graph`:
/// "measured", or not measured: "shared" (another node of its launch ran
/// the same kernel, and the two could not be told apart) or "unseen" (its
/// grid never found its table); empty for a launch.
void append_launch_record(std::string& line, std::uint64_t seq, std::string_view kernel,
                          const LaunchAccesses& accesses, const inject::PointerArgs& args,
                          std::string_view graph = {});

}  // namespace overlap::measure
