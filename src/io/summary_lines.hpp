// What the text exporters and the HTML report both say about a Timeline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "overlap/core/metrics.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap::io::detail {

/// "12.5%".
[[nodiscard]] std::string percent(double fraction);

/// The Timeline's program name, or "(unnamed)".
[[nodiscard]] std::string program_name(const Timeline& timeline);
/// The Timeline's device, or "unknown".
[[nodiscard]] std::string device_name(const Timeline& timeline);

/// The stream's name, or "stream 3" for an id the Timeline does not list.
[[nodiscard]] std::string stream_name(const Timeline& timeline, stream_id id);
/// "compute", or "GPU1 compute" when the timeline's streams are on several GPUs.
[[nodiscard]] std::string engine_label(const Timeline& timeline, engine unit, device_id device);

/// Time the host spent blocked in synchronous calls; empty when it never blocked.
[[nodiscard]] std::optional<double> host_blocked(const Timeline& timeline);

/// "Why not faster": a sentence per stall (the longest first, at most 8),
/// each naming the idle engine, the op that waited and what it waited for,
/// then "... and N more" when some are left out. Empty when no engine idled
/// while work waited.
[[nodiscard]] std::vector<std::string> why_not_faster(const Timeline& timeline, const Metrics& metrics);

}  // namespace overlap::io::detail
