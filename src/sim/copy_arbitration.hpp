// Which ready copy a copy engine starts next (DeviceModel::arbitration).
//
// `overlap probe` queues copies on several streams behind a held GPU,
// releases them at once and reads the order they finished in. On an H100
// they ran stream by stream, each stream's copies back to back, the streams
// in cyclic creation order from wherever the engine last was, whatever order
// the host issued them in: stream_round_robin. earliest_ready (the presets'
// rule) interleaves them in the order they became ready.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"

namespace overlap::sim {

/// A copy that is ready and waits for its engine.
struct copy_candidate {
  op_id op = 0;
  stream_id stream = 0;
  int priority = 0;    ///< larger is more urgent
  double ready = 0.0;  ///< when it became ready
};

/// Index in `candidates` (non-empty, all for one engine) of the copy to start:
/// the most urgent priority first, then by `policy`. `last_stream` is the
/// stream the engine served last (none before its first copy);
/// `stream_count` the program's streams.
[[nodiscard]] std::size_t pick_copy(std::span<const copy_candidate> candidates, copy_arbitration policy,
                                    std::optional<stream_id> last_stream, std::size_t stream_count);

}  // namespace overlap::sim
