// Stream ids and `stream` records: every stream a call record names is
// described once, before or (for a creation) right after that call.
//
// Ids are CUPTI's (cuptiGetStreamIdEx), the numbers activity records carry.
// Streams the app creates are described at the creating call's exit from its
// flags and priority; default streams, and streams created where no traced
// call shows it (inside a library's call), the first time a call uses them,
// a default handle by the entry point's kind and any other by asking the
// driver for its flags and priority. (CUPTI's STREAM_CREATED resource event
// is not used: it can announce a context's internal NULL stream, whose flags
// would make a legacy default stream look like a blocking one.) A
// mutex-protected set remembers which ids were written.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>

namespace overlap::inject {

/// CUPTI's id of `stream` as a call through a (`per_thread_entry` or not)
/// entry point on `context` means it; nullopt, reported once, if CUPTI cannot tell.
[[nodiscard]] std::optional<std::uint32_t> stream_id(CUcontext context, CUstream stream,
                                                     bool per_thread_entry);

/// Writes the `stream` record of `id` if none was written yet.
void note_stream_used(std::uint32_t id, CUstream stream, bool per_thread_entry);

/// Writes the `stream` record of a stream the app just created.
void note_stream_created(std::uint32_t id, CUstream stream, unsigned int flags, int priority);

}  // namespace overlap::inject
