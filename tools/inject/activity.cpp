// CUPTI activity records (device work, synchronizations, NVTX ranges) as
// trace records: buffer hand-out, buffer completion, one JSON line each.
//
// CUPTI asks for empty buffers (1 MiB, from a pool) and hands them back
// full, on its own thread or on the thread that flushes. Small buffers come
// back while the app runs, so their records are written (and read by an
// audit following the file) then, not all at the app's exit. Each record is cast
// to the struct its kind has in CUDA 13's cupti_activity.h and written to a
// per-thread batch that goes to the writer in one append. Records CUPTI could
// not time (start 0, or end before start) are counted as dropped rather than
// written: the converter takes the earliest start as the trace's origin.
// NVTX START and END markers are paired by id into one `range` record.
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "devices.hpp"
#include "tracer.hpp"

namespace overlap::inject {

namespace {

constexpr std::size_t activity_buffer_bytes = std::size_t{1} << 20;
/// 512 MiB at most in CUPTI's hands; beyond that CUPTI drops (and counts) records.
constexpr std::size_t max_activity_buffers = 512;
/// How often CUPTI's worker thread hands back the buffers that are full.
constexpr std::uint32_t flush_period_ms = 100;
/// A batch goes to the writer once it holds this much.
constexpr std::size_t batch_bytes = std::size_t{256} << 10;
/// Unmatched NVTX range starts kept at most (a START whose END never comes).
constexpr std::size_t max_open_ranges = 65536;

struct BufferPool {
  std::mutex mutex;
  std::vector<std::uint8_t*> free;
  std::size_t allocated = 0;
};

BufferPool& pool() {
  static auto* p = new BufferPool;  // never destroyed: CUPTI returns buffers during exit
  return *p;
}

struct OpenRange {
  std::string name;
  std::string domain;
  std::uint64_t start = 0;
  std::uint64_t tid = 0;
};

struct Ranges {
  std::mutex mutex;
  std::unordered_map<std::uint32_t, OpenRange> open;  // by marker id
};

Ranges& ranges() {
  static auto* r = new Ranges;
  return *r;
}

std::atomic<std::uint64_t> dropped_by_cupti{0};

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;  // as many as fit
  *buffer = nullptr;
  *size = 0;
  BufferPool& p = pool();
  const std::lock_guard lock(p.mutex);
  if (!p.free.empty()) {
    *buffer = p.free.back();
    p.free.pop_back();
  } else if (p.allocated < max_activity_buffers) {
    // CUPTI requires 8-byte alignment (ACTIVITY_RECORD_ALIGNMENT).
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, activity_buffer_bytes));
    if (*buffer != nullptr) ++p.allocated;
  }
  if (*buffer != nullptr) *size = activity_buffer_bytes;
}

void return_buffer(std::uint8_t* buffer) {
  if (buffer == nullptr) return;
  BufferPool& p = pool();
  const std::lock_guard lock(p.mutex);
  p.free.push_back(buffer);
}

std::string_view activity_copy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "h2d";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "d2h";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "d2d";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "h2h";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "h2a";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "a2h";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "a2a";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "a2d";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "d2a";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "p2p";
    default: return "unknown";
  }
}

std::string_view memory_kind_name(std::uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "managed";
    default: return "unknown";
  }
}

std::string_view sync_type_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context";
    default: return "unknown";
  }
}

/// Turns activity records into lines of one batch.
class BatchWriter {
 public:
  BatchWriter(Tracer& tracer, std::string& batch) : tracer_(tracer), batch_(batch) { batch_.clear(); }
  ~BatchWriter() { flush(); }
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;
  BatchWriter(BatchWriter&&) = delete;
  BatchWriter& operator=(BatchWriter&&) = delete;

  void record(const CUpti_Activity& activity) {
    switch (activity.kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(activity));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(activity));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        peer_memcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(activity));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        memset(reinterpret_cast<const CUpti_ActivityMemset4&>(activity));
        break;
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        sync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(activity));
        break;
      case CUPTI_ACTIVITY_KIND_MARKER:
        marker(reinterpret_cast<const CUpti_ActivityMarker2&>(activity));
        break;
      default: break;  // a kind this library did not enable
    }
    if (batch_.size() >= batch_bytes) flush();
  }

  void flush() noexcept {
    if (records_ == 0) return;
    try {
      tracer_.writer.append(batch_, records_);
    } catch (...) {
      tracer_.writer.count_lost(records_);  // out of memory
    }
    batch_.clear();
    records_ = 0;
  }

 private:
  /// False (and the record counted as dropped) when CUPTI could not time it.
  bool timed(std::uint64_t start, std::uint64_t end) {
    if (start != 0 && end >= start) return true;
    tracer_.writer.count_lost(1);
    return false;
  }

  void kernel(const CUpti_ActivityKernel10& k) {
    if (!timed(k.start, k.end)) return;
    JsonLine line(batch_, "kernel");
    line.number("corr", k.correlationId)
        .number("start", k.start)
        .number("end", k.end)
        .number("stream", k.streamId)
        .number("device", k.deviceId)
        .string("name", k.name != nullptr ? k.name : "")
        .triple("grid", static_cast<std::uint32_t>(k.gridX), static_cast<std::uint32_t>(k.gridY),
                static_cast<std::uint32_t>(k.gridZ))
        .triple("block", static_cast<std::uint32_t>(k.blockX), static_cast<std::uint32_t>(k.blockY),
                static_cast<std::uint32_t>(k.blockZ));
    if (k.graphNodeId != 0) line.number("node", k.graphNodeId);  // run by a graph launch
    line.finish();
    ++records_;
  }

  void memcpy(const CUpti_ActivityMemcpy6& m) {
    if (!timed(m.start, m.end)) return;
    JsonLine line(batch_, "memcpy");
    line.number("corr", m.correlationId)
        .number("start", m.start)
        .number("end", m.end)
        .number("bytes", m.bytes)
        .string("kind", activity_copy_kind(m.copyKind))
        .string("src", memory_kind_name(m.srcKind))
        .string("dst", memory_kind_name(m.dstKind))
        .number("stream", m.streamId)
        .number("device", m.deviceId)
        .boolean("async", (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0);
    if (m.graphNodeId != 0) line.number("node", m.graphNodeId);
    line.finish();
    ++records_;
    // CUPTI names the runtime call that made the copy when it knows it; say
    // so in case no driver callback gave the pair.
    if (m.runtimeCorrelationId != 0 && m.runtimeCorrelationId != m.correlationId) {
      JsonLine(batch_, "alias").number("corr", m.correlationId).number("of", m.runtimeCorrelationId).finish();
      ++records_;
    }
  }

  void peer_memcpy(const CUpti_ActivityMemcpyPtoP4& m) {
    if (!timed(m.start, m.end)) return;
    JsonLine(batch_, "memcpy")
        .number("corr", m.correlationId)
        .number("start", m.start)
        .number("end", m.end)
        .number("bytes", m.bytes)
        .string("kind", activity_copy_kind(m.copyKind))
        .string("src", memory_kind_name(m.srcKind))
        .string("dst", memory_kind_name(m.dstKind))
        .number("stream", m.streamId)
        .number("device", m.deviceId)
        .number("src_device", m.srcDeviceId)
        .number("dst_device", m.dstDeviceId)
        .boolean("async", (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0)
        .finish();
    ++records_;
  }

  void memset(const CUpti_ActivityMemset4& m) {
    if (!timed(m.start, m.end)) return;
    JsonLine line(batch_, "memset");
    line.number("corr", m.correlationId)
        .number("start", m.start)
        .number("end", m.end)
        .number("bytes", m.bytes)
        .number("stream", m.streamId)
        .number("device", m.deviceId)
        .boolean("async", (m.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0);
    if (m.graphNodeId != 0) line.number("node", m.graphNodeId);
    line.finish();
    ++records_;
  }

  void sync(const CUpti_ActivitySynchronization2& s) {
    if (!timed(s.start, s.end)) return;
    JsonLine line(batch_, "sync");
    line.number("corr", s.correlationId)
        .number("start", s.start)
        .number("end", s.end)
        .string("type", sync_type_name(s.type));
    if (s.streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) line.number("stream", s.streamId);
    if (s.cudaEventId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) line.number("event_id", s.cudaEventId);
    line.finish();
    ++records_;
  }

  void marker(const CUpti_ActivityMarker2& m) {
    const auto flags = static_cast<std::uint32_t>(m.flags);
    if ((flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
      OpenRange range;
      range.name = m.name != nullptr ? m.name : "";
      range.domain = m.domain != nullptr ? m.domain : "";
      range.start = m.timestamp;
      range.tid = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m.objectId.pt.threadId : 0;
      Ranges& r = ranges();
      const std::lock_guard lock(r.mutex);
      if (r.open.size() < max_open_ranges) r.open.insert_or_assign(m.id, std::move(range));
      return;
    }
    if ((flags & CUPTI_ACTIVITY_FLAG_MARKER_END) == 0) return;  // an instantaneous mark: no range
    OpenRange range;
    {
      Ranges& r = ranges();
      const std::lock_guard lock(r.mutex);
      const auto it = r.open.find(m.id);
      if (it == r.open.end()) return;
      range = std::move(it->second);
      r.open.erase(it);
    }
    if (!timed(range.start, m.timestamp)) return;
    JsonLine line(batch_, "range");
    line.string("name", range.name)
        .number("start", range.start)
        .number("end", m.timestamp)
        .number("tid", range.tid);
    if (!range.domain.empty()) line.string("domain", range.domain);
    line.finish();
    ++records_;
  }

  Tracer& tracer_;
  std::string& batch_;
  std::uint64_t records_ = 0;
};

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                               std::size_t /*size*/, std::size_t valid_size) {
  Tracer* t = tracer();
  if (t != nullptr && buffer != nullptr) {
    const RunningCallback running(*t);
    const CostTimer cost(*t, t->costs.activity_ns, t->costs.activity_buffers);
    try {
      BatchWriter writer(*t, thread_state().batch);
      CUpti_Activity* record = nullptr;
      for (;;) {
        const CUptiResult result = cuptiActivityGetNextRecord(buffer, valid_size, &record);
        if (result == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // the end of the buffer
        if (!cupti_ok(result, "cuptiActivityGetNextRecord")) break;
        writer.record(*record);
      }
    } catch (...) {
      t->writer.count_lost(1);  // out of memory: the rest of this buffer is lost
    }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS) {
      dropped_by_cupti.fetch_add(dropped, std::memory_order_relaxed);
    }
  }
  return_buffer(buffer);
}

/// The kinds traced, with the names their error records use.
struct TracedKind {
  CUpti_ActivityKind kind;
  std::string_view what;
};

constexpr std::array<TracedKind, 6> traced_kinds{{
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)"},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "cuptiActivityEnable(MEMCPY2)"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)"},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "cuptiActivityEnable(SYNCHRONIZATION)"},
    {CUPTI_ACTIVITY_KIND_MARKER, "cuptiActivityEnable(MARKER)"},
}};

}  // namespace

CUptiResult start_activity_tracing() {
  const CUptiResult registered = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
  if (!cupti_ok(registered, "cuptiActivityRegisterCallbacks")) return registered;
  // Marker records then carry OS thread ids, as call records do.
  (void)cupti_ok(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType");
  // A kind that does not enable (MARKER without NVTX injection, say) leaves
  // an error record and the others still run.
  for (const TracedKind& k : traced_kinds) (void)cupti_ok(cuptiActivityEnable(k.kind), k.what);
  (void)cupti_ok(cuptiActivityFlushPeriod(flush_period_ms), "cuptiActivityFlushPeriod");
  return CUPTI_SUCCESS;
}

void flush_activity(bool forced) {
  // At exit CUDA may already be torn down: a failure here only means there
  // is nothing left to deliver, so it is not reported.
  (void)cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

std::uint64_t activity_records_dropped(bool per_context) {
  std::uint64_t total = dropped_by_cupti.load(std::memory_order_relaxed);
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) total += dropped;
  if (!per_context) return total;
  for (CUcontext context : live_contexts()) {
    dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, 0, &dropped) == CUPTI_SUCCESS) total += dropped;
  }
  return total;
}

}  // namespace overlap::inject
