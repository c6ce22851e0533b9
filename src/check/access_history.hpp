// The race detector's memory of past accesses, per buffer and byte range.
//
// Each buffer is an interval map: segments of bytes that every remembered
// access covers whole (a segment splits when an access starts or ends inside
// it). Within a segment, accesses are kept per timeline and mode in issue
// order, which on one timeline is also happens-before order. So the earlier
// accesses that do NOT happen before a new op with clock C are, on timeline t,
// exactly those after position C[t]: a suffix, found by scanning back from
// the newest. A query costs O(segments x timelines touched + races found),
// not O(accesses so far).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "overlap/check/happens_before.hpp"
#include "overlap/core/program.hpp"

namespace overlap::check::detail {

/// Bytes [begin, end); end == unbounded means "to the end of the buffer".
struct ByteRange {
  static constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t begin = 0;
  std::uint64_t end = unbounded;

  [[nodiscard]] bool empty() const noexcept { return end <= begin; }
};

/// The bytes an Access covers (no size: to the end of the buffer).
[[nodiscard]] ByteRange range_of(const Access& access) noexcept;
/// The bytes two ranges share (empty if none).
[[nodiscard]] ByteRange intersect(ByteRange a, ByteRange b) noexcept;
/// True when two accesses touch a common byte of one buffer and one writes.
[[nodiscard]] bool conflict(const Access& a, const Access& b) noexcept;
/// True when some access of `a` conflicts with some access of `b`.
[[nodiscard]] bool conflict(const Op& a, const Op& b) noexcept;

/// A remembered access: the op, which of its accesses, and its position on its timeline.
struct PastAccess {
  std::uint32_t sequence = 0;
  op_id op = 0;
  std::uint32_t access = 0;  ///< index into the op's accesses
};

/// Remembered accesses to one buffer.
class BufferHistory {
 public:
  BufferHistory();

  /// Calls report(past) for every remembered access overlapping `range`
  /// that conflicts with `mode` (at least one of the two writes) and does
  /// not happen before the op whose clock is `clock`. The same past access
  /// may be reported once per segment it spans.
  template <typename Report>
  void conflicts(ByteRange range, access_mode mode, const VectorClock& clock, Report&& report) {
    for (auto it = first_segment(range); it != segments_.end() && it->first < range.end; ++it) {
      for (const Lane& lane : it->second) {
        const std::uint32_t known = clock[lane.timeline];
        report_after(lane.writes, known, report);
        if (mode == access_mode::write) report_after(lane.reads, known, report);
      }
    }
  }

  /// Remembers an access. `host_known` lets it forget accesses the host has
  /// already waited for: every later op is ordered after them.
  void record(ByteRange range, access_mode mode, Epoch epoch, PastAccess past, const VectorClock& host_known);

 private:
  struct Lane {
    timeline_id timeline = 0;
    std::vector<PastAccess> writes;
    std::vector<PastAccess> reads;
    std::size_t writes_after_prune = 0;
    std::size_t reads_after_prune = 0;
  };
  using Segment = std::vector<Lane>;
  using Segments = std::map<std::uint64_t, Segment>;  // keyed by first byte; runs to the next key

  template <typename Report>
  static void report_after(const std::vector<PastAccess>& list, std::uint32_t known, Report& report) {
    for (auto it = list.rbegin(); it != list.rend() && it->sequence > known; ++it) report(*it);
  }

  Segments::iterator first_segment(ByteRange range);
  void split_at(std::uint64_t at);
  static void append(std::vector<PastAccess>& list, std::size_t& after_prune, PastAccess past,
                     std::uint32_t forgettable);

  Segments segments_;
};

}  // namespace overlap::check::detail
