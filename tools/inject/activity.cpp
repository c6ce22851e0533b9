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
// Managed memory's migrations come as `migration` records (unless
// OVERLAP_TRACE_MIGRATIONS=0).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
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

std::string_view migration_cause_name(std::uint32_t cause) {
  switch (cause) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER: return "explicit";  // cudaMemPrefetchAsync
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE: return "fault";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH: return "speculative";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION: return "eviction";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS: return "access_counters";
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
      case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
        migration(reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3&>(activity));
        break;
      default: break;  // a kind this library did not enable
    }
    if (batch_.size() >= batch_bytes) flush();
  }

  void flush() noexcept {
    try {
      write_moves();
    } catch (...) {
      tracer_.writer.count_lost(1);  // out of memory
    }
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
  /// Migrations merged: the driver moves managed memory on demand a page
  /// or a few at a time (a run over 20 x 512 MiB wrote 210,000 records), and
  /// a record per page costs the tracer, the file and the reader without
  /// saying more. A prefetch's moves merge while they continue each other
  /// (the capture gives them to the prefetch whose bytes they move); the
  /// driver's own ones (on faults, speculative, evictions) merge by the
  /// millisecond, each way and cause apart, keeping their count and summed
  /// time.
  struct Move {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint64_t bytes = 0;
    std::uint64_t address = 0;
    std::string_view kind;
    std::string_view cause;
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint64_t count = 1;  ///< migrations merged
    std::uint64_t busy = 0;   ///< their durations summed, ns

    [[nodiscard]] bool same_way(const Move& next) const {
      return next.kind == kind && next.cause == cause && next.src == src && next.dst == dst;
    }

    /// `next` (moved the same way) joins these: a prefetch's that moves the
    /// bytes right after, at most max_move_gap_ns after these ended; the
    /// driver's own that began within merge_window_ns of the first.
    [[nodiscard]] bool continued_by(const Move& next) const {
      if (next.start < start) return false;
      if (cause == "explicit") return next.address == address + bytes && next.start <= end + max_move_gap_ns;
      return next.start < start + merge_window_ns;
    }

    void merge(const Move& next) {
      end = std::max(end, next.end);
      bytes += next.bytes;
      count += next.count;
      busy += next.busy;
    }
  };
  static constexpr std::uint64_t max_move_gap_ns = 5000;
  static constexpr std::uint64_t merge_window_ns = 1'000'000;

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

  // Managed memory the driver moved across the link: for an explicit
  // prefetch, on a page fault, speculatively or on eviction.
  void migration(const CUpti_ActivityUnifiedMemoryCounter3& m) {
    std::string_view direction;
    switch (m.counterKind) {
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD: direction = "h2d"; break;
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH: direction = "d2h"; break;
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD: direction = "d2d"; break;
      default: return;  // a counter this library did not configure
    }
    if (!timed(m.start, m.end)) return;
    const Move next{m.start, m.end,   m.value, m.address,      direction, migration_cause_name(m.flags),
                    m.srcId, m.dstId, 1,       m.end - m.start};
    for (Move& open : moves_) {
      if (!open.same_way(next)) continue;
      if (open.continued_by(next)) {
        open.merge(next);
        return;
      }
      write_move(open);
      open = next;
      return;
    }
    moves_.push_back(next);
  }

  /// Writes a migration (merged or not).
  void write_move(const Move& move) {
    JsonLine line(batch_, "migration");
    line.number("start", move.start)
        .number("end", move.end)
        .number("bytes", move.bytes)
        .number("address", move.address)
        .string("kind", move.kind)
        .string("cause", move.cause)
        .number("src", move.src)
        .number("dst", move.dst);
    if (move.count > 1) line.number("count", move.count).number("busy", move.busy);
    line.finish();
    ++records_;
  }

  /// Writes the migrations being merged.
  void write_moves() {
    for (const Move& move : moves_) write_move(move);
    moves_.clear();
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
  std::vector<Move> moves_;  // being merged: one per way and cause
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

/// OVERLAP_TRACE_MIGRATIONS=0 turns managed memory's migration records off.
bool migrations_wanted() {
  const char* set = std::getenv("OVERLAP_TRACE_MIGRATIONS");  // NOLINT(concurrency-mt-unsafe): at start-up
  return set == nullptr || std::string_view(set) != "0";
}

// Managed memory's moves across the link, both ways. CUPTI wants the
// counters configured before the kind is enabled, and the driver ready: at
// injection, inside cuInit, enabling fails with CUPTI_ERROR_NOT_READY (seen
// on the H100), so this waits for the first call made with a context. Where
// unified memory profiling is not supported (some virtualized or MPS
// set-ups) it fails with an error record and the rest of the trace is
// unaffected.
void enable_migrations() {
  std::array<CUpti_ActivityUnifiedMemoryCounterConfig, 2> config{};
  config[0].kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD;
  config[1].kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH;
  for (auto& c : config) {
    c.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    c.enable = 1;
  }
  if (!cupti_ok(cuptiActivityConfigureUnifiedMemoryCounter(config.data(), config.size()),
                "cuptiActivityConfigureUnifiedMemoryCounter"))
    return;
  (void)cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER),
                 "cuptiActivityEnable(UNIFIED_MEMORY_COUNTER)");
}

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

void enable_migrations_once() {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire) || done.exchange(true, std::memory_order_acq_rel)) return;
  if (migrations_wanted()) enable_migrations();
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
