// overlap::sim::simulate: a discrete-event simulator of stream programs.
//
// Program x DeviceModel -> Timeline. It models the host thread issuing calls
// one at a time (with a per-call cost and blocking calls), in-order streams,
// events with CUDA's "most recent record at wait time" rule, the legacy
// default stream barrier, hardware work queues (Hyper-Q or Fermi's one queue
// per engine), one copy engine per direction (or one shared), how a copy
// engine picks among streams (src/sim/copy_arbitration), opposite copy
// directions slowing each other (by copy size), kernels sharing the SMs
// (src/sim/sm_sharing), start latencies (src/sim/start_latency) and each
// kind of host call's cost. The mechanisms and their figures come from the
// DeviceModel; `overlap probe` measures them on a GPU. A program on several
// GPUs (Stream::device) gets a set of engines, SMs, queues and a legacy
// default stream per GPU, each run with the one model; events order work
// across them, and a peer copy occupies the copy engine of its stream's GPU.
#pragma once

#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap::sim {

/// Whether a simulated timeline's spans carry their labels.
enum class span_labels : bool {
  made,        ///< each span and host span labelled, for people and exporters
  left_empty,  ///< no label made: for analyses that read times, ops and causes only
};

/// Runs `program` on `model` and returns the predicted timeline. Throws
/// overlap::invalid_input if an op lacks what the model needs (a kernel
/// without a duration).
[[nodiscard]] Timeline simulate(const Program& program, const DeviceModel& model,
                                span_labels labels = span_labels::made);

/// simulate(program, model).total(), without building the timeline: what a
/// repair is priced with (a trap's cost is two totals' difference).
[[nodiscard]] double simulated_total(const Program& program, const DeviceModel& model);

}  // namespace overlap::sim
