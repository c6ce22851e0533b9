// overlap::check traps: correct programs that lose overlap, and what each costs.
//
// Each rule finds a pattern that costs concurrency without being wrong and
// prices it on a device model as simulate(program) - simulate(program with the
// trap repaired), in the program's time unit. A repair is a program the user
// could write: when it drops an ordering the program relied on (a barrier, a
// blocking copy, a device-wide sync), the orderings its declared accesses need
// are put back as event record/wait pairs, and the fix sentence says so.
// A rule reports once for all its instances (repaired together) and only when
// the repair saves at least TrapOptions::min_time_lost_fraction of the
// predicted run time (below that the model's per-call costs are the whole
// difference); the no-op wait of rule (g) is reported whatever it costs.
//
// The rules (ids in findings.hpp):
//   (a) legacy-default-stream: a copy or memset on the legacy default stream
//       in a program that uses other streams; repaired as an async copy from
//       pinned memory on the stream of its first consumer, else a new
//       non-blocking stream.
//   (b) pageable-async-copy: cudaMemcpyAsync from pageable memory; repaired
//       with pinned memory.
//   (c) implicit-synchronization: allocation or free issued while streams have
//       work in flight and more work follows; repaired by allocating before the
//       first op and freeing after the last.
//   (d) device-synchronize: cudaDeviceSynchronize that waits for in-flight
//       streams whose work no host access before the next device-wide sync
//       touches; repaired as cudaStreamSynchronize of the streams it does
//       touch (or dropped). Needs declared accesses.
//   (e) copy-engine-serialization (info): same-direction copies issued back to
//       back on several streams, unordered, that the model ran one after
//       another on one copy engine; reports the serialized copy time.
//   (f) hardware-queue-sharing: more streams than hardware queues (Hyper-Q
//       mapping) with false dependencies in the timeline; repaired by raising
//       CUDA_DEVICE_MAX_CONNECTIONS (at most 32).
//   (g) unrecorded-event: a wait or event synchronize on an event not recorded
//       before it (a no-op); time lost 0.
#pragma once

#include <vector>

#include "overlap/check/findings.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"

namespace overlap::check {

/// Which traps are worth reporting.
struct TrapOptions {
  /// A trap is reported when its repair saves at least this fraction of the
  /// program's predicted run time (and more than rounding).
  double min_time_lost_fraction = 0.01;
};

/// Every trap in `program` on `model`, most severe first, then by first op.
/// Throws overlap::invalid_input if the program cannot be simulated on the model.
[[nodiscard]] std::vector<Finding> find_traps(const Program& program, const DeviceModel& model,
                                              const TrapOptions& options = {});

}  // namespace overlap::check
