// CPU tests of measured accesses' host side: tables filled as the device
// patch fills them (the same key and slot functions) read back as intervals,
// merging, lost accesses, and the `accesses` record's text.
#include "access_intervals.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace overlap::measure {
namespace {

/// What patches.cu does for one access, on the host (one thread, no atomics).
bool merge(AccessSlot* table, unsigned slots, unsigned shift, std::uint64_t address, std::uint32_t size,
           unsigned mode) {
  const std::uint64_t region = address >> shift;
  const std::uint64_t key = region_key(region, mode);
  const auto low = static_cast<std::uint32_t>(address - (region << shift));
  const unsigned first = first_slot(key, slots);
  for (unsigned probe = 0; probe < max_probes; ++probe) {
    AccessSlot& slot = table[(first + probe) & (slots - 1U)];
    if (slot.key == 0) slot.key = key;
    if (slot.key != key) continue;
    slot.not_low = std::max(slot.not_low, ~low);
    slot.high = std::max(slot.high, low + size);
    return true;
  }
  return false;
}

void record(AccessTable& t, std::uint64_t address, std::uint32_t size, unsigned mode) {
  const std::uint64_t end = address + size;
  for (std::uint64_t at = address; at < end;) {
    const std::uint64_t region_end = ((at >> fine_shift) + 1U) << fine_shift;
    const auto piece = static_cast<std::uint32_t>(std::min(end, region_end) - at);
    if (!merge(t.fine, fine_slots, fine_shift, at, piece, mode) &&
        !merge(t.coarse, coarse_slots, coarse_shift, at, piece, mode)) {
      ++t.lost;
      t.not_hull_low[mode] = std::max(t.not_hull_low[mode], ~at);
      t.hull_high[mode] = std::max(t.hull_high[mode], at + piece);
    }
    at += piece;
  }
}

std::unique_ptr<AccessTable> empty_table() {
  return std::make_unique<AccessTable>();  // value-initialized: zeroed, as the launch's memset leaves it
}

TEST(MergeIntervals, SortsAndJoinsOverlappingAndMeetingRanges) {
  std::vector<Interval> v{{50, 60}, {0, 10}, {10, 20}, {15, 30}, {40, 45}, {44, 50}};
  merge_intervals(v);
  EXPECT_EQ(v, (std::vector<Interval>{{0, 30}, {40, 60}}));
}

TEST(ReadTable, EmptyTableHasNoAccesses) {
  const auto t = empty_table();
  const LaunchAccesses a = read_table(*t);
  EXPECT_TRUE(a.reads.empty());
  EXPECT_TRUE(a.writes.empty());
  EXPECT_EQ(a.lost, 0U);
}

// A kernel reading an odd-sized slice of a buffer in random order and writing
// another, with 4-byte accesses: read back exactly, across region borders.
TEST(ReadTable, DenseSlicesComeBackExactInAnyOrder) {
  const auto t = empty_table();
  const std::uint64_t in = 0x7f0000012344;  // not region-aligned
  const std::uint64_t out = 0x7f0100000000;
  const std::uint32_t n = 300'001;  // elements: crosses many 64 KiB regions
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (const std::uint32_t i : order) {
    record(*t, in + 4ULL * i, 4, mode_read);
    record(*t, out + 4ULL * i, 4, mode_write);
  }
  const LaunchAccesses a = read_table(*t);
  EXPECT_EQ(a.lost, 0U);
  EXPECT_EQ(a.reads, (std::vector<Interval>{{in, in + 4ULL * n}}));
  EXPECT_EQ(a.writes, (std::vector<Interval>{{out, out + 4ULL * n}}));
}

// Two disjoint slices of one buffer stay two intervals; an atomic both reads and writes.
TEST(ReadTable, DisjointSlicesStayApart) {
  const auto t = empty_table();
  const std::uint64_t base = 0x7f0000000000;
  for (std::uint64_t i = 0; i < 1000; ++i) record(*t, base + 8 * i, 8, mode_read);
  for (std::uint64_t i = 0; i < 1000; ++i) record(*t, base + (1 << 20) + 8 * i, 8, mode_read);
  record(*t, base + (5 << 20), 4, mode_read);
  record(*t, base + (5 << 20), 4, mode_write);
  const LaunchAccesses a = read_table(*t);
  EXPECT_EQ(a.reads, (std::vector<Interval>{{base, base + 8000},
                                            {base + (1 << 20), base + (1 << 20) + 8000},
                                            {base + (5 << 20), base + (5 << 20) + 4}}));
  EXPECT_EQ(a.writes, (std::vector<Interval>{{base + (5 << 20), base + (5 << 20) + 4}}));
}

// More fine regions than the fine table holds go on in coarse regions, and
// still come back exact for a dense range (here 256 MiB, 4096 fine regions).
TEST(ReadTable, LargeRangesOverflowIntoCoarseRegionsExactly) {
  const auto t = empty_table();
  const std::uint64_t base = 0x7f1000000000 + 12;
  const std::uint64_t bytes = std::uint64_t{1} << 28;
  for (std::uint64_t at = 0; at < bytes; at += 16) record(*t, base + at, 16, mode_write);
  const LaunchAccesses a = read_table(*t);
  EXPECT_EQ(a.lost, 0U);
  EXPECT_EQ(a.writes, (std::vector<Interval>{{base, base + bytes}}));
}

// Beyond both tables accesses are counted as lost and kept as their hull:
// a superset, flagged, never dropped.
TEST(ReadTable, AccessesBeyondBothTablesAreLostIntoAHull) {
  const auto t = empty_table();
  const std::uint64_t base = 0x700000000000;
  // One access in each of 4096 16-MiB regions: fine and coarse both fill.
  for (std::uint64_t r = 0; r < 4096; ++r) record(*t, base + (r << coarse_shift), 4, mode_read);
  const LaunchAccesses a = read_table(*t);
  EXPECT_GT(a.lost, 0U);
  ASSERT_FALSE(a.reads.empty());
  EXPECT_EQ(a.reads.front().begin, base);
  EXPECT_EQ(a.reads.back().end, base + (std::uint64_t{4095} << coarse_shift) + 4);
}

TEST(AccessRecord, FlatPairsOfAddressAndBytes) {
  LaunchAccesses a;
  a.reads = {{4096, 4096 + 100}, {10000, 10008}};
  a.writes = {{65536, 65536 + 4}};
  std::string line;
  append_launch_record(line, 42, "_Z6kernelPf", a, {});
  EXPECT_EQ(line,
            R"({"t":"launch","seq":42,"kernel":"_Z6kernelPf","reads":[4096,100,10000,8],"writes":[65536,4]})"
            "\n");
  a.lost = 3;
  line.clear();
  inject::PointerArgs args;
  args.params = {4096};
  args.in_structs = {65536};
  append_launch_record(line, 7, "k", a, args);
  EXPECT_NE(line.find(R"("lost":3,"ptrs":[4096],"sptrs":[65536])"), std::string::npos) << line;
}

}  // namespace
}  // namespace overlap::measure
