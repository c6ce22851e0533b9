// Joining the parts of one job that ran on different GPUs into one Program
// (and one Timeline), as a Pipeline spread over several GPUs reports them:
// each part's streams, events and buffers renamed "gpuN.<name>" and moved to
// GPU N, its ops and spans renumbered after those already there. The traces
// of a multi-process job (one process per GPU) join the same way, named by
// process ("rank0.<name>") and with host threads of their own.
#pragma once

#include <vector>

#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap {

/// Where a part's ids landed in the joined program.
struct JoinedIds {
  op_id first_op = 0;              ///< the part's op 0
  std::vector<stream_id> streams;  ///< the part's stream i is streams[i]
  std::string prefix;              ///< what the part's names were prefixed with
};

/// Appends `part`, a program that ran on one GPU, to `into` on `device`:
/// its streams, events and accessed buffers are renamed "gpu<device>.<name>",
/// its streams and device-wide ops (syncs, allocations) moved to `device`.
/// Throws invalid_input when a renamed stream or event is already in `into`.
JoinedIds append_on_device(Program& into, const Program& part, device_id device);

/// As append_on_device, the names prefixed with `prefix` ("rank0.") instead.
JoinedIds append_on_device(Program& into, const Program& part, device_id device, const std::string& prefix);

/// Appends `part`'s spans and host spans (a measured run of the part) to
/// `into`, with ids moved as `ids` says and times shifted by `offset`.
void append_on_device(Timeline& into, const Timeline& part, const JoinedIds& ids, double offset = 0.0);

/// As append_on_device for a part that ran in another process: its host
/// threads become lanes of their own, named ids.prefix + the thread's name.
void append_process(Timeline& into, const Timeline& part, const JoinedIds& ids, double offset);

}  // namespace overlap
