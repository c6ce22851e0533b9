// Contexts the process created and `device` records for the devices they
// run on.
//
// The CONTEXT_CREATED resource callback only notes the device's ordinal
// (a CUPTI query); the driver is asked for the name, SM count and copy
// engine count at the next API exit, outside the resource callback. The
// live contexts are also where CUPTI's per-context dropped-record counts are
// read at exit.
#pragma once

#include <cuda.h>

#include <vector>

namespace overlap::inject {

/// From CONTEXT_CREATED: remember the context and queue its device's record.
void note_context_created(CUcontext context);
/// From CONTEXT_DESTROY_STARTING.
void note_context_destroyed(CUcontext context);
/// Writes the records of queued devices (cheap when there are none).
void write_queued_devices();
/// The contexts created and not yet destroyed.
[[nodiscard]] std::vector<CUcontext> live_contexts();

}  // namespace overlap::inject
