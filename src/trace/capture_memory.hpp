// The capture pass for managed memory's moves: which migrations a
// cudaMemPrefetchAsync made, and what crossed the host link.
//
// CUPTI reports managed memory's migrations as unified-memory counter
// records (`migration`): an address, bytes, a direction, a cause, and no
// stream or correlation id. A prefetch is stream-ordered work, so its
// migrations are given to the call that asked for them: the latest prefetch
// call that began before the migration, shares a byte with it (the driver
// moves whole pages), and goes its way (to the device: host-to-device).
// They become that call's device work,
// a copy on its stream, so the timeline draws them and the simulator orders
// them as CUDA does. The other migrations (page faults, the driver's own
// speculation, eviction) belong to no call: they are counted, not drawn.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace::detail {

/// The prefetch call (index into trace.calls) each migration was made by,
/// per migration of trace.migrations; empty for one no prefetch asked for.
[[nodiscard]] std::vector<std::optional<std::size_t>> prefetch_of_migrations(const RawTrace& trace);

/// `trace` with each prefetch's migrations added to its work as memcpy
/// records of the call (both ends "managed", on the call's stream); empty
/// when no migration belongs to a prefetch (nothing to add).
[[nodiscard]] std::optional<RawTrace> with_prefetch_work(const RawTrace& trace,
                                                         const std::vector<std::optional<std::size_t>>& by);

/// Copies between host and device (device records of memcpy calls and graph
/// nodes) and migrations, split by who moved them, into `link`; kernels'
/// mapped bytes are counted by the capture as it converts launches.
void count_link_moves(const RawTrace& trace, const std::vector<std::optional<std::size_t>>& by,
                      HostLinkTraffic& link);

}  // namespace overlap::trace::detail
