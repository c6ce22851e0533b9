#include "overlap/core/program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {

bool is_stream_op(op_kind kind) noexcept {
  switch (kind) {
    case op_kind::copy:
    case op_kind::memset:
    case op_kind::kernel:
    case op_kind::host_function:
    case op_kind::event_record:
    case op_kind::stream_wait_event: return true;
    default: return false;
  }
}

bool is_work_op(op_kind kind) noexcept {
  return kind == op_kind::copy || kind == op_kind::memset || kind == op_kind::kernel ||
         kind == op_kind::host_function;
}

bool is_implicitly_synchronizing(op_kind kind) noexcept {
  return kind == op_kind::device_allocate || kind == op_kind::device_free || kind == op_kind::host_allocate ||
         kind == op_kind::host_free;
}

std::string_view to_string(op_kind kind) noexcept {
  switch (kind) {
    case op_kind::copy: return "copy";
    case op_kind::memset: return "memset";
    case op_kind::kernel: return "kernel";
    case op_kind::host_function: return "host_function";
    case op_kind::event_record: return "record";
    case op_kind::stream_wait_event: return "wait";
    case op_kind::stream_synchronize: return "stream_synchronize";
    case op_kind::event_synchronize: return "event_synchronize";
    case op_kind::device_synchronize: return "device_synchronize";
    case op_kind::device_allocate: return "malloc";
    case op_kind::device_free: return "free";
    case op_kind::host_allocate: return "host_alloc";
    case op_kind::host_free: return "host_free";
    case op_kind::host_work: return "host_work";
  }
  return "unknown";
}

std::string_view to_string(stream_kind kind) noexcept {
  switch (kind) {
    case stream_kind::blocking: return "blocking";
    case stream_kind::non_blocking: return "non_blocking";
    case stream_kind::legacy_default: return "legacy_default";
    case stream_kind::per_thread_default: return "per_thread_default";
  }
  return "unknown";
}

std::string_view to_string(copy_direction direction) noexcept {
  switch (direction) {
    case copy_direction::h2d: return "h2d";
    case copy_direction::d2h: return "d2h";
    case copy_direction::d2d: return "d2d";
  }
  return "unknown";
}

std::string_view to_string(host_memory memory) noexcept {
  return memory == host_memory::pinned ? "pinned" : "pageable";
}

std::string_view to_string(access_source source) noexcept {
  switch (source) {
    case access_source::inferred: return "inferred";
    case access_source::measured: return "measured";
    case access_source::declared: break;
  }
  return "declared";
}

namespace {

std::string default_label(const Op& op) {
  switch (op.kind) {
    case op_kind::copy:
      switch (op.direction) {
        case copy_direction::h2d: return "H2D";
        case copy_direction::d2h: return "D2H";
        case copy_direction::d2d: return op.peer ? "P2P" : "D2D";
      }
      break;
    case op_kind::memset: return "Memset";
    case op_kind::kernel: return "Kernel";
    case op_kind::host_function: return "HostFn";
    default: break;
  }
  return std::string(to_string(op.kind));
}

// The op's duration: required for some kinds, and a time when given. The
// message names the op's kind ("kernel: time: ..."), formatted only on error:
// every op of every Program passes through here.
void require_time(const std::optional<double>& value, op_kind kind, bool required) {
  if (!value) {
    if (required) throw invalid_input(fmt::format("{}: time: required", to_string(kind)));
    return;
  }
  if (!limits::is_time(*value)) {
    throw invalid_input(fmt::format("{}: time: {} is not a time (expected {})", to_string(kind), *value,
                                    limits::time_expected));
  }
}

}  // namespace

const Program::contents& Program::read() const noexcept {
  static const contents none;
  return contents_ ? *contents_ : none;
}

Program::contents& Program::write() {
  if (!contents_) {
    contents_ = std::make_shared<contents>();
  } else if (contents_.use_count() > 1) {
    contents_ = std::make_shared<contents>(*contents_);  // another copy keeps the shared one
  }
  return *contents_;
}

stream_id Program::add_stream(std::string stream_name, stream_kind kind, int priority, device_id device) {
  if (stream_name.empty()) throw invalid_input("stream name: must not be empty");
  if (find_stream(stream_name)) throw invalid_input(fmt::format("stream '{}': declared twice", stream_name));
  if (device >= limits::max_devices) {
    throw invalid_input(fmt::format("stream '{}': device: {} is out of range (expected 0 to {})", stream_name,
                                    device, limits::max_devices - 1));
  }
  if (kind == stream_kind::legacy_default) {
    if (const auto existing = find_legacy_default_stream(device)) {
      throw invalid_input(fmt::format("stream '{}': the legacy default stream of device {} is already '{}'",
                                      stream_name, device, read().streams[*existing].name));
    }
  }
  use_devices(device + 1);
  contents& c = write();
  const auto id = static_cast<stream_id>(c.streams.size());
  c.stream_index.emplace(stream_name, id);
  if (kind == stream_kind::legacy_default) c.legacy_streams[device] = id;
  c.streams.push_back(Stream{std::move(stream_name), kind, priority, device});
  return id;
}

void Program::use_devices(std::uint32_t count) {
  if (count > limits::max_devices) {
    throw invalid_input(
        fmt::format("devices: {} is out of range (expected 1 to {})", count, limits::max_devices));
  }
  const contents& now = read();
  if (count <= now.device_count && now.legacy_streams.size() >= now.device_count)
    return;  // shares nothing out
  contents& c = write();
  c.device_count = std::max(c.device_count, count);
  if (c.legacy_streams.size() < c.device_count) c.legacy_streams.resize(c.device_count);
}

std::optional<stream_id> Program::find_legacy_default_stream(device_id device) const noexcept {
  const contents& c = read();
  return device < c.legacy_streams.size() ? c.legacy_streams[device] : std::nullopt;
}

void Program::reserve(std::size_t streams, std::size_t ops) {
  contents& c = write();
  c.streams.reserve(streams);
  c.stream_index.reserve(streams);
  c.ops.reserve(ops);
}

Program Program::without_ops() const {
  Program copy;
  copy.name = name;
  copy.time_unit = time_unit;
  if (contents_) {
    contents& c = copy.write();
    c.streams = contents_->streams;
    c.events = contents_->events;
    c.stream_index = contents_->stream_index;
    c.event_index = contents_->event_index;
    c.legacy_streams = contents_->legacy_streams;
    c.device_count = contents_->device_count;
  }
  return copy;
}

stream_id Program::legacy_default_stream(device_id device) {
  if (const auto existing = find_legacy_default_stream(device)) return *existing;
  return add_stream(device == 0 ? std::string("default") : fmt::format("default@gpu{}", device),
                    stream_kind::legacy_default, 0, device);
}

event_id Program::add_event(std::string event_name) {
  if (event_name.empty()) throw invalid_input("event name: must not be empty");
  if (find_event(event_name)) throw invalid_input(fmt::format("event '{}': declared twice", event_name));
  contents& c = write();
  const auto id = static_cast<event_id>(c.events.size());
  c.event_index.emplace(event_name, id);
  c.events.push_back(std::move(event_name));
  return id;
}

std::optional<stream_id> Program::find_stream(std::string_view stream_name) const noexcept {
  const contents& c = read();
  const auto found = c.stream_index.find(stream_name);
  if (found == c.stream_index.end()) return std::nullopt;
  return found->second;
}

std::optional<event_id> Program::find_event(std::string_view event_name) const noexcept {
  const contents& c = read();
  const auto found = c.event_index.find(event_name);
  if (found == c.event_index.end()) return std::nullopt;
  return found->second;
}

void Program::validate(const Op& op) const {
  const bool needs_stream = is_stream_op(op.kind) || op.kind == op_kind::stream_synchronize;
  const bool needs_event = op.kind == op_kind::event_record || op.kind == op_kind::stream_wait_event ||
                           op.kind == op_kind::event_synchronize;
  if (needs_stream && !op.stream)
    throw invalid_input(fmt::format("{}: stream: required", to_string(op.kind)));
  if (op.stream && *op.stream >= read().streams.size()) {
    throw invalid_input(fmt::format("{}: stream: id {} is not declared", to_string(op.kind), *op.stream));
  }
  if (op.device >= limits::max_devices) {
    throw invalid_input(fmt::format("{}: device: {} is out of range (expected 0 to {})", to_string(op.kind),
                                    op.device, limits::max_devices - 1));
  }
  if (op.peer) {
    if (op.kind != op_kind::copy || op.direction != copy_direction::d2d)
      throw invalid_input(
          fmt::format("{}: peer: only a d2d copy runs between two devices", to_string(op.kind)));
    for (const device_id end : {op.peer->from, op.peer->to}) {
      if (end >= limits::max_devices) {
        throw invalid_input(fmt::format("copy: peer: device {} is out of range (expected 0 to {})", end,
                                        limits::max_devices - 1));
      }
    }
    if (op.peer->from == op.peer->to) {
      throw invalid_input(
          fmt::format("copy: peer: from and to are both device {} (a copy within one device is a plain d2d)",
                      op.peer->to));
    }
    if (op.stream && *op.stream < read().streams.size()) {
      const Stream& s = read().streams[*op.stream];
      if (s.device != op.peer->from && s.device != op.peer->to) {
        throw invalid_input(fmt::format(
            "copy: stream: '{}' is on device {}, neither end of the peer copy from device {} to device {}",
            s.name, s.device, op.peer->from, op.peer->to));
      }
    }
  }
  if (needs_event && !op.event) throw invalid_input(fmt::format("{}: event: required", to_string(op.kind)));
  if (op.event && *op.event >= read().events.size()) {
    throw invalid_input(fmt::format("{}: event: id {} is not declared", to_string(op.kind), *op.event));
  }
  const bool duration_required =
      op.kind == op_kind::kernel || op.kind == op_kind::host_function || op.kind == op_kind::host_work;
  require_time(op.duration, op.kind, duration_required);
  if (op.kind == op_kind::kernel && !(op.gpu_share > 0.0 && op.gpu_share <= 1.0)) {
    throw invalid_input(
        fmt::format("kernel: share: {} is out of range (expected 0 < share <= 1)", op.gpu_share));
  }
  // Bounded like durations, so sums and ends (offset + size) cannot overflow.
  const auto require_bytes = [&](std::uint64_t bytes, std::string_view field) {
    if (bytes > limits::max_bytes) {
      throw invalid_input(fmt::format("{}: {}: {} is over the limit of 1 TiB (expected at most {} bytes)",
                                      to_string(op.kind), field, bytes, limits::max_bytes));
    }
  };
  require_bytes(op.bytes, "bytes");
  for (const Access& access : op.accesses) {
    if (access.buffer.empty())
      throw invalid_input(fmt::format("{}: access: buffer name must not be empty", to_string(op.kind)));
    require_bytes(access.offset, "access offset");
    require_bytes(access.size.value_or(0), "access bytes");
  }
}

op_id Program::append(Op op) {
  // A stream op runs on its stream's device, whatever the caller set.
  if (op.stream && *op.stream < read().streams.size()) op.device = read().streams[*op.stream].device;
  validate(op);
  use_devices(op.device + 1);
  if (op.peer) use_devices(std::max(op.peer->from, op.peer->to) + 1);
  if (op.label.empty()) op.label = default_label(op);
  std::vector<Op>& ops = write().ops;
  ops.push_back(std::move(op));
  return static_cast<op_id>(ops.size() - 1);
}

Op& Program::last() {
  if (read().ops.empty()) throw error("Program::last: the program has no ops");
  return write().ops.back();
}

op_id Program::copy(stream_id stream, copy_direction direction, std::uint64_t bytes, host_memory memory,
                    std::optional<double> duration) {
  Op op;
  op.kind = op_kind::copy;
  op.stream = stream;
  op.direction = direction;
  op.bytes = bytes;
  op.memory = memory;
  op.duration = duration;
  return append(std::move(op));
}

op_id Program::copy_sync(copy_direction direction, std::uint64_t bytes, host_memory memory,
                         std::optional<double> duration) {
  const stream_id stream = legacy_default_stream();
  Op op;
  op.kind = op_kind::copy;
  op.stream = stream;
  op.direction = direction;
  op.bytes = bytes;
  op.memory = memory;
  op.mode = call_mode::synchronous;
  op.duration = duration;
  return append(std::move(op));
}

op_id Program::copy_peer(stream_id stream, PeerEnds ends, std::uint64_t bytes,
                         std::optional<double> duration) {
  Op op;
  op.kind = op_kind::copy;
  op.stream = stream;
  op.direction = copy_direction::d2d;
  op.peer = ends;
  op.bytes = bytes;
  op.duration = duration;
  return append(std::move(op));
}

op_id Program::kernel(stream_id stream, double duration, double gpu_share) {
  Op op;
  op.kind = op_kind::kernel;
  op.stream = stream;
  op.duration = duration;
  op.gpu_share = gpu_share;
  return append(std::move(op));
}

op_id Program::memset(stream_id stream, std::uint64_t bytes, std::optional<double> duration) {
  Op op;
  op.kind = op_kind::memset;
  op.stream = stream;
  op.bytes = bytes;
  op.duration = duration;
  return append(std::move(op));
}

op_id Program::host_function(stream_id stream, double duration) {
  Op op;
  op.kind = op_kind::host_function;
  op.stream = stream;
  op.duration = duration;
  return append(std::move(op));
}

op_id Program::record(event_id event, stream_id stream) {
  Op op;
  op.kind = op_kind::event_record;
  op.stream = stream;
  op.event = event;
  return append(std::move(op));
}

op_id Program::wait(stream_id stream, event_id event) {
  Op op;
  op.kind = op_kind::stream_wait_event;
  op.stream = stream;
  op.event = event;
  return append(std::move(op));
}

op_id Program::synchronize(stream_id stream) {
  Op op;
  op.kind = op_kind::stream_synchronize;
  op.stream = stream;
  return append(std::move(op));
}

op_id Program::synchronize_event(event_id event) {
  Op op;
  op.kind = op_kind::event_synchronize;
  op.event = event;
  return append(std::move(op));
}

op_id Program::synchronize_device(device_id device) {
  Op op;
  op.kind = op_kind::device_synchronize;
  op.device = device;
  return append(std::move(op));
}

op_id Program::implicit_sync(op_kind kind, double host_cost, device_id device) {
  if (!is_implicitly_synchronizing(kind)) {
    throw invalid_input(
        fmt::format("implicit_sync: {} is not an implicitly synchronizing call", to_string(kind)));
  }
  Op op;
  op.kind = kind;
  op.duration = host_cost;
  op.device = device;
  return append(std::move(op));
}

op_id Program::host_work(double duration) {
  Op op;
  op.kind = op_kind::host_work;
  op.duration = duration;
  return append(std::move(op));
}

}  // namespace overlap
