// overlap::trace trace files: what the injection library recorded, as values.
//
// libovl_inject.so (tools/inject) writes a JSON Lines file per traced
// process (docs/trace-format.md); read_trace parses one back into a RawTrace:
// the host's API calls with their arguments and host times, the device work
// CUPTI measured, the streams, NVTX ranges, the environment that shaped the
// run (version 2) and whether the file is complete. Nothing here needs CUDA,
// so recorded files are test fixtures.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "overlap/core/device_model.hpp"

namespace overlap::trace {

/// Trace format versions this reader reads: 1 (no `env` record) and 2.
inline constexpr int oldest_trace_version = 1;
inline constexpr int newest_trace_version = 2;  ///< what libovl_inject writes

/// The family of an API call, which says which fields it carries.
enum class call_class : std::uint8_t {
  copy,
  memset,
  launch,
  record,
  wait,
  stream_sync,
  event_sync,
  device_sync,
  alloc,
  free,
  host_register,
  host_unregister,
  stream_create,
  stream_destroy,
  event_create,
  prefetch,  ///< cudaMemPrefetchAsync and its forms: managed memory moved in stream order
  attach,    ///< cudaStreamAttachMemAsync: managed memory's visibility set in stream order
  other,
};

/// One runtime (or app-made driver) API call, at its exit. Times are CUPTI
/// nanoseconds; unused fields stay at their defaults.
struct Call {
  std::uint64_t corr = 0;              ///< CUPTI correlation id; device work names its call by it
  std::string api;                     ///< "cudaMemcpyAsync", "cuLaunchKernel"
  bool driver = false;                 ///< a driver call (cu*) the app made itself; false: a runtime call
  std::uint64_t tid = 0;               ///< OS id of the calling thread
  std::uint64_t start = 0;             ///< when the call was entered, ns
  std::uint64_t end = 0;               ///< when it returned, ns
  int status = 0;                      ///< the call's return code; 0 = success
  std::string caller;                  ///< first frame outside CUDA, may be empty
  call_class cls = call_class::other;  ///< its family; `other` too for a family this reader does not know

  std::optional<std::uint32_t> stream;  ///< CUPTI stream id
  std::uint64_t dst = 0;                ///< copies, memsets
  std::uint64_t src = 0;                ///< copies
  std::uint64_t bytes = 0;              ///< copies, memsets, allocations, registrations
  std::string copy_kind;                ///< "h2d", "d2h", "d2d", "h2h", "default"
  bool async = false;                   ///< copies, memsets
  std::string kernel;                   ///< launches: the (possibly mangled) name
  std::uint64_t blocks = 0;             ///< launches: grid x*y*z
  std::vector<std::uint64_t> ptrs;      ///< launches: values of 8-byte parameters
  /// Launches: words of larger parameters (structs passed by value) that look
  /// like addresses (`sptrs`; docs/trace-format.md).
  std::vector<std::uint64_t> struct_ptrs;
  std::uint64_t event = 0;  ///< records, waits, event syncs and creation
  std::uint64_t ptr = 0;    ///< allocations, frees, registrations, prefetches, attaches
  std::string memory;       ///< allocations, frees: "device", "pinned", "managed", "async"
  std::string to;           ///< prefetches: "device" or "host", where the bytes go; empty if unknown

  /// Host time spent in the call, ns.
  [[nodiscard]] double duration_ns() const noexcept { return static_cast<double>(end - start); }
};

/// What a device work record did.
enum class work_kind : std::uint8_t { memcpy, memset, kernel, sync };

/// A CUPTI activity record of device work (or of a synchronization).
struct DeviceWork {
  work_kind kind = work_kind::kernel;   ///< what ran
  std::uint64_t corr = 0;               ///< the enqueuing call's Call::corr, or an alias (RawTrace::aliases)
  std::uint64_t start = 0;              ///< when the device began it, ns
  std::uint64_t end = 0;                ///< when it finished, ns
  std::optional<std::uint32_t> stream;  ///< CUPTI stream id; empty where CUPTI gives none
  std::uint64_t bytes = 0;              ///< memcpy, memset: bytes copied or set; 0 otherwise
  std::string copy_kind;                ///< memcpy: "h2d", ...
  std::string src_kind;                 ///< memcpy: "pageable", "pinned", "device", ...
  std::string dst_kind;                 ///< memcpy: the destination's memory kind, as src_kind
  bool async = false;                   ///< memcpy, memset: enqueued by an asynchronous call
  std::string name;                     ///< kernel name
  std::uint64_t blocks = 0;             ///< kernel: grid x*y*z; 0 where the record has no grid
  std::string sync_type;                ///< sync: "stream", "event", "context", "stream_wait_event"
  /// Kernels, copies and memsets a graph launch ran: CUPTI's id of the
  /// executable graph's node (GraphNodeRecord, RawTrace::node_clones); 0 otherwise.
  std::uint64_t node = 0;
};

/// Managed memory the driver moved across a link (a `migration` record).
struct Migration {
  std::uint64_t start = 0;    ///< when the transfer began, ns
  std::uint64_t end = 0;      ///< when it ended, ns
  std::uint64_t bytes = 0;    ///< bytes moved
  std::uint64_t address = 0;  ///< the first byte moved
  std::string kind;           ///< "h2d", "d2h" or "d2d"
  /// Why: "explicit" (cudaMemPrefetchAsync), "fault" (an access on the other
  /// side), "speculative" (the driver's own prefetch), "eviction",
  /// "access_counters" or "unknown".
  std::string cause;
  /// Migrations this record stands for: the tracer merges the driver's own
  /// by the millisecond (docs/trace-format.md), keeping their count.
  std::uint64_t count = 1;
  std::uint64_t busy = 0;  ///< their durations summed, ns (end - start for one)
};

/// A node of a CUDA graph as the app made it (a `graph_node` record).
struct GraphNodeRecord {
  /// The app's call that made it: a stream call under capture (whose own
  /// record has the kernel's pointers, the copy's ends) or cudaGraphAdd*Node; 0: unknown.
  std::uint64_t corr = 0;
  /// Nodes added explicitly: "kernel", "memcpy", "memset", ...; empty for a captured node.
  std::string kind;
  std::string kernel;                      ///< explicit kernel nodes: the (possibly mangled) name
  std::vector<std::uint64_t> ptrs;         ///< explicit kernel nodes: values of 8-byte parameters
  std::vector<std::uint64_t> struct_ptrs;  ///< explicit kernel nodes: address-like words of struct parameters
  std::uint64_t dst = 0;                   ///< explicit memcpy and memset nodes
  std::uint64_t src = 0;                   ///< explicit memcpy nodes
  std::uint64_t bytes = 0;                 ///< explicit memcpy and memset nodes
  /// Its parameters changed after it was made (a `graph_node_set` record):
  /// what it touches when it runs is no longer known.
  bool params_changed = false;
};

/// An instantiated graph's structure (a `graph` record): every node, child
/// graphs' nodes included, and every edge.
struct GraphRecord {
  std::uint64_t exec = 0;            ///< CUPTI's id of the executable graph
  std::uint64_t graph = 0;           ///< CUPTI's id of the graph instantiated
  std::vector<std::uint64_t> nodes;  ///< node ids
  std::vector<std::string> kinds;    ///< per node: "kernel", "memcpy", "graph" (a child graph), "empty", ...
  std::vector<std::uint64_t> parents;  ///< per node: the child-graph node holding it; 0 at the top
  std::vector<std::pair<std::uint64_t, std::uint64_t>> edges;  ///< from, to: `to` runs after `from`
  bool cut = false;  ///< too large or deep: not every node was written
};

/// A stream the process used.
struct StreamRecord {
  std::uint32_t id = 0;           ///< CUPTI stream id, as in Call::stream and DeviceWork::stream
  std::string kind = "blocking";  ///< blocking, non_blocking, legacy_default, per_thread_default
  int priority = 0;               ///< the stream's priority; lower numbers run first, 0 is the default
};

/// An NVTX range.
struct Range {
  std::string name;         ///< the range's message
  std::uint64_t start = 0;  ///< when it was pushed or started, ns
  std::uint64_t end = 0;    ///< when it was popped or ended, ns
  std::uint64_t tid = 0;    ///< OS id of the thread that opened it
};

/// A device the process used.
struct DeviceRecord {
  int index = 0;         ///< the device ordinal
  std::string name;      ///< e.g. "NVIDIA H100 80GB HBM3"
  int sms = 0;           ///< its streaming multiprocessors
  int copy_engines = 0;  ///< its asynchronous copy engines (CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
  /// Whether it runs kernels of different streams at once
  /// (CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS); empty in version 1 traces.
  std::optional<bool> concurrent_kernels;
  std::string compute_capability;  ///< "9.0"; empty in version 1 traces
};

/// The traced process's environment variables that shape how its work runs,
/// as the `env` record (version 2) gives them; an empty optional is a
/// variable that was not set.
struct TraceEnvironment {
  /// The trace has an `env` record. False for version 1 traces: nothing is
  /// known, and the device model's own figures stand.
  bool recorded = false;
  std::optional<std::string> max_connections;  ///< CUDA_DEVICE_MAX_CONNECTIONS
  std::optional<std::string> module_loading;   ///< CUDA_MODULE_LOADING ("LAZY", "EAGER")
  std::optional<std::string> launch_blocking;  ///< CUDA_LAUNCH_BLOCKING ("1": every launch synchronous)
  std::optional<std::string> rank;             ///< RANK: the process's rank in its job (torchrun)
  std::optional<std::string> local_rank;       ///< LOCAL_RANK: its rank on this host (torchrun)
  std::optional<std::string> mpi_rank;         ///< OMPI_COMM_WORLD_RANK, else PMI_RANK (MPI launchers)

  /// The connections the driver used: CUDA_DEVICE_MAX_CONNECTIONS clamped to
  /// 1..32, 8 when unset or not a number; empty when nothing was recorded.
  [[nodiscard]] std::optional<std::uint32_t> connections() const;
  /// CUDA_LAUNCH_BLOCKING was set to a non-zero number.
  [[nodiscard]] bool launches_blocking() const;
};

/// `model` as it ran in `env`: the connections in force (for
/// queue_mapping::per_stream). `applied` receives a sentence per change or
/// notable variable (CUDA_LAUNCH_BLOCKING), for the report. A version 1
/// trace's environment (not recorded) changes nothing.
[[nodiscard]] DeviceModel with_environment(DeviceModel model, const TraceEnvironment& env,
                                           std::vector<std::string>* applied = nullptr);

/// What a trace file of another tool's format does not record, which
/// overlap's own traces do; each makes the audit say what it cannot check
/// instead of guessing. All false for libovl_inject's traces.
struct TraceGaps {
  /// No pointer arguments (copy ends, kernel parameters, allocations): races
  /// and what the host reads after a sync cannot be checked.
  bool pointers = false;
  /// Event records name neither their event nor their stream: a stream's
  /// wait on an event is not tied to the work it waits for.
  bool event_records = false;
  /// Streams' kinds are not recorded: which one is the legacy default
  /// stream, and which are non-blocking, is unknown.
  bool stream_kinds = false;
  /// Calls' return codes are not recorded: a not-ready query is not told
  /// from a ready one.
  bool call_status = false;

  /// Any of them.
  [[nodiscard]] bool any() const noexcept { return pointers || event_records || stream_kinds || call_status; }
};

/// What one kernel launch was measured to read and write (`--accesses
/// measured`), in the traced run's addresses: (address, bytes) pairs.
struct MeasuredAccesses {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> reads;   ///< (address, bytes) read
  std::vector<std::pair<std::uint64_t, std::uint64_t>> writes;  ///< (address, bytes) written
  /// False when the launch's table overflowed: the ranges then include a
  /// hull of what did not fit, a superset, so races on them stay possible.
  bool exact = true;
};

/// A parsed trace file.
struct RawTrace {
  int version = 0;                                 ///< the header's format version: 1 or 2
  TraceEnvironment env;                            ///< the process's environment (version 2)
  std::uint64_t pid = 0;                           ///< the traced process's id
  std::string exe;                                 ///< its executable's path (for Python, the interpreter)
  std::vector<DeviceRecord> devices;               ///< the devices it used, in the order first seen
  std::vector<StreamRecord> streams;               ///< in the order first seen
  std::vector<Call> calls;                         ///< in the order written (call exit)
  std::vector<DeviceWork> work;                    ///< CUPTI activity records, in the order written
  std::vector<Range> ranges;                       ///< closed NVTX ranges, in the order they ended
  std::vector<Migration> migrations;               ///< managed memory's moves, in the order written
  std::map<std::uint64_t, std::uint64_t> aliases;  ///< activity corr -> call corr
  std::vector<GraphRecord> graphs;                 ///< instantiated graphs, in the order instantiated
  std::map<std::uint64_t, GraphNodeRecord> graph_nodes;  ///< by node id
  std::map<std::uint64_t, std::uint64_t> node_clones;    ///< node id -> the node it was cloned from
  std::map<std::uint64_t, MeasuredAccesses> measured;    ///< by launch call corr (`accesses` records)
  /// Kernel nodes of graph launches, by (the launch call's corr, the node
  /// its record names): `accesses` records with a `node`.
  std::map<std::pair<std::uint64_t, std::uint64_t>, MeasuredAccesses> measured_nodes;
  /// Kernels (by the names launches and kernel records give) that call
  /// device-side printf, from the modules' call graphs: `printf` records.
  std::set<std::string> printing_kernels;
  std::vector<std::string> errors;  ///< the library's own error records
  bool complete = false;            ///< a footer was read
  std::string end_reason;           ///< "exit", "signal 15", or empty
  std::uint64_t dropped = 0;        ///< records lost, as the footer counts them
  std::size_t unknown_records = 0;  ///< lines of a type this reader does not know
  /// The file's format, for reports: "overlap" (libovl_inject's JSON Lines)
  /// or "pytorch-profiler" (a Chrome trace written by torch.profiler).
  std::string format = "overlap";
  TraceGaps gaps;  ///< what the file's format does not record
};

/// Reads a trace as it is written: the bytes in pieces of any size (from a
/// file that a running app is still appending to), then finish(). Each
/// line is parsed as soon as its newline arrives, so that little is left to
/// read when the app ends. read_trace is this reader over a whole stream.
class TraceReader {
 public:
  /// `source` names the trace in errors ("trace.123.jsonl:17: ...").
  explicit TraceReader(std::string source);
  ~TraceReader();
  /// Moves the reader and what it has read.
  TraceReader(TraceReader&& other) noexcept;
  /// Moves the reader and what it has read.
  TraceReader& operator=(TraceReader&& other) noexcept;
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  /// Parses every line that `bytes` completes and keeps the start of the
  /// next. Throws overlap::invalid_input as read_trace does, naming the line.
  void feed(std::string_view bytes);
  /// Parses a last line left without its newline and returns the trace.
  /// Throws overlap::invalid_input for an empty file or one without a header.
  [[nodiscard]] RawTrace finish() &&;
  /// Lines read so far.
  [[nodiscard]] std::size_t lines() const noexcept { return lines_; }
  /// A footer has been read: the tracer has finished the file.
  [[nodiscard]] bool complete() const noexcept { return trace_.complete; }

 private:
  struct Parser;
  void take_line(std::string_view line);
  [[noreturn]] void too_long() const;

  std::string source_;
  std::unique_ptr<Parser> parser_;
  RawTrace trace_;
  std::string partial_;       // a line whose newline has not come yet
  std::size_t lines_ = 0;     // lines read
  std::size_t bad_line_ = 0;  // a line that did not parse (fine if it is the last), 0 if none
};

/// Parses a trace; `source` names it in errors ("trace.123.jsonl:17: ...").
/// A last line cut short (the process was killed while writing) is ignored
/// and leaves `complete` false; any other malformed line, a file whose first
/// record is not a header (or with a second header), and a version other
/// than 1 or 2 throw overlap::invalid_input with one line naming the problem.
[[nodiscard]] RawTrace read_trace(std::istream& in, std::string_view source);
/// Reads the file at `path`: a trace written by libovl_inject, or a Chrome
/// trace that PyTorch's profiler exported (read_pytorch_trace), told apart
/// by their first bytes.
[[nodiscard]] RawTrace load_trace(const std::filesystem::path& path);

/// `head`, a file's first bytes, start a Chrome trace (a JSON object with
/// `traceEvents`, or a JSON array of events) rather than JSON Lines.
[[nodiscard]] bool looks_like_chrome_trace(std::string_view head) noexcept;

/// Reads the Chrome-trace JSON that torch.profiler exports (Kineto's format:
/// `traceEvents` of categories cuda_runtime, cuda_driver, kernel,
/// gpu_memcpy, gpu_memset, cuda_sync, user_annotation) into a RawTrace:
/// runtime and driver calls with their host times, device work linked to
/// its call by correlation id, streams, NVTX-like ranges from
/// record_function (ProfilerStep#N as one repeated range "ProfilerStep"),
/// devices from deviceProperties. What the format lacks is in
/// RawTrace::gaps. Throws overlap::invalid_input naming the event and field
/// (`trace.json: traceEvents[12].ts: ...`) for malformed input.
[[nodiscard]] RawTrace read_pytorch_trace(std::string_view text, std::string_view source);

/// Name of a call class as the file writes it ("stream_sync").
[[nodiscard]] std::string_view to_string(call_class cls) noexcept;

}  // namespace overlap::trace
