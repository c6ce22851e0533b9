// A RawTrace as a Program (the host's calls in issue order) and the measured
// Timeline of the same ops. See capture.hpp for the assumptions.
#include "overlap/trace/capture.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "allocations.hpp"
#include "capture_accesses.hpp"
#include "capture_graph_ops.hpp"
#include "capture_graphs.hpp"
#include "capture_memory.hpp"
#include "capture_threads.hpp"
#include "capture_timeline.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap::trace {

namespace {

constexpr double ms_per_ns = 1e-6;

std::uint64_t trace_start(const RawTrace& trace) {
  std::uint64_t t0 = UINT64_MAX;
  for (const Call& c : trace.calls) t0 = std::min(t0, c.start);
  for (const DeviceWork& w : trace.work) t0 = std::min(t0, w.start);
  return t0;
}

stream_kind parse_stream_kind(const std::string& kind) {
  if (kind == "non_blocking") return stream_kind::non_blocking;
  if (kind == "legacy_default") return stream_kind::legacy_default;
  if (kind == "per_thread_default") return stream_kind::per_thread_default;
  return stream_kind::blocking;
}

bool is_host_memory_kind(const std::string& kind) {
  return kind == "pageable" || kind == "pinned";
}

/// Builds the Program op by op while walking the calls in host order.
class Converter {
 public:
  Converter(const RawTrace& trace, const CaptureOptions& options)
      : trace_(trace),
        options_(options),
        t0_(trace_start(trace)),
        order_(detail::host_order(trace)),
        threads_(trace, order_) {
    for (const StreamRecord& s : trace.streams) stream_kinds_.try_emplace(s.id, s);
    const std::vector<std::size_t> graph_launches = graph_launch_calls(trace);
    for (std::size_t i = 0; i < trace.work.size(); ++i) {
      const DeviceWork& w = trace.work[i];
      if (w.kind == work_kind::sync) continue;
      if (w.corr == 0 && w.node != 0) {
        // A conditional node's body runs with no correlation id (CUPTI gives
        // its records 0, seen on the H100): it belongs to the latest graph
        // launch begun before it ran.
        if (const auto launch = launch_before(trace, graph_launches, w.start)) {
          work_by_call_[trace.calls[*launch].corr].push_back(i);
          body_records_.insert(i);
          continue;
        }
      }
      const auto alias = trace.aliases.find(w.corr);
      work_by_call_[alias == trace.aliases.end() ? w.corr : alias->second].push_back(i);
    }
    if (!trace.graph_nodes.empty()) {
      for (std::size_t i = 0; i < trace.calls.size(); ++i) call_by_corr_.try_emplace(trace.calls[i].corr, i);
    }
    graphs_.emplace(trace, order_, work_by_call_, call_by_corr_);
    out_.start_ns = t0_;
    if (!trace.devices.empty()) {
      out_.device = trace.devices.front().name;
      out_.sms = trace.devices.front().sms;
    }
  }

  // The stream a graph's memory nodes are put on (convert_graph_launch).
  stream_id graph_memory_stream(std::size_t graph) {
    if (const auto it = graph_memory_streams_.find(graph); it != graph_memory_streams_.end())
      return it->second;
    const stream_id s =
        out_.program.add_stream(fmt::format("graph {} memory", graph), stream_kind::non_blocking);
    graph_memory_streams_.emplace(graph, s);
    return s;
  }

  // The graph launch calls of a trace (indices into its calls), by start.
  static std::vector<std::size_t> graph_launch_calls(const RawTrace& trace) {
    std::vector<std::size_t> launches;
    for (std::size_t i = 0; i < trace.calls.size(); ++i) {
      if (detail::is_graph_launch(trace.calls[i]) && trace.calls[i].status == 0) launches.push_back(i);
    }
    std::stable_sort(launches.begin(), launches.end(), [&](std::size_t a, std::size_t b) {
      return trace.calls[a].start < trace.calls[b].start;
    });
    return launches;
  }

  // The latest of `launches` begun by `t` (ns); empty if none.
  static std::optional<std::size_t> launch_before(const RawTrace& trace,
                                                  const std::vector<std::size_t>& launches, std::uint64_t t) {
    const auto it =
        std::upper_bound(launches.begin(), launches.end(), t,
                         [&](std::uint64_t at, std::size_t i) { return at < trace.calls[i].start; });
    if (it == launches.begin()) return std::nullopt;
    return *std::prev(it);
  }

  Capture run() {
    out_.program.name = std::filesystem::path(trace_.exe).filename().string();
    // Most calls become an op, and so does each node of a graph launched
    // (no more than a program may hold: a trace can have more records).
    out_.program.reserve(trace_.streams.size() + 1,
                         std::min<std::size_t>(trace_.calls.size() + trace_.work.size(), limits::max_ops));
    extents_.emplace(trace_, order_);
    for (const std::size_t i : order_) convert(i);
    close_polling();
    finish();
    return std::move(out_);
  }

 private:
  [[nodiscard]] double ms(std::uint64_t ns) const { return static_cast<double>(ns - t0_) * ms_per_ns; }

  /// short_kernel_name, demangled once per kernel: a loop launches the same few thousands of times.
  const std::string& short_name(const std::string& kernel) {
    auto it = short_names_.find(kernel);
    if (it == short_names_.end()) it = short_names_.emplace(kernel, short_kernel_name(kernel)).first;
    return it->second;
  }

  stream_id stream_of(std::optional<std::uint32_t> id) {
    if (!id) return out_.program.legacy_default_stream();
    if (const auto it = streams_.find(*id); it != streams_.end()) return it->second;
    const auto record = stream_kinds_.find(*id);
    // The driver's streams for a graph's branches are ordered by the launch
    // alone (capture_graphs.hpp), not by the legacy default stream.
    const stream_kind kind = record != stream_kinds_.end()   ? parse_stream_kind(record->second.kind)
                             : graphs_->internal_stream(*id) ? stream_kind::non_blocking
                                                             : stream_kind::blocking;
    stream_id s = 0;
    if (kind == stream_kind::legacy_default) {
      s = out_.program.legacy_default_stream();
    } else if (kind == stream_kind::per_thread_default) {
      // One per host thread: the first is "per_thread", as specs name it.
      const bool first = !out_.program.find_stream("per_thread");
      s = out_.program.add_stream(first ? std::string("per_thread") : fmt::format("per_thread {}", *id),
                                  kind);
    } else {
      s = out_.program.add_stream(fmt::format("stream {}", *id), kind,
                                  record == stream_kinds_.end() ? 0 : record->second.priority);
    }
    streams_.emplace(*id, s);
    return s;
  }

  // Sync copies run on a default stream, as cudaMemcpy does.
  stream_id default_stream_of(std::optional<std::uint32_t> id) {
    const stream_id s = stream_of(id);
    const stream_kind kind = out_.program.streams()[s].kind;
    if (kind == stream_kind::legacy_default || kind == stream_kind::per_thread_default) return s;
    return out_.program.legacy_default_stream();
  }

  event_id event_of(std::uint64_t handle) {
    if (const auto it = events_.find(handle); it != events_.end()) return it->second;
    const event_id e = out_.program.add_event(fmt::format("event {}", events_.size() + 1));
    events_.emplace(handle, e);
    return e;
  }

  // Host time between the calls the Program models becomes host work.
  void account_host_time(const Call& c) {
    if (last_end_) carried_ += std::max(0.0, ms(c.start) - *last_end_);
    last_end_ = std::max(last_end_.value_or(0.0), ms(c.end));
  }

  // An asynchronous call's time beyond what the model charges for it.
  void charge_call_excess(const Call& c) {
    carried_ += std::max(0.0, c.duration_ns() * ms_per_ns - options_.modeled_call_cost);
  }

  // The same for a call that issues device work, split where that work
  // started: the part of the call before it is host time before the op, the
  // rest host time after it. A first cudaMemcpyAsync returned 5.5 ms after
  // its copy ran on the H100; charged before the copy, that time would hide
  // outside the device's active window instead of holding back the ops
  // issued after it, as it did. Returns the part after, for after_op().
  [[nodiscard]] double charge_call_excess_around_work(const Call& c) {
    const double excess = std::max(0.0, c.duration_ns() * ms_per_ns - options_.modeled_call_cost);
    const auto extent = work_extent(c);
    if (!extent) {
      carried_ += excess;
      return 0.0;
    }
    const double before = std::clamp(ms(extent->first) - ms(c.start), 0.0, excess);
    carried_ += before;
    return excess - before;
  }

  // Host time a call spent after the op it issued: charged before the next op.
  void after_op(double host_time) { carried_ += host_time; }

  // The trace shows whether an allocation or free synchronized: one that
  // returned while earlier work was still running did not.
  [[nodiscard]] bool returned_with_work_in_flight(const Call& c) const {
    return device_busy_until_ > ms(c.start) && ms(c.end) < device_busy_until_;
  }

  // The call began with work running and returned only after it ended.
  [[nodiscard]] bool waited_for_work(const Call& c) const {
    return device_busy_until_ > ms(c.start) && ms(c.end) >= device_busy_until_;
  }

  void flush_host_work(double at) {
    if (carried_ < options_.min_host_work) return;
    out_.program.host_work(carried_);
    out_.program.last().label = "host work";
    OpOrigin origin;
    origin.api = "host work";
    origin.synthesized = true;
    origin.call_start = at - carried_;
    origin.call_end = at;
    push_origin(std::move(origin));
    carried_ = 0.0;
  }

  // Not-ready polls in a row on one thread are one wait: host time the
  // Program keeps (the simulated host stays as busy as the measured one; a
  // query names no event to wait for), shown as the host blocked, never as
  // issuing. A call of any other kind, or from another thread, ends it.
  void poll(std::size_t index) {
    const Call& c = trace_.calls[index];
    const std::size_t thread = threads_.index(c.tid);
    if (polling_ && polling_->thread == thread && polling_->api == c.api) {
      polling_->end = std::max(polling_->end, ms(c.end));
      ++polling_->count;
    } else {
      close_polling();
      current_thread_ = thread;
      account_host_time(c);
      flush_host_work(ms(c.start));
      carried_ = 0.0;  // what is left is too short to be work; the wait takes its place
      polling_ = Polling{index, thread, c.api, ms(c.start), ms(c.end), 1};
    }
    last_end_ = std::max(last_end_.value_or(0.0), ms(c.end));
  }

  void close_polling() {
    if (!polling_) return;
    const Polling p = *polling_;
    polling_.reset();
    out_.program.host_work(p.end - p.start);
    out_.program.last().label =
        fmt::format("{} polling ({} call{} not ready)", p.api, p.count, p.count == 1 ? "" : "s");
    const std::size_t thread = current_thread_;
    current_thread_ = p.thread;
    from_call(p.first, /*claim_work=*/false);
    current_thread_ = thread;
    out_.origin.back().call_end = p.end;
    out_.origin.back().polling = true;
    // Host time from here to the next call is the thread's own again.
    last_end_ = std::max(last_end_.value_or(0.0), p.end);
  }

  void push_origin(OpOrigin origin) {
    origin.thread = current_thread_;
    out_.origin.push_back(std::move(origin));
    work_.emplace_back();
  }

  // Appends the origin of the op just built from call `index`.
  void from_call(std::size_t index, bool claim_work = true) {
    const Call& c = trace_.calls[index];
    OpOrigin origin;
    origin.call = index;
    origin.api = c.api;
    origin.caller = c.caller;
    origin.call_start = ms(c.start);
    origin.call_end = ms(c.end);
    push_origin(std::move(origin));
    if (!claim_work) return;
    if (const auto it = work_by_call_.find(c.corr); it != work_by_call_.end()) {
      work_.back() = it->second;
      claimed_.insert(c.corr);
      for (const std::size_t w : it->second) {
        device_busy_until_ = std::max(device_busy_until_, ms(trace_.work[w].end));
        if (const auto& stream = out_.program.ops().back().stream)
          stream_busy_until_[*stream] = std::max(stream_busy_until_[*stream], ms(trace_.work[w].end));
      }
    }
  }

  [[nodiscard]] const std::vector<std::size_t>* work_of(const Call& c) const {
    const auto it = work_by_call_.find(c.corr);
    return it == work_by_call_.end() ? nullptr : &it->second;
  }

  // From the start of call `c`'s first device work to the end of its last, in
  // trace nanoseconds; empty without any.
  [[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> work_extent(const Call& c) const {
    const auto* work = work_of(c);
    if (!work || work->empty()) return std::nullopt;
    std::uint64_t start = UINT64_MAX;
    std::uint64_t end = 0;
    for (const std::size_t w : *work) {
      start = std::min(start, trace_.work[w].start);
      end = std::max(end, trace_.work[w].end);
    }
    return std::pair{start, end};
  }

  // When the last device work of call `c` ended (ms), or 0 without any.
  [[nodiscard]] double work_end(const Call& c) const {
    const auto extent = work_extent(c);
    return extent ? ms(extent->second) : 0.0;
  }

  // A blocking call that waited for work ending at `awaited` returned this
  // long after it: the host's wake-up latency.
  void note_wakeup(const Call& c, double awaited) {
    if (awaited > ms(c.start) && ms(c.end) >= awaited) wakeups_.push_back(ms(c.end) - awaited);
  }

  [[nodiscard]] double measured_duration(const Call& c) const {
    const auto extent = work_extent(c);
    return extent ? static_cast<double>(extent->second - extent->first) * ms_per_ns : 0.0;
  }

  // Pageable when CUPTI says the host side was; otherwise what we know of the pointer.
  [[nodiscard]] host_memory host_side(const Call& c, copy_direction direction) const {
    if (const auto* work = work_of(c); work && !work->empty()) {
      const DeviceWork& w = trace_.work[work->front()];
      const std::string& kind = direction == copy_direction::h2d ? w.src_kind : w.dst_kind;
      if (is_host_memory_kind(kind)) return kind == "pageable" ? host_memory::pageable : host_memory::pinned;
    }
    const std::uint64_t host = direction == copy_direction::h2d ? c.src : c.dst;
    const auto region = allocations_.find(host);
    return region && region->pinned ? host_memory::pinned : host_memory::pageable;
  }

  // A query that answered "ready" for an event recorded earlier (traces
  // before version 2's event queries name no event: never).
  [[nodiscard]] bool ready_event_query(const Call& c) const {
    return (c.api == "cudaEventQuery" || c.api == "cuEventQuery") && c.status == 0 && c.event != 0 &&
           record_stream_.contains(c.event);
  }

  // A stream query that answered "ready" (traces before version 2's stream
  // queries name no stream: never).
  [[nodiscard]] static bool ready_stream_query(const Call& c) {
    return (c.api == "cudaStreamQuery" || c.api == "cuStreamQuery") && c.status == 0 && c.stream.has_value();
  }

  void convert(std::size_t index) {
    const Call& c = trace_.calls[index];
    if (detail::is_not_ready_poll(c)) {
      poll(index);
      return;
    }
    close_polling();
    current_thread_ = threads_.index(c.tid);
    account_host_time(c);
    // Captured into a graph: it ran nothing, so it is host time only.
    if (graphs_->captured(index)) {
      convert_other(index);
      return;
    }
    if (graphs_->launch(index)) {
      convert_graph_launch(index);
      return;
    }
    if (ready_event_query(c)) {
      // The event's work was done when the call returned: what the host does
      // next comes after it, as after cudaEventSynchronize (PyTorch's caching
      // allocator reuses a block once a query of its stream's event says so).
      flush_host_work(ms(c.start));
      out_.program.synchronize_event(event_of(c.event));
      from_call(index);
      return;
    }
    if (ready_stream_query(c)) {  // likewise for all the stream's work
      flush_host_work(ms(c.start));
      out_.program.synchronize(stream_of(c.stream));
      from_call(index);
      return;
    }
    switch (c.cls) {
      case call_class::copy: convert_copy(index); break;
      case call_class::memset: convert_memset(index); break;
      case call_class::launch: convert_launch(index); break;
      case call_class::record:
        charge_call_excess(c);
        flush_host_work(ms(c.start));
        out_.program.record(event_of(c.event), stream_of(c.stream));
        record_stream_[c.event] = stream_of(c.stream);
        from_call(index);
        break;
      case call_class::wait:
        charge_call_excess(c);
        flush_host_work(ms(c.start));
        if (trace_.gaps.event_records && !record_stream_.contains(c.event)) {
          convert_unlinked_wait(index);
          break;
        }
        out_.program.wait(stream_of(c.stream), event_of(c.event));
        from_call(index);
        break;
      case call_class::stream_sync: {
        flush_host_work(ms(c.start));
        const stream_id s = stream_of(c.stream);
        out_.program.synchronize(s);
        from_call(index);
        note_wakeup(c, stream_busy_until_[s]);
        host_reads_results({s});
        break;
      }
      case call_class::event_sync: {
        // Waiting for a record the trace does not show: host time, as measured.
        if (trace_.gaps.event_records && !record_stream_.contains(c.event)) {
          convert_other(index);
          break;
        }
        flush_host_work(ms(c.start));
        out_.program.synchronize_event(event_of(c.event));
        from_call(index);
        if (const auto it = record_stream_.find(c.event); it != record_stream_.end())
          host_reads_results({it->second});
        break;
      }
      case call_class::device_sync:
        flush_host_work(ms(c.start));
        out_.program.synchronize_device();
        from_call(index);
        note_wakeup(c, device_busy_until_);
        host_reads_results({});
        break;
      case call_class::alloc: convert_alloc(index); break;
      case call_class::free: convert_free(index); break;
      case call_class::prefetch: convert_prefetch(index); break;
      case call_class::attach: convert_managed_marker(index); break;
      case call_class::host_register:
        allocations_.add(c.ptr, c.bytes, "registered");
        convert_other(index);
        break;
      case call_class::host_unregister:
        allocations_.remove(c.ptr);
        convert_other(index);
        break;
      default: convert_other(index); break;
    }
  }

  void convert_copy(std::size_t index) {
    const Call& c = trace_.calls[index];
    const auto direction = detail::parse_direction(c.copy_kind);
    if (!direction) {  // a host-to-host copy is host work
      convert_other(index);
      return;
    }
    const host_memory memory =
        *direction == copy_direction::d2d ? host_memory::pinned : host_side(c, *direction);
    // Other copies block: the model times them.
    const double after = c.async && memory == host_memory::pinned ? charge_call_excess_around_work(c) : 0.0;
    flush_host_work(ms(c.start));
    Op op;
    op.kind = op_kind::copy;
    op.direction = *direction;
    op.bytes = c.bytes;
    op.mode = c.async ? call_mode::asynchronous : call_mode::synchronous;
    op.stream = c.async ? stream_of(c.stream) : default_stream_of(c.stream);
    op.memory = memory;
    const double measured = measured_duration(c);
    if (!options_.copies_from_model && memory == host_memory::pinned && measured > 0.0)
      op.duration = measured;
    if (memory == host_memory::pageable && measured > 0.0 && c.bytes >= std::uint64_t{64} * 1024) {
      // What a pageable copy costs is the host's time in it, from when the
      // copy could begin: the driver stages through a pinned buffer before
      // the DMA (H2D) or after it (D2H). On the H100 that was 30% longer than
      // the DMA itself (552 us against 423 for 1 MiB H2D), so a rate read
      // off the device's span underprices the copy and what pinning saves.
      const double could_begin = c.async ? stream_busy_until_[*op.stream] : device_busy_until_;
      const double held = ms(c.end) - std::max(ms(c.start), could_begin);
      if (held > 0.0) {
        (*direction == copy_direction::h2d ? h2d_pageable_rates_ : d2h_pageable_rates_)
            .push_back(static_cast<double>(c.bytes) / (held * 1e6));
      }
    }
    if (!c.async) note_wakeup(c, work_end(c));
    // A trace without pointers (RawTrace::gaps) gives the copy no accesses:
    // what it touches is unknown, not "address 0".
    const bool addressed = !trace_.gaps.pointers;
    if (addressed) {
      op.accesses.push_back(allocations_.access(c.src, c.bytes, access_mode::read));
      op.accesses.push_back(allocations_.access(c.dst, c.bytes, access_mode::write));
    }
    const bool to_host = *direction == copy_direction::d2h;
    const std::optional<Access> written = addressed ? std::optional(op.accesses.back()) : std::nullopt;
    const stream_id stream = *op.stream;
    out_.program.append(std::move(op));
    from_call(index);
    after_op(after);
    if (to_host && c.async && written)
      pending_results_[stream].push_back(
          Access{written->buffer, written->offset, written->size, access_mode::read});
  }

  void convert_memset(std::size_t index) {
    const Call& c = trace_.calls[index];
    if (c.async) charge_call_excess(c);
    flush_host_work(ms(c.start));
    Op op;
    op.kind = op_kind::memset;
    op.bytes = c.bytes;
    op.stream = c.async ? stream_of(c.stream) : default_stream_of(c.stream);
    if (!trace_.gaps.pointers) op.accesses.push_back(allocations_.access(c.dst, c.bytes, access_mode::write));
    out_.program.append(std::move(op));
    from_call(index);
  }

  void convert_launch(std::size_t index) {
    const Call& c = trace_.calls[index];
    const double after = charge_call_excess_around_work(c);
    flush_host_work(ms(c.start));
    Op op;
    op.kind = op_kind::kernel;
    op.stream = stream_of(c.stream);
    op.duration = measured_duration(c);
    if (out_.sms > 0 && c.blocks > 0)
      op.gpu_share = std::min(1.0, static_cast<double>(c.blocks) / static_cast<double>(out_.sms));
    std::string name = c.kernel;
    if (const auto* work = work_of(c); work && !work->empty() && !trace_.work[work->front()].name.empty())
      name = trace_.work[work->front()].name;
    op.label = name.empty() ? "kernel" : short_name(name);
    op.prints = trace_.printing_kernels.contains(name);
    // What it touches: measured, where the run was (measured_run.hpp), else
    // inferred from its pointers (capture_accesses.hpp).
    op.accesses = extents_->kernel_accesses(c.ptrs, c.struct_ptrs, allocations_);
    if (const auto m = trace_.measured.find(c.corr); m != trace_.measured.end())
      op.accesses = detail::with_measured_accesses(m->second, std::move(op.accesses), allocations_);
    const bool from_pointers = !op.accesses.empty();
    count_mapped(op.accesses);
    note_host_readable_writes(*op.stream, op.accesses);
    out_.program.append(std::move(op));
    from_call(index);
    out_.origin.back().accesses_from_pointers = from_pointers;
    after_op(after);
  }

  // A kernel's accesses to pinned host memory cross the link: the device
  // reads and writes it in place (zero-copy).
  void count_mapped(const std::vector<Access>& accesses) {
    MappedAccessTraffic& mapped = out_.link.mapped;
    bool any = false;
    bool inferred = false;
    for (const Access& a : accesses) {
      const auto size = allocations_.host_buffer_size(a.buffer);
      if (!size) continue;
      const std::uint64_t bytes = a.size.value_or(*size > a.offset ? *size - a.offset : 0);
      (a.mode == access_mode::read ? mapped.read_bytes : mapped.written_bytes) += bytes;
      any = true;
      inferred = inferred || a.source == access_source::inferred;
    }
    if (!any) return;
    ++mapped.launches;
    if (inferred) ++mapped.inferred;
  }

  // What a kernel writes to managed or host memory the host can read in
  // place once it synchronizes, with no copy the trace would show: such a
  // sync is needed, as one before reading a download is.
  void note_host_readable_writes(stream_id stream, const std::vector<Access>& accesses) {
    for (const Access& a : accesses) {
      if (a.mode == access_mode::write && detail::Allocations::host_readable(a.buffer))
        pending_results_[stream].push_back(Access{a.buffer, a.offset, a.size, access_mode::read, a.source});
    }
  }

  // cudaMemPrefetchAsync: a copy on its stream, timed by the migrations it
  // made (capture_memory.hpp); the model has no rate for migrations, so it
  // keeps its measured time. Where it moved nothing (the bytes were there
  // already, or the trace has no migration records) it still orders its
  // stream: a marker, as an attach is.
  void convert_prefetch(std::size_t index) {
    const Call& c = trace_.calls[index];
    const auto* work = work_of(c);
    const auto direction =
        work && !work->empty() ? detail::parse_direction(trace_.work[work->front()].copy_kind) : std::nullopt;
    if (!direction || *direction == copy_direction::d2d) {
      convert_managed_marker(index);
      return;
    }
    const double after = charge_call_excess_around_work(c);
    flush_host_work(ms(c.start));
    Op op;
    op.kind = op_kind::copy;
    op.direction = *direction;
    op.stream = stream_of(c.stream);
    op.memory = host_memory::pinned;  // the host does not take part
    op.mode = call_mode::asynchronous;
    for (const std::size_t w : *work) op.bytes += trace_.work[w].bytes;
    op.duration = measured_duration(c);
    op.label = "prefetch";
    out_.program.append(std::move(op));
    from_call(index);
    after_op(after);
  }

  // A managed-memory call in stream order that moves nothing the trace
  // shows (cudaStreamAttachMemAsync, a prefetch of resident bytes): a
  // marker on its stream, named after the call. It touches no bytes: a
  // migration keeps what memory holds.
  void convert_managed_marker(std::size_t index) {
    const Call& c = trace_.calls[index];
    if (!c.stream) {
      convert_other(index);
      return;
    }
    charge_call_excess(c);
    flush_host_work(ms(c.start));
    const stream_id s = stream_of(c.stream);
    out_.program.record(added_event(fmt::format("managed memory on {}", out_.program.streams()[s].name)), s);
    out_.program.last().label = c.api;
    from_call(index, /*claim_work=*/false);
  }

  // A graph launch: each device record of it an op on the stream it ran on,
  // between a fork from the launch stream and a join back into it, so the
  // graph runs after the launch stream's earlier work and before its later
  // work, as CUDA orders it (capture_graphs.hpp).
  void convert_graph_launch(std::size_t index) {
    const Call& c = trace_.calls[index];
    const detail::GraphLaunch& g = *graphs_->launch(index);
    // A memcpy node on pageable memory makes the launch hold the host until
    // the driver has staged that copy, as a pageable cudaMemcpyAsync does.
    const bool pageable = std::any_of(g.work.begin(), g.work.end(), [&](std::size_t w) {
      return detail::touches_pageable(trace_.work[w]);
    });
    // The launch's time before its work began is host time (uploading the
    // graph), as measured. The time after is too, except with a pageable
    // node: there the model's blocking at that copy (detail::graph_work_op) is the wait,
    // and keeping the measured wait as host work as well would count it
    // twice and leave it in place when a repair pins the copy.
    const double after = charge_call_excess_around_work(c);
    flush_host_work(ms(c.start));
    const stream_id launch = stream_of(g.stream);
    std::vector<stream_id> branches;
    for (const std::size_t w : g.work) {
      const stream_id s = stream_of(trace_.work[w].stream);
      if (s != launch && std::find(branches.begin(), branches.end(), s) == branches.end())
        branches.push_back(s);
    }
    // Memory nodes run on no stream of their own: they get one per graph,
    // ordered only by the graph's edges, so that no stream order the graph
    // does not have hides a race with a free.
    const std::optional<stream_id> memory =
        g.memory.empty() ? std::nullopt : std::optional(graph_memory_stream(g.graph));
    if (memory) branches.push_back(*memory);
    const auto synthesized = [&](op_id) {
      from_call(index, /*claim_work=*/false);
      out_.origin.back().synthesized = true;
    };
    if (!branches.empty()) {
      const event_id fork = added_event(fmt::format("graph {} launch", g.graph));
      synthesized(out_.program.record(fork, launch));
      for (const stream_id s : branches) synthesized(out_.program.wait(s, fork));
    }
    // With the graph's structure known, a record waits for the records its
    // edges lead back to on other streams, through an event each of those
    // records after itself (same-stream order holds anyway).
    const auto stream_at = [&](std::size_t k) { return stream_of(trace_.work[g.work[k]].stream); };
    std::vector<bool> signals = detail::signalling_records(g, stream_at);
    std::vector<op_id> op_of_record(g.work.size());
    const auto node_done = [&](std::size_t k) {
      return added_event(fmt::format("graph {} node {} done", g.graph, k));
    };
    // Memory nodes have no record: each is a marker on the graph's memory
    // stream, placed before the first record that runs after it, waiting
    // for the records it runs after and waited for by those after it.
    std::vector<std::vector<std::size_t>> memory_at(g.work.size() + 1);  // by the position it precedes
    std::vector<std::vector<std::size_t>> waits_for_memory(g.work.size());
    for (std::size_t i = 0; i < g.memory.size(); ++i) {
      const detail::GraphMemoryNode& m = g.memory[i];
      memory_at[m.before.empty() ? g.work.size() : m.before.front()].push_back(i);
      for (const std::size_t p : m.after) signals[p] = true;
      for (const std::size_t q : m.before) waits_for_memory[q].push_back(i);
    }
    const auto memory_done = [&](std::size_t i) {
      return added_event(fmt::format("graph {} memory node {} done", g.graph, i));
    };
    const auto memory_node = [&](std::size_t i) {
      const detail::GraphMemoryNode& m = g.memory[i];
      const stream_id s = *memory;
      for (const std::size_t p : m.after) synthesized(out_.program.wait(s, node_done(p)));
      out_.program.record(memory_done(i), s);
      Op& op = out_.program.last();
      op.label = fmt::format("graph {}: {}", g.graph, m.free ? "free" : "alloc");
      op.graph_node = true;
      // As a stream-ordered free, a free node writes the whole allocation.
      // Its address stays the graph's (reserved while the graph lives), so
      // a later use of it names the buffer freed, racing with the free
      // unless ordered after it; the next launch's allocation node makes it
      // a buffer of its own again.
      if (m.free) {
        if (const auto region = allocations_.find(m.ptr); region && region->offset == 0)
          op.accesses.push_back(Access{region->buffer, 0, region->size, access_mode::write});
      } else {
        allocations_.add(m.ptr, m.bytes, "graph");
      }
      from_call(index, /*claim_work=*/false);
    };
    for (std::size_t k = 0; k < g.work.size(); ++k) {
      const std::size_t w = g.work[k];
      for (const std::size_t i : memory_at[k]) memory_node(i);
      if (g.after) {
        for (const std::size_t p : (*g.after)[k]) {
          if (stream_at(p) != stream_at(k)) synthesized(out_.program.wait(stream_at(k), node_done(p)));
        }
      }
      for (const std::size_t i : waits_for_memory[k])
        synthesized(out_.program.wait(stream_at(k), memory_done(i)));
      const DeviceWork& record = trace_.work[w];
      Op op = detail::graph_work_op(g.graph, record, stream_of(record.stream),
                                    record.name.empty() ? std::string("kernel") : short_name(record.name),
                                    {out_.sms, options_.copies_from_model});
      if (body_records_.contains(w))
        op.label.replace(0, op.label.find(':'), fmt::format("graph {} (conditional body)", g.graph));
      op.accesses =
          detail::graph_node_accesses(g.nodes[k], record, trace_, call_by_corr_, *extents_, allocations_);
      // Measured, where the node's order and parameters are known (measured_run.hpp).
      if (const auto m = trace_.measured_nodes.find({c.corr, record.node});
          m != trace_.measured_nodes.end() && g.nodes[k] != nullptr && op.kind == op_kind::kernel)
        op.accesses = detail::with_measured_accesses(m->second, std::move(op.accesses), allocations_);
      const bool from_pointers = op.kind == op_kind::kernel && !op.accesses.empty();
      if (op.kind == op_kind::kernel) {
        op.prints = trace_.printing_kernels.contains(record.name);
        count_mapped(op.accesses);
        note_host_readable_writes(*op.stream, op.accesses);
      }
      op_of_record[k] = out_.program.append(std::move(op));
      from_call(index, /*claim_work=*/false);
      out_.origin.back().accesses_from_pointers = from_pointers;
      work_.back() = {w};
      const double end = ms(trace_.work[w].end);
      device_busy_until_ = std::max(device_busy_until_, end);
      const stream_id s = *out_.program.ops().back().stream;
      stream_busy_until_[s] = std::max(stream_busy_until_[s], end);
      if (signals[k]) synthesized(out_.program.record(node_done(k), s));
      if (g.after) {
        for (const std::size_t p : (*g.after)[k]) {
          out_.graph_edges.emplace_back(op_of_record[p], op_of_record[k]);
        }
      }
    }
    for (const std::size_t i : memory_at.back()) memory_node(i);
    for (const stream_id s : branches) {
      const event_id join =
          added_event(fmt::format("graph {} {} done", g.graph, out_.program.streams()[s].name));
      synthesized(out_.program.record(join, s));
      synthesized(out_.program.wait(launch, join));
    }
    claimed_.insert(c.corr);
    after_op(pageable ? 0.0 : after);
    // Drawn, the launch's time is the host blocked, not issuing.
    if (pageable) {
      for (auto o = out_.origin.rbegin(); o != out_.origin.rend() && o->call == index; ++o)
        o->holds_host = true;
    }
  }

  // A stream's wait on an event whose record the trace does not show (a
  // PyTorch profiler trace: RawTrace::gaps): taken as waiting for all the
  // work other streams had run or been given so far, through an event the
  // capture records on each. It may order more than the app did, never
  // less, so nothing is reported as overlapping that could not.
  void convert_unlinked_wait(std::size_t index) {
    const Call& c = trace_.calls[index];
    const stream_id waiting = stream_of(c.stream);
    bool first = true;
    for (const auto& [s, busy_until] : stream_busy_until_) {
      if (s == waiting) continue;
      const event_id e = added_event(fmt::format("work of {} before a wait", out_.program.streams()[s].name));
      out_.program.record(e, s);
      from_call(index, /*claim_work=*/false);
      out_.origin.back().synthesized = true;
      out_.program.wait(waiting, e);
      from_call(index, /*claim_work=*/false);
      out_.origin.back().synthesized = !first;
      first = false;
    }
    if (first) convert_other(index);  // no other stream has work: nothing to wait for
  }

  // An event the capture adds to order streams the trace shows no event
  // for (a graph's branches, a wait whose record is unknown, stream-ordered
  // memory); one per name, recorded again at each use.
  event_id added_event(const std::string& name) {
    if (const auto it = added_events_.find(name); it != added_events_.end()) return it->second;
    const event_id e = out_.program.add_event(name);
    added_events_.emplace(name, e);
    return e;
  }

  // Allocation and free drain the device; what the call costs beyond the
  // drain is its host cost (the simulator drains first, then charges it).
  [[nodiscard]] double host_cost_after_drain(const Call& c) const {
    const double start = ms(c.start);
    const double end = ms(c.end);
    return std::max(0.0, end - std::clamp(device_busy_until_, start, end));
  }

  // An allocation counts as synchronizing only when the trace shows it
  // waiting for running work: CUDA documents that it may, but cudaMalloc and
  // cudaMallocHost return at once in practice (seen on the H100). A free
  // synchronizes unless it returned with work still running. Stream-ordered
  // ones never wait.
  void convert_alloc(std::size_t index) {
    const Call& c = trace_.calls[index];
    allocations_.add(c.ptr, c.bytes, c.memory);
    if (c.memory == "async" && c.stream) {
      convert_stream_ordered(index, /*free=*/false);
      return;
    }
    const bool pinned = c.memory == "pinned";
    convert_implicit_sync(index, waited_for_work(c),
                          pinned ? op_kind::host_allocate : op_kind::device_allocate);
  }

  void convert_free(std::size_t index) {
    const Call& c = trace_.calls[index];
    if (c.memory == "async" && c.stream) {
      convert_stream_ordered(index, /*free=*/true);
      allocations_.remove(c.ptr);
      return;
    }
    allocations_.remove(c.ptr);
    const bool pinned = c.memory == "pinned";
    convert_implicit_sync(index, !returned_with_work_in_flight(c),
                          pinned ? op_kind::host_free : op_kind::device_free);
  }

  // cudaMallocAsync / cudaFreeAsync (and their pool and driver forms): an op
  // in its stream's order, as CUDA runs them, marking where the memory comes
  // into use or goes back to the pool. A free writes the whole allocation:
  // a use of it on another stream that nothing orders with the free races
  // with it (the pool may hand the bytes to another allocation). A later
  // allocation at the same address is another buffer (Allocations), so
  // reuse is no race. Host time beyond the modelled call cost stays host
  // work, as for other asynchronous calls. A call whose stream the trace
  // does not name (a PyTorch profile) stays host work.
  void convert_stream_ordered(std::size_t index, bool free) {
    const Call& c = trace_.calls[index];
    charge_call_excess(c);
    flush_host_work(ms(c.start));
    const stream_id s = stream_of(c.stream);
    const std::optional<detail::Region> region =
        trace_.gaps.pointers ? std::nullopt : allocations_.find(c.ptr);
    const event_id marker =
        added_event(fmt::format("stream-ordered memory on {}", out_.program.streams()[s].name));
    out_.program.record(marker, s);
    Op& op = out_.program.last();
    // The api alone, so that frees of different buffers group as one
    // pattern; the access names the buffer.
    op.label = c.api;
    if (free && region && region->offset == 0)
      op.accesses.push_back(Access{region->buffer, 0, region->size, access_mode::write});
    from_call(index, /*claim_work=*/false);
  }

  // An allocation or free: a drain (then its host cost) when it synchronized,
  // else host work of its own, however short, so that a repair that moves
  // the allocations out of a loop can take every one of them away.
  void convert_implicit_sync(std::size_t index, bool synchronized, op_kind kind) {
    const Call& c = trace_.calls[index];
    flush_host_work(ms(c.start));
    if (c.memory == "async" || !synchronized) {
      out_.program.host_work(c.duration_ns() * ms_per_ns);
      out_.program.last().label = c.api;
      from_call(index, /*claim_work=*/false);
    } else {
      out_.program.implicit_sync(kind, host_cost_after_drain(c));
      out_.program.last().label = c.api;
      from_call(index);
    }
    out_.origin.back().allocation = c.memory != "async";  // stream-ordered ones belong in loops
  }

  // Calls the Program does not model: a long one becomes host work of its
  // own (named after the call), a short one joins the host time around it.
  void convert_other(std::size_t index) {
    const Call& c = trace_.calls[index];
    const double duration = c.duration_ns() * ms_per_ns;
    if (duration < options_.min_call_op) {
      carried_ += duration;
      return;
    }
    flush_host_work(ms(c.start));
    out_.program.host_work(duration);
    out_.program.last().label = c.api;
    from_call(index, /*claim_work=*/false);
  }

  // The host reads what the copies to host memory it waited for wrote.
  void host_reads_results(const std::vector<stream_id>& streams) {
    std::vector<Access> reads;
    for (auto& [stream, pending] : pending_results_) {
      if (!streams.empty() && std::find(streams.begin(), streams.end(), stream) == streams.end()) continue;
      reads.insert(reads.end(), pending.begin(), pending.end());
      pending.clear();
    }
    if (reads.empty()) return;
    out_.program.host_work(0.0);
    out_.program.last().label = "host reads results";
    out_.program.last().accesses = std::move(reads);
    OpOrigin origin;
    origin.api = "host reads results";
    origin.synthesized = true;
    origin.call_start = origin.call_end = last_end_.value_or(0.0);
    push_origin(std::move(origin));
  }

  void finish() {
    out_.calls = trace_.calls.size();
    out_.failed_calls = detail::failed_calls(trace_);
    if (!order_.empty()) out_.first_call_end = ms(trace_.calls[order_.front()].end);
    out_.profiled = detail::profiler_ranges(trace_, order_, t0_);
    for (const auto& [corr, work] : work_by_call_) {
      if (!claimed_.contains(corr)) out_.unmatched_work += work.size();
    }
    // A range opened before the first CUDA call (torch.profiler's first step
    // often is) starts, for this run, at the trace's start.
    for (const Range& r : trace_.ranges)
      out_.ranges.push_back({r.name, ms(std::max(r.start, t0_)), ms(std::max(r.end, t0_))});
    out_.complete = trace_.complete;
    out_.end_reason = trace_.end_reason;
    out_.dropped = trace_.dropped;
    out_.calibration = calibration();
    out_.timeline = detail::measured_timeline(out_.program, trace_, work_, out_.origin, t0_);
    out_.timeline.device = out_.device;
    out_.timeline.host_threads = threads_.names();
    detail::measure_start_latencies(out_.timeline, out_.origin, out_.calibration);
    add_notes();
  }

  [[nodiscard]] Calibration calibration() const {
    Calibration c;
    c.wakeup_samples = wakeups_.size();
    c.host_wakeup_latency = detail::median(wakeups_);
    c.h2d_pageable_gbps = detail::median(h2d_pageable_rates_);
    c.d2h_pageable_gbps = detail::median(d2h_pageable_rates_);
    return c;
  }

  void add_notes() {
    if (!trace_.complete)
      out_.notes.emplace_back(
          "the trace has no footer: the process ended before the tracer could finish "
          "(killed, or crashed); what was recorded up to then is shown");
    if (trace_.dropped > 0)
      out_.notes.push_back(fmt::format("{} records were dropped by CUPTI", trace_.dropped));
    if (out_.failed_calls > 0)
      out_.notes.push_back(
          fmt::format("{} API calls returned an error and are not in the program", out_.failed_calls));
    if (out_.unmatched_work > 0)
      out_.notes.push_back(fmt::format("{} device activities matched no traced call", out_.unmatched_work));
    for (const std::string& e : trace_.errors) out_.notes.push_back("tracer: " + e);
    add_gap_notes();
  }

  // What a trace of another tool's format cannot show (RawTrace::gaps), so
  // that no reader takes an unchecked rule for a clean one.
  void add_gap_notes() {
    const TraceGaps& g = trace_.gaps;
    const std::string what = trace_.format == "pytorch-profiler" ? "a PyTorch profiler trace" : "this trace";
    if (g.pointers)
      out_.notes.push_back(fmt::format(
          "{} records no pointer arguments: races and what the host reads after a sync are not checked "
          "(run the app under 'overlap audit -- python3 ...' for them)",
          what));
    if (g.event_records)
      out_.notes.push_back(fmt::format(
          "{} does not say which record an event wait waited for (cudaEventRecord names no event or "
          "stream in it): each stream wait is taken as waiting for all earlier work of the other streams, "
          "and event records are host time",
          what));
    if (g.stream_kinds)
      out_.notes.push_back(fmt::format(
          "{} does not record stream kinds: every stream is taken as an ordinary one, so the legacy default "
          "stream's barrier is neither modelled nor reported",
          what));
    if (g.call_status)
      out_.notes.push_back(
          fmt::format("{} records no return codes: not-ready queries count as calls, not as waits", what));
  }

  /// Not-ready polls in a row, becoming one op.
  struct Polling {
    std::size_t first = 0;   // index of the first poll in trace.calls
    std::size_t thread = 0;  // its host thread
    std::string api;
    double start = 0.0;
    double end = 0.0;
    std::size_t count = 0;
  };

  const RawTrace& trace_;
  const CaptureOptions& options_;
  std::uint64_t t0_;
  std::vector<std::size_t> order_;  // calls in host order
  detail::HostThreads threads_;
  std::size_t current_thread_ = 0;  // host thread of the call being converted
  std::optional<Polling> polling_;
  Capture out_;
  std::map<std::uint32_t, StreamRecord> stream_kinds_;
  std::map<std::uint32_t, stream_id> streams_;
  std::unordered_map<std::string, std::string> short_names_;  // kernel -> short_kernel_name
  std::map<std::uint64_t, event_id> events_;
  std::map<std::uint64_t, stream_id> record_stream_;
  std::map<std::uint64_t, std::vector<std::size_t>> work_by_call_;
  std::unordered_map<std::uint64_t, std::size_t>
      call_by_corr_;  // calls that made graph nodes are looked up by it
  std::set<std::uint64_t> claimed_;
  std::set<std::size_t> body_records_;  // records of conditional bodies (indices into trace.work)
  std::map<std::size_t, stream_id> graph_memory_streams_;  // by graph number
  std::optional<detail::KernelExtents> extents_;           // built in run(), from the whole trace
  std::optional<detail::GraphLaunches> graphs_;            // built in the constructor, from work_by_call_
  std::map<std::string, event_id> added_events_;           // the events added_event() added, by name
  std::map<stream_id, std::vector<Access>> pending_results_;
  detail::Allocations allocations_;
  std::vector<std::vector<std::size_t>> work_;  // per op: its device work records
  std::map<stream_id, double> stream_busy_until_;
  std::vector<double> wakeups_;
  std::vector<double> h2d_pageable_rates_;
  std::vector<double> d2h_pageable_rates_;
  std::optional<double> last_end_;
  double carried_ = 0.0;
  double device_busy_until_ = 0.0;
};

}  // namespace

DeviceModel calibrate(DeviceModel model, const Capture& run, std::vector<std::string>* applied) {
  const Calibration& c = run.calibration;
  const auto say = [applied](std::string text) {
    if (applied) applied->push_back(std::move(text));
  };
  if (c.host_wakeup_latency && c.wakeup_samples >= 3) {
    model.host_wakeup_latency = *c.host_wakeup_latency;
    say(fmt::format("blocking calls returned {:.1f} us after the work they waited for (median of {})",
                    *c.host_wakeup_latency * 1000.0, c.wakeup_samples));
  }
  if (c.start_samples >= 10) {
    if (c.kernel_start_latency) model.kernel_launch_latency = *c.kernel_start_latency;
    if (c.copy_start_latency) model.copy_start_latency = *c.copy_start_latency;
    say(fmt::format("work started {:.1f} us (kernels) and {:.1f} us (copies) after it could (median of {})",
                    c.kernel_start_latency.value_or(0.0) * 1000.0,
                    c.copy_start_latency.value_or(0.0) * 1000.0, c.start_samples));
  }
  if (c.h2d_pageable_gbps) {
    model.h2d_pageable = BandwidthCurve{{{1, *c.h2d_pageable_gbps}}};
    say(fmt::format("pageable host-to-device copies held the host at {:.1f} GB/s", *c.h2d_pageable_gbps));
  }
  if (c.d2h_pageable_gbps) {
    model.d2h_pageable = BandwidthCurve{{{1, *c.d2h_pageable_gbps}}};
    say(fmt::format("pageable device-to-host copies held the host at {:.1f} GB/s", *c.d2h_pageable_gbps));
  }
  return model;
}

std::string short_kernel_name(const std::string& name) {
  std::string text = name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  if (status == 0 && demangled) text = demangled.get();
  // Cut the parameter list, then a return type before the name (templates).
  // "(anonymous namespace)" is part of a name, and so are a lambda's
  // parameters ("{lambda(float)#1}"), as in PyTorch's kernels.
  static constexpr std::string_view anonymous = "(anonymous namespace)";
  int depth = 0;
  std::size_t cut = text.size();
  std::size_t name_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (std::string_view(text).substr(i).starts_with(anonymous)) {
      i += anonymous.size() - 1;
      continue;
    }
    const char ch = text[i];
    if (ch == '<' || ch == '{') ++depth;
    if (ch == '>' || ch == '}') --depth;
    if (depth == 0 && ch == '(') {
      cut = i;
      break;
    }
    if (depth == 0 && ch == ' ') name_start = i + 1;
  }
  return text.substr(name_start, cut - name_start);
}

Capture capture(const RawTrace& trace, const CaptureOptions& options) {
  if (trace.calls.empty() && trace.work.empty())
    throw invalid_input("no CUDA activity: the traced process made no CUDA call that reached the tracer");
  // Prefetches' migrations become their calls' work (capture_memory.hpp).
  const auto by = detail::prefetch_of_migrations(trace);
  const std::optional<RawTrace> with_prefetches = detail::with_prefetch_work(trace, by);
  Capture run = Converter(with_prefetches ? *with_prefetches : trace, options).run();
  detail::count_link_moves(trace, by, run.link);
  run.env = trace.env;
  run.format = trace.format;
  run.stream_activity = stream_activity(trace);
  return run;
}

}  // namespace overlap::trace
