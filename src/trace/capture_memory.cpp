// The capture pass for managed memory's moves (see capture_memory.hpp).
#include "capture_memory.hpp"

#include <algorithm>
#include <numeric>

namespace overlap::trace::detail {

namespace {

/// A prefetch moving host-to-device data goes to the device; "to" unknown
/// (a batch without locations) takes either way.
bool goes_way(const Call& c, const std::string& kind) {
  if (c.to.empty()) return kind == "h2d" || kind == "d2h";
  return (c.to == "device" && kind == "h2d") || (c.to == "host" && kind == "d2h");
}

// The driver moves whole pages: a prefetch of a range that starts inside a
// page moves from the page's start, so a move is the call's when their
// ranges share a byte, not only when the call's range holds the first.
bool overlaps(const Call& c, const Migration& move) {
  return move.address < c.ptr + c.bytes && c.ptr < move.address + move.bytes;
}

void add_move(LinkMoves& moves, const std::string& kind, std::uint64_t bytes, std::uint64_t count,
              std::uint64_t busy_ns) {
  if (kind == "h2d") {
    moves.h2d_bytes += bytes;
  } else if (kind == "d2h") {
    moves.d2h_bytes += bytes;
  } else {
    return;  // device to device: not the host link
  }
  moves.count += count;
  moves.busy_ms += static_cast<double>(busy_ns) * 1e-6;
}

}  // namespace

std::vector<std::optional<std::size_t>> prefetch_of_migrations(const RawTrace& trace) {
  std::vector<std::optional<std::size_t>> by(trace.migrations.size());
  std::vector<std::size_t> prefetches;  // successful prefetch calls, by start
  for (std::size_t i = 0; i < trace.calls.size(); ++i) {
    const Call& c = trace.calls[i];
    if (c.cls == call_class::prefetch && c.status == 0 && c.bytes > 0) prefetches.push_back(i);
  }
  if (prefetches.empty()) return by;
  std::stable_sort(prefetches.begin(), prefetches.end(),
                   [&](std::size_t a, std::size_t b) { return trace.calls[a].start < trace.calls[b].start; });
  for (std::size_t m = 0; m < trace.migrations.size(); ++m) {
    const Migration& move = trace.migrations[m];
    if (move.cause != "explicit") continue;
    // The latest prefetch begun before the move that shares a byte with it and goes its way.
    auto it = std::upper_bound(prefetches.begin(), prefetches.end(), move.start,
                               [&](std::uint64_t t, std::size_t i) { return t < trace.calls[i].start; });
    while (it != prefetches.begin()) {
      --it;
      const Call& c = trace.calls[*it];
      if (overlaps(c, move) && goes_way(c, move.kind)) {
        by[m] = *it;
        break;
      }
    }
  }
  return by;
}

std::optional<RawTrace> with_prefetch_work(const RawTrace& trace,
                                           const std::vector<std::optional<std::size_t>>& by) {
  if (std::none_of(by.begin(), by.end(), [](const auto& call) { return call.has_value(); }))
    return std::nullopt;
  RawTrace out = trace;
  for (std::size_t m = 0; m < by.size(); ++m) {
    if (!by[m]) continue;
    const Migration& move = trace.migrations[m];
    const Call& c = trace.calls[*by[m]];
    DeviceWork w;
    w.kind = work_kind::memcpy;
    w.corr = c.corr;
    w.start = move.start;
    w.end = move.end;
    w.stream = c.stream;
    w.bytes = move.bytes;
    w.copy_kind = move.kind;
    w.src_kind = "managed";
    w.dst_kind = "managed";
    w.async = true;
    out.work.push_back(std::move(w));
  }
  return out;
}

void count_link_moves(const RawTrace& trace, const std::vector<std::optional<std::size_t>>& by,
                      HostLinkTraffic& link) {
  for (const DeviceWork& w : trace.work) {
    if (w.kind == work_kind::memcpy) add_move(link.copies, w.copy_kind, w.bytes, 1, w.end - w.start);
  }
  for (std::size_t m = 0; m < trace.migrations.size(); ++m) {
    const Migration& move = trace.migrations[m];
    add_move(by[m] ? link.prefetches : link.on_demand, move.kind, move.bytes, move.count, move.busy);
  }
}

}  // namespace overlap::trace::detail
