// overlap::Program: a stream program as data.
//
// A Program is what a host thread issues, in issue order: the streams it
// created and the operations it enqueued on them or ran itself (copies,
// kernels, event records and waits, synchronizations, allocations). It holds
// no CUDA handles, so the same value can be simulated (overlap::sim), checked
// (overlap::check), rendered, or issued for real by the CUDA layer.
//
// Times are plain numbers in the program's `time_unit` (milliseconds unless a
// spec says otherwise); bytes are bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace overlap {

/// Index of a stream in Program::streams().
using stream_id = std::uint32_t;
/// Index of an event in Program::events().
using event_id = std::uint32_t;
/// Index of an op in Program::ops(), which is also its host issue order.
using op_id = std::uint32_t;
/// A GPU of the host, as CUDA numbers them (cudaSetDevice).
using device_id = std::uint32_t;

/// How a stream orders itself against the legacy default stream.
enum class stream_kind : std::uint8_t {
  blocking,            ///< cudaStreamCreate: waits for and is waited on by the legacy default stream
  non_blocking,        ///< cudaStreamNonBlocking: exempt from the legacy default stream barrier
  legacy_default,      ///< stream 0 / cudaStreamLegacy: a barrier for every blocking stream
  per_thread_default,  ///< cudaStreamPerThread: an ordinary blocking stream
};

/// A stream the program created (or one of the two default streams).
struct Stream {
  std::string name;                          ///< shown in timelines, e.g. "Stream1"
  stream_kind kind = stream_kind::blocking;  ///< how it orders against its device's legacy default stream
  int priority = 0;                          ///< larger is more urgent, as in CUDA's range inverted
  /// The GPU it belongs to: its ops run there, and a blocking stream orders
  /// only against that device's legacy default stream.
  device_id device = 0;
};

/// The two GPUs of a peer copy (cudaMemcpyPeerAsync): bytes move from one
/// device's memory to the other's, over NVLink or PCIe. The copy is issued
/// on a stream of one of them.
struct PeerEnds {
  device_id from = 0;  ///< the GPU read
  device_id to = 0;    ///< the GPU written
};

/// What an op does; see Op for the fields each kind uses.
enum class op_kind : std::uint8_t {
  copy,                ///< cudaMemcpy[Async]: direction, bytes, host memory kind
  memset,              ///< cudaMemset[Async] on a stream: bytes
  kernel,              ///< a kernel launch: duration and GPU share
  host_function,       ///< cudaLaunchHostFunc: runs on the host, in stream order
  event_record,        ///< cudaEventRecord(event, stream)
  stream_wait_event,   ///< cudaStreamWaitEvent(stream, event)
  stream_synchronize,  ///< cudaStreamSynchronize: the host waits for one stream
  event_synchronize,   ///< cudaEventSynchronize: the host waits for one event
  device_synchronize,  ///< cudaDeviceSynchronize: the host waits for everything
  device_allocate,     ///< cudaMalloc: implicitly synchronizes the device
  device_free,         ///< cudaFree: implicitly synchronizes the device
  host_allocate,       ///< cudaMallocHost / cudaHostAlloc: implicitly synchronizes
  host_free,           ///< cudaFreeHost: implicitly synchronizes
  host_work,           ///< plain host computation between API calls
};

/// Direction of a copy.
enum class copy_direction : std::uint8_t { h2d, d2h, d2d };

/// The host side of a copy: only pinned memory lets a copy run asynchronously.
enum class host_memory : std::uint8_t { pinned, pageable };

/// Whether a host call returns before its device work is done.
enum class call_mode : std::uint8_t {
  asynchronous,  ///< the *Async variant: returns once enqueued
  synchronous,   ///< the plain variant (cudaMemcpy): returns when the work is done
};

/// How an op touches a buffer: only the checker reads these.
enum class access_mode : std::uint8_t { read, write };

/// How an Access came to be known; the checker trusts only exact ones.
enum class access_source : std::uint8_t {
  /// Known byte for byte: stated by the program (a spec file, a builder) or
  /// exact by nature (a traced copy's or memset's bytes, a host read of them).
  declared,
  /// Guessed from a kernel's pointer parameter: the kernel may touch fewer
  /// bytes (or more), so a race resting on it is only possible.
  inferred,
  /// Observed while the kernel ran: as exact as declared.
  measured,
};

/// A byte range of a named buffer that an op reads or writes.
struct Access {
  std::string buffer;                    ///< a name the program gives the buffer
  std::uint64_t offset = 0;              ///< first byte
  std::optional<std::uint64_t> size;     ///< bytes; empty means "to the end of the buffer"
  access_mode mode = access_mode::read;  ///< whether the op reads or writes the range
  /// How the range is known: races on inferred ranges are reported as possible, not certain.
  access_source source = access_source::declared;
  /// Inferred kernel accesses: which of the kernel's pointer parameters (0
  /// for the first) the range comes from, -1 otherwise. Two launches of one
  /// kernel given the same pointer in the same parameter share it by design
  /// (an input, or atomically or index-partitioned output), which is not a
  /// race (see check::visit_races).
  std::int32_t parameter = -1;
};

/// One host call or host activity, in issue order.
///
/// A flat value: each kind reads the fields its comment in op_kind names and
/// ignores the rest. Builders in Program fill them consistently.
struct Op {
  op_kind kind = op_kind::kernel;   ///< what the op does; decides which fields below apply
  std::optional<stream_id> stream;  ///< device ops, waits, stream syncs
  std::optional<event_id> event;    ///< records, waits, event syncs
  /// The GPU the op runs on or applies to: its stream's for stream ops (set
  /// by Program::append); for cudaDeviceSynchronize, allocations and frees
  /// the device the host had current (they wait for that device alone).
  device_id device = 0;
  std::string label;        ///< stage name shown in timelines ("H2D", "Kernel")
  std::string item;         ///< the chunk or item it works on ("A", "3"), may be empty
  std::int64_t chunk = -1;  ///< chunk index for pipelines, -1 if none

  /// Explicit duration in the program's time unit. Required for kernels,
  /// host functions and host work; for copies and memsets it overrides the
  /// device model's bandwidth curve; for allocations it is the host cost.
  std::optional<double> duration;
  std::uint64_t bytes = 0;                         ///< copies and memsets
  copy_direction direction = copy_direction::h2d;  ///< copies
  /// d2d copies between two GPUs: the devices read and written (one is the
  /// stream's). Empty for a copy within one device.
  std::optional<PeerEnds> peer;
  host_memory memory = host_memory::pinned;  ///< copies; pageable ones block the host like synchronous ones
  call_mode mode = call_mode::asynchronous;  ///< copies: synchronous for cudaMemcpy (copy_sync)
  double gpu_share = 1.0;                    ///< fraction of the SMs a kernel occupies, in (0, 1]
  /// A node of a CUDA graph, run by cudaGraphLaunch rather than by a call of
  /// its own: findings name the launch (a pageable memcpy node holds the host
  /// in cudaGraphLaunch, not in a cudaMemcpyAsync). Timing ignores it.
  bool graph_node = false;
  /// Kernels: it calls device-side printf, whose output the host writes out
  /// only when it next synchronizes. A cudaDeviceSynchronize with nothing
  /// else to wait for is then how the program shows that output (the
  /// device-synchronize rule does not call it useless).
  bool prints = false;

  std::vector<Access> accesses;  ///< regions read and written, for the checker
};

/// True for ops that execute on a device stream and occupy an engine or a
/// stream slot (copies, memsets, kernels, host functions, records, waits).
[[nodiscard]] bool is_stream_op(op_kind kind) noexcept;
/// True for ops that do timed work on an engine (copies, memsets, kernels, host functions).
[[nodiscard]] bool is_work_op(op_kind kind) noexcept;
/// True for calls that drain the device before returning (allocation and free).
[[nodiscard]] bool is_implicitly_synchronizing(op_kind kind) noexcept;

/// Lower-case names used by specs, JSON and messages ("h2d", "kernel", ...).
[[nodiscard]] std::string_view to_string(op_kind kind) noexcept;
[[nodiscard]] std::string_view to_string(stream_kind kind) noexcept;
[[nodiscard]] std::string_view to_string(copy_direction direction) noexcept;
[[nodiscard]] std::string_view to_string(host_memory memory) noexcept;
/// "declared", "inferred" or "measured", as spec files write an access's source.
[[nodiscard]] std::string_view to_string(access_source source) noexcept;

/// A stream program: streams, events and ops in host issue order.
///
/// Builders append ops and validate their arguments at once, throwing
/// overlap::invalid_input naming the bad argument; a Program that exists is
/// well formed (every stream and event id refers to something declared) and
/// within limits.hpp's bounds on durations and byte counts. A Program is a
/// value; copies share their ops until one of them changes, so copying one
/// costs a reference count.
class Program {
 public:
  Program() = default;

  /// Adds a stream on `device` and returns its id. Names must be unique and
  /// non-empty; a device has at most one legacy default stream.
  stream_id add_stream(std::string stream_name, stream_kind kind = stream_kind::blocking, int priority = 0,
                       device_id device = 0);
  /// The legacy default stream of `device` ("default" on device 0,
  /// "default@gpuN" on device N), created on first use.
  stream_id legacy_default_stream(device_id device = 0);
  /// The legacy default stream of `device`, if the program has one.
  [[nodiscard]] std::optional<stream_id> find_legacy_default_stream(device_id device = 0) const noexcept;
  /// Declares that the program uses `count` GPUs (0 .. count - 1), even
  /// ones none of its streams is on yet; never lowers the count.
  void use_devices(std::uint32_t count);
  /// GPUs the program uses: one more than the highest device of its
  /// streams and ops (peer copies' ends included), or as declared; at least 1.
  [[nodiscard]] std::uint32_t device_count() const noexcept { return read().device_count; }
  /// Room for `streams` streams and `ops` ops, for builders that know their size.
  void reserve(std::size_t streams, std::size_t ops);
  /// Adds an event and returns its id. Names must be unique and non-empty.
  event_id add_event(std::string event_name);

  /// Async copy of `bytes` on `stream`. `duration`, if given, overrides the model.
  op_id copy(stream_id stream, copy_direction direction, std::uint64_t bytes,
             host_memory memory = host_memory::pinned, std::optional<double> duration = std::nullopt);
  /// Async peer copy of `bytes` from GPU `ends.from` to GPU `ends.to`
  /// (cudaMemcpyPeerAsync) on `stream`, which must belong to one of them.
  op_id copy_peer(stream_id stream, PeerEnds ends, std::uint64_t bytes,
                  std::optional<double> duration = std::nullopt);
  /// Synchronous cudaMemcpy: legacy default stream, host blocks until done.
  op_id copy_sync(copy_direction direction, std::uint64_t bytes, host_memory memory = host_memory::pageable,
                  std::optional<double> duration = std::nullopt);
  /// Kernel of `duration` occupying `gpu_share` of the GPU.
  op_id kernel(stream_id stream, double duration, double gpu_share = 1.0);
  /// Async memset of `bytes` on `stream`.
  op_id memset(stream_id stream, std::uint64_t bytes, std::optional<double> duration = std::nullopt);
  /// Host function of `duration` run in stream order.
  op_id host_function(stream_id stream, double duration);
  /// Records `event` on `stream` (cudaEventRecord); a later record replaces the earlier one.
  op_id record(event_id event, stream_id stream);
  /// Makes `stream` wait for the last record of `event` issued before it (cudaStreamWaitEvent).
  op_id wait(stream_id stream, event_id event);
  /// The host blocks until the work issued so far on `stream` is done (cudaStreamSynchronize).
  op_id synchronize(stream_id stream);
  /// The host blocks until the last record of `event` completes (cudaEventSynchronize).
  op_id synchronize_event(event_id event);
  /// The host blocks until all work issued so far on `device` is done (cudaDeviceSynchronize).
  op_id synchronize_device(device_id device = 0);
  /// An implicitly synchronizing call (allocation or free) on `device`,
  /// costing `host_cost` on the host.
  op_id implicit_sync(op_kind kind, double host_cost = 0.0, device_id device = 0);
  /// Host computation of `duration` between API calls; the host issues nothing meanwhile.
  op_id host_work(double duration);

  /// Appends a fully described op after validating it (used by parsers).
  op_id append(Op op);

  /// Mutable access to the op just appended, to set labels and accesses.
  Op& last();

  /// The same streams, events, name and time unit with no ops: the start of
  /// an edited copy, whose appended ops keep their stream and event ids.
  [[nodiscard]] Program without_ops() const;

  /// Declared streams, indexed by stream_id.
  [[nodiscard]] const std::vector<Stream>& streams() const noexcept { return read().streams; }
  /// Declared event names, indexed by event_id.
  [[nodiscard]] const std::vector<std::string>& events() const noexcept { return read().events; }
  /// Every op in host issue order, indexed by op_id.
  [[nodiscard]] const std::vector<Op>& ops() const noexcept { return read().ops; }
  /// The id of the stream named `stream_name`; empty if none is declared.
  [[nodiscard]] std::optional<stream_id> find_stream(std::string_view stream_name) const noexcept;
  /// The id of the event named `event_name`; empty if none is declared.
  [[nodiscard]] std::optional<event_id> find_event(std::string_view event_name) const noexcept;

  /// Unit of every duration in the program, for display ("ms", "units").
  std::string time_unit = "ms";
  /// A name for reports.
  std::string name;

 private:
  void validate(const Op& op) const;

  // Name lookups: builders check every new name, so a linear search made
  // building a program of a million streams quadratic.
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>{}(key); }
  };
  /// The declarations and ops, shared by copies until one of them changes
  /// (copy on write): a Pipeline gives each run's report its Program, and
  /// copying and dropping a few hundred ops with their strings cost a run
  /// about 10 us of host time before its next call (bench/RESULTS.md, issue 38).
  struct contents {
    std::vector<Stream> streams;
    std::vector<std::string> events;
    std::vector<Op> ops;
    std::unordered_map<std::string, stream_id, name_hash, std::equal_to<>> stream_index;
    std::unordered_map<std::string, event_id, name_hash, std::equal_to<>> event_index;
    std::vector<std::optional<stream_id>> legacy_streams;  // by device
    std::uint32_t device_count = 1;
  };
  /// The contents to read (an empty one's when there are none yet).
  [[nodiscard]] const contents& read() const noexcept;
  /// The contents to change, this Program's own (copied first when shared).
  contents& write();

  std::shared_ptr<contents> contents_;  // null until the first change
};

}  // namespace overlap
