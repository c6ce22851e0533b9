// Stream ids and stream records (see streams.hpp).
#include "streams.hpp"

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_set>

#include "trace_names.hpp"
#include "tracer.hpp"

namespace overlap::inject {

namespace {

struct Streams {
  std::mutex mutex;
  std::unordered_set<std::uint32_t> written;  // ids that have their record
};

Streams& streams() {
  static auto* s = new Streams;  // never destroyed: calls can come during exit
  return *s;
}

std::uintptr_t handle_value(CUstream stream) {
  return reinterpret_cast<std::uintptr_t>(stream);
}

/// True the first time `id` is seen (its record is then due).
bool first_sight(std::uint32_t id) {
  ThreadState& ts = thread_state();
  const std::size_t cached = std::min(ts.streams_seen_count, ts.streams_seen.size());
  const std::uint32_t* const seen = ts.streams_seen.data();
  if (std::find(seen, seen + cached, id) != seen + cached) return false;
  ts.streams_seen[ts.streams_seen_count++ % ts.streams_seen.size()] = id;  // replaces the oldest
  Streams& s = streams();
  const std::lock_guard lock(s.mutex);
  return s.written.insert(id).second;
}

void write_stream_record(std::uint32_t id, CUstream handle, StreamKind kind, int priority) {
  std::string line;
  JsonLine(line, "stream")
      .number("stream", id)
      .number("handle", handle_value(handle))
      .string("kind", stream_kind_name(kind))
      .number("priority", priority)
      .finish();
  write_line(line);
}

/// A stream this library did not see created: ask the driver how it was made.
void describe_existing_stream(std::uint32_t id, CUstream handle) {
  unsigned int flags = 0;
  int priority = 0;
  {
    const OwnDriverCalls own;
    const CUresult flags_result = cuStreamGetFlags(handle, &flags);
    const CUresult priority_result = cuStreamGetPriority(handle, &priority);
    (void)driver_ok(flags_result, "cuStreamGetFlags");
    (void)driver_ok(priority_result, "cuStreamGetPriority");
    if (flags_result != CUDA_SUCCESS) flags = 0;
    if (priority_result != CUDA_SUCCESS) priority = 0;
  }
  write_stream_record(id, handle, created_stream_kind(flags), priority);
}

}  // namespace

std::optional<std::uint32_t> stream_id(CUcontext context, CUstream stream, bool per_thread_entry) {
  const std::uintptr_t handle = handle_value(stream);
  // A default stream is asked for as NULL plus the per-thread flag, the form
  // CUPTI documents, rather than as the special handles 0x1 and 0x2.
  const bool default_stream = is_default_stream_handle(handle);
  const bool per_thread =
      default_stream && default_stream_kind(handle, per_thread_entry) == StreamKind::per_thread_default;
  std::uint32_t id = 0;
  if (!cupti_ok(cuptiGetStreamIdEx(context, default_stream ? nullptr : stream, per_thread ? 1 : 0, &id),
                "cuptiGetStreamIdEx")) {
    return std::nullopt;
  }
  return id;
}

void note_stream_used(std::uint32_t id, CUstream stream, bool per_thread_entry) {
  if (!first_sight(id)) return;
  const std::uintptr_t handle = handle_value(stream);
  if (is_default_stream_handle(handle)) {
    write_stream_record(id, stream, default_stream_kind(handle, per_thread_entry), 0);
  } else {
    describe_existing_stream(id, stream);
  }
}

void note_stream_created(std::uint32_t id, CUstream stream, unsigned int flags, int priority) {
  if (!first_sight(id)) return;
  write_stream_record(id, stream, created_stream_kind(flags), priority);
}

}  // namespace overlap::inject
