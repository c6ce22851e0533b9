// The explicit form of a spec: streams:, events: and buffers: declared,
// then ops: one by one, each op's name giving the fields it takes, with
// stream, event and buffer names resolved as they are read.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/core/program.hpp"
#include "spec_fields.hpp"
#include "spec_forms.hpp"

namespace overlap::io::spec {

namespace {

constexpr std::pair<std::string_view, copy_direction> kDirections[] = {
    {"h2d", copy_direction::h2d},
    {"d2h", copy_direction::d2h},
    {"d2d", copy_direction::d2d},
};
constexpr std::pair<std::string_view, stream_kind> kStreamKinds[] = {
    {"blocking", stream_kind::blocking},
    {"non_blocking", stream_kind::non_blocking},
    {"legacy_default", stream_kind::legacy_default},
    {"per_thread_default", stream_kind::per_thread_default},
};

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

/// What a spec op name stands for and which fields it takes beyond the common ones.
struct OpForm {
  std::string_view name;
  op_kind kind;
  std::optional<copy_direction> direction;  // fixed by the name (h2d, d2h, d2d)
  field_list fields;
};

const std::vector<OpForm>& op_forms() {
  static const field_list copy_fields = {"stream", "bytes", "time", "memory", "sync"};
  static const field_list host_cost = {"time"};
  static const std::vector<OpForm> forms = {
      {"h2d", op_kind::copy, copy_direction::h2d, copy_fields},
      {"d2h", op_kind::copy, copy_direction::d2h, copy_fields},
      {"d2d", op_kind::copy, copy_direction::d2d, copy_fields},
      {"copy", op_kind::copy, std::nullopt, {"dir", "stream", "bytes", "time", "memory", "sync"}},
      {"kernel", op_kind::kernel, std::nullopt, {"stream", "time", "share", "prints"}},
      {"memset", op_kind::memset, std::nullopt, {"stream", "bytes", "time", "sync"}},
      {"host_func", op_kind::host_function, std::nullopt, {"stream", "time"}},
      {"record", op_kind::event_record, std::nullopt, {"event", "stream"}},
      {"wait", op_kind::stream_wait_event, std::nullopt, {"stream", "event"}},
      {"stream_sync", op_kind::stream_synchronize, std::nullopt, {"stream"}},
      {"event_sync", op_kind::event_synchronize, std::nullopt, {"event"}},
      {"peer", op_kind::copy, copy_direction::d2d, {"stream", "bytes", "time", "from", "to"}},
      {"device_sync", op_kind::device_synchronize, std::nullopt, {"device"}},
      {"malloc", op_kind::device_allocate, std::nullopt, {"time", "device"}},
      {"free", op_kind::device_free, std::nullopt, {"time", "device"}},
      {"host_alloc", op_kind::host_allocate, std::nullopt, host_cost},
      {"host_free", op_kind::host_free, std::nullopt, host_cost},
      {"host_work", op_kind::host_work, std::nullopt, host_cost},
  };
  return forms;
}

const field_list kCommonOpFields = {"label", "item", "chunk", "reads", "writes"};

bool takes(const OpForm& form, std::string_view field) {
  return std::find(form.fields.begin(), form.fields.end(), field) != form.fields.end();
}

constexpr std::string_view kDeviceExpected = "a GPU number from 0 (as cudaSetDevice numbers them)";

device_id read_device(const Field& field) {
  return static_cast<device_id>(read_integer(field, 0, limits::max_devices - 1));
}

const OpForm& read_op_form(const Field& op) {
  field_list names;
  for (const OpForm& form : op_forms()) names.push_back(form.name);
  const Field field = op.require("op", "one of: " + join(names));
  const std::string name = read_string(field);
  for (const OpForm& form : op_forms()) {
    if (form.name == name) return form;
  }
  field.fail(fmt::format("{} is not an op", shown(name)), "one of: " + join(names));
}

field_list allowed_fields(const OpForm& form) {
  field_list allowed = {"op"};
  allowed.insert(allowed.end(), form.fields.begin(), form.fields.end());
  allowed.insert(allowed.end(), kCommonOpFields.begin(), kCommonOpFields.end());
  return allowed;
}

/// `sync: true` is the plain call (cudaMemcpy, cudaMemset) rather than the *Async one.
call_mode read_call_mode(const Field& op_field) {
  const std::optional<Field> sync = op_field.get("sync");
  return sync && read_bool(*sync) ? call_mode::synchronous : call_mode::asynchronous;
}

/// Sync copies default to pageable memory (what plain cudaMemcpy is usually
/// given), async ones to pinned (without it they would not be async).
void read_copy_mode(const Field& op_field, const OpForm& form, Op& op) {
  op.direction = form.direction ? *form.direction
                                : read_choice(op_field.require("dir", "one of: h2d, d2h, d2d"), kDirections);
  op.mode = read_call_mode(op_field);
  op.memory = op.mode == call_mode::synchronous ? host_memory::pageable : host_memory::pinned;
  if (auto memory = op_field.get("memory")) op.memory = read_choice(*memory, kMemories);
}

void require_payload(const Field& op_field, const Op& op) {
  const bool needs_time =
      op.kind == op_kind::kernel || op.kind == op_kind::host_function || op.kind == op_kind::host_work;
  if (needs_time && !op.duration) op_field.fail_missing("time", kTimeExpected);
  const bool sized = op.kind == op_kind::copy || op.kind == op_kind::memset;
  if (sized && !op.duration && !op_field.get("bytes")) {
    op_field.fail("neither bytes nor time given", "bytes, time, or both");
  }
}

/// time, bytes, share, prints, and a copy's direction, mode and memory.
void read_payload(const Field& op_field, const OpForm& form, Op& op) {
  if (auto time = op_field.get("time")) op.duration = read_time(*time);
  if (auto bytes = op_field.get("bytes")) op.bytes = read_bytes(*bytes);
  if (auto share = op_field.get("share")) op.gpu_share = read_share(*share);
  if (auto prints = op_field.get("prints")) op.prints = read_bool(*prints);
  if (op.kind == op_kind::copy) read_copy_mode(op_field, form, op);
  if (op.kind == op_kind::memset) op.mode = read_call_mode(op_field);
  // Program::implicit_sync always sets a host cost; match it.
  if (is_implicitly_synchronizing(op.kind) && !op.duration) op.duration = 0.0;
  require_payload(op_field, op);
}

/// One access: "buf", "buf[offset:end]" (end exclusive, either side may be
/// left out) or {buffer, offset, bytes, source}.
class AccessReader {
 public:
  static constexpr std::string_view kExpected =
      "a buffer name, 'name[offset:end]' with byte offsets, or a map {buffer, offset, bytes, source}";

  static Access read(const Field& field) {
    if (field.node().IsMap()) return read_map(field);
    if (!field.node().IsScalar()) field.fail(describe(field.node()) + " is not an access", kExpected);
    return read_text(field, field.node().Scalar());
  }

 private:
  static Access read_map(const Field& field) {
    check_fields(field, {"buffer", "offset", "bytes", "source"});
    Access access;
    access.buffer = read_string(field.require("buffer", "a buffer name"));
    if (auto offset = field.get("offset")) access.offset = read_bytes(*offset);
    if (auto bytes = field.get("bytes")) access.size = read_bytes(*bytes);
    if (auto source = field.get("source")) access.source = read_source(*source);
    return access;
  }

  // A captured program keeps whether each access was inferred from a
  // kernel's pointer parameter: a race resting on one is only possible.
  static access_source read_source(const Field& field) {
    static constexpr std::string_view expected = "declared, inferred or measured";
    if (!field.node().IsScalar()) field.fail(describe(field.node()) + " is not an access source", expected);
    const std::string& text = field.node().Scalar();
    if (text == "declared") return access_source::declared;
    if (text == "inferred") return access_source::inferred;
    if (text == "measured") return access_source::measured;
    field.fail(fmt::format("unknown access source {}", shown(text)), expected);
  }

  static Access read_text(const Field& field, std::string_view text) {
    Access access;
    const auto open = text.find('[');
    access.buffer = std::string(trim(text.substr(0, open)));
    if (access.buffer.empty()) field.fail(fmt::format("{} names no buffer", shown(text)), kExpected);
    if (open == std::string_view::npos) return access;
    const std::string_view range = text.substr(open + 1);
    const auto colon = range.find(':');
    if (range.empty() || range.back() != ']' || colon == std::string_view::npos) {
      field.fail(fmt::format("{} is not a buffer range", shown(text)), kExpected);
    }
    access.offset = read_offset(field, trim(range.substr(0, colon)), 0);
    const std::string_view end_text = trim(range.substr(colon + 1, range.size() - colon - 2));
    if (end_text.empty()) return access;  // to the end of the buffer
    const std::uint64_t end = read_offset(field, end_text, 0);
    if (end < access.offset) field.fail(fmt::format("{} ends before it starts", shown(text)), kExpected);
    access.size = end - access.offset;
    return access;
  }

  static std::uint64_t read_offset(const Field& field, std::string_view text, std::uint64_t if_empty) {
    if (text.empty()) return if_empty;
    const std::optional<std::uint64_t> offset = parse_byte_count(text);
    if (!offset) field.fail(fmt::format("{} is not a byte offset", shown(text)), kBytesExpected);
    return *offset;
  }
};

const field_list kStreamFields = {"name", "kind", "priority", "device"};

/// `default` and `per_thread` always mean the two default streams. They are
/// made on first use, or declared with their own kind to give them a place
/// among the streams or a priority (as overlap::io::to_spec does).
std::optional<stream_kind> reserved_stream_kind(std::string_view name) {
  if (name == "default") return stream_kind::legacy_default;
  if (name == "per_thread") return stream_kind::per_thread_default;
  return std::nullopt;
}

/// "default@gpuN": the legacy default stream of device N (N > 0; device 0's is "default").
std::optional<device_id> legacy_stream_device(std::string_view name) {
  constexpr std::string_view prefix = "default@gpu";
  if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 2)
    return std::nullopt;
  device_id device = 0;
  for (const char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    device = device * 10 + static_cast<device_id>(c - '0');
  }
  if (device == 0 || device >= limits::max_devices) return std::nullopt;
  return device;
}

/// Builds a Program from the explicit form, resolving names as it goes.
class ExplicitReader {
 public:
  /// `devices: N`: the GPUs the program may use, 0 .. N - 1. Without it any
  /// device a stream or op names is taken.
  void read_devices(const Field& field) {
    devices_ = static_cast<std::uint32_t>(read_integer(field, 1, limits::max_devices));
    program_.use_devices(*devices_);
  }

  void read_streams(const Field& list) {
    require_list(list, "a list of streams {name, kind, priority}", true);
    require_at_most(list, limits::max_streams, "streams");
    for (const Field& element : list.elements()) read_stream(element);
  }

  void read_events(const Field& list) {
    require_list(list, "a list of event names", true);
    require_at_most(list, limits::max_events, "events");
    for (const Field& element : list.elements()) {
      const std::string name = read_string(element);
      if (program_.find_event(name))
        element.fail(fmt::format("event {} declared twice", shown(name)), "unique names");
      program_.add_event(name);
    }
  }

  void read_buffers(const Field& map) {
    require_map(map, "a map of buffer name -> size in bytes");
    require_at_most(map, limits::max_events, "buffers");
    buffers_.emplace();
    for (const auto& [key, value] : map.members()) {
      const std::string name = read_string(key);
      if (!buffers_->emplace(name, read_bytes(value)).second) {
        key.fail(fmt::format("buffer {} declared twice", shown(name)), "unique names");
      }
    }
  }

  void read_ops(const Field& list) {
    require_list(list, "a list of ops, each a map with op: and its fields");
    require_at_most(list, limits::max_ops, "ops");
    for (const Field& element : list.elements()) read_op(element);
  }

  Program take() { return std::move(program_); }

 private:
  // Checked before the elements are read: the file's size bounds them, but
  // the limits are the same whichever way a program arrives.
  static void require_at_most(const Field& field, std::uint64_t limit, std::string_view what) {
    if (field.node().size() > limit) {
      field.fail(fmt::format("{} {} is over the limit", field.node().size(), what),
                 fmt::format("at most {} {}", limit, what));
    }
  }

  void read_stream(const Field& field) {
    // `- s1` is shorthand for `- {name: s1}`.
    if (field.node().IsScalar()) return add_stream(field, field, stream_kind::blocking, 0);
    check_fields(field, kStreamFields);
    const Field name = field.require("name", "a stream name");
    const std::optional<Field> kind = field.get("kind");
    const std::optional<Field> priority = field.get("priority");
    const std::optional<Field> device = field.get("device");
    add_stream(name, kind ? *kind : name, kind ? read_choice(*kind, kStreamKinds) : stream_kind::blocking,
               priority ? read_priority(*priority) : 0, device ? checked_device(*device) : 0);
  }

  /// A device within `devices:`, when that is given.
  device_id checked_device(const Field& field) const {
    const device_id device = read_device(field);
    if (devices_ && device >= *devices_) {
      field.fail(fmt::format("device {} is not one of the {} declared", device, *devices_),
                 fmt::format("0 to {} (devices: {})", *devices_ - 1, *devices_));
    }
    return device;
  }

  static int read_priority(const Field& field) {
    return static_cast<int>(
        read_integer(field, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  }

  void add_stream(const Field& name_field, const Field& kind_field, stream_kind kind, int priority,
                  device_id device = 0) {
    const std::string name = read_string(name_field);
    const std::optional<stream_kind> reserved = reserved_stream_kind(name);
    if (reserved && kind != *reserved) {
      name_field.fail(fmt::format("{} is reserved", shown(name)),
                      fmt::format("another name, or kind {}: {} always means a default stream",
                                  to_string(*reserved), shown(name)));
    }
    if (program_.find_stream(name))
      name_field.fail(fmt::format("stream {} declared twice", shown(name)), "unique names");
    try {
      program_.add_stream(name, kind, priority, device);
    } catch (const invalid_input& e) {
      kind_field.fail_raw(e.what());  // a second legacy default stream
    }
  }

  void read_op(const Field& field) {
    require_map(field, "a map with op: and its fields");
    const OpForm& form = read_op_form(field);
    check_fields(field, allowed_fields(form));
    Op op;
    op.kind = form.kind;
    read_payload(field, form, op);
    read_op_devices(field, form, op);
    if (takes(form, "stream")) op.stream = read_op_stream(field, op);
    if (takes(form, "event")) op.event = resolve_event(field.require("event", events_expected()));
    read_common(field, op);
    try {
      program_.append(std::move(op));
    } catch (const invalid_input& e) {
      field.fail_raw(e.what());  // fields are checked above; this is a safety net
    }
  }

  /// A peer copy's ends (cudaMemcpyPeerAsync: always asynchronous, device
  /// memory at both ends) and a device-scoped call's device, each within
  /// `devices:` when given.
  void read_op_devices(const Field& field, const OpForm& form, Op& op) const {
    if (form.name == "peer") {
      op.peer = PeerEnds{checked_device(field.require("from", kDeviceExpected)),
                         checked_device(field.require("to", kDeviceExpected))};
    }
    if (takes(form, "device")) {
      if (auto device = field.get("device")) op.device = checked_device(*device);
    }
  }

  /// Sync copies run on a default stream, as cudaMemcpy does; everything
  /// else that runs on a stream must name it.
  stream_id read_op_stream(const Field& op_field, const Op& op) {
    const std::optional<Field> field = op_field.get("stream");
    if (op.kind != op_kind::copy || op.mode != call_mode::synchronous) {
      return resolve_stream(field ? *field : op_field.require("stream", streams_expected()));
    }
    if (!field) return program_.legacy_default_stream();
    const stream_id stream = resolve_stream(*field);
    const stream_kind kind = program_.streams()[stream].kind;
    if (kind != stream_kind::legacy_default && kind != stream_kind::per_thread_default) {
      field->fail(fmt::format("a sync copy cannot run on '{}'", program_.streams()[stream].name),
                  "no stream, 'default' or 'per_thread': cudaMemcpy runs on a default stream");
    }
    return stream;
  }

  stream_id resolve_stream(const Field& field) {
    const std::string name = read_string(field);
    if (name == "default") return program_.legacy_default_stream();
    if (name == "per_thread") return per_thread_stream();
    const std::optional<device_id> device = legacy_stream_device(name);
    if (device && !program_.find_stream(name)) {
      if (devices_ && *device >= *devices_) {
        field.fail(
            fmt::format("{} is on device {}, not one of the {} declared", shown(name), *device, *devices_),
            streams_expected());
      }
      return program_.legacy_default_stream(*device);
    }
    const std::optional<stream_id> stream = program_.find_stream(name);
    if (!stream) field.fail(fmt::format("{} is not a declared stream", shown(name)), streams_expected());
    return *stream;
  }

  /// The per-thread default stream: one declared as `per_thread`, else the
  /// first declared one, else "per_thread" made on first use.
  stream_id per_thread_stream() {
    // Found once: a search per op was quadratic in specs of many streams.
    if (per_thread_) return *per_thread_;
    if (const std::optional<stream_id> named = program_.find_stream("per_thread"))
      return *(per_thread_ = named);
    for (std::size_t i = 0; i < program_.streams().size(); ++i) {
      if (program_.streams()[i].kind == stream_kind::per_thread_default)
        return *(per_thread_ = static_cast<stream_id>(i));
    }
    return *(per_thread_ = program_.add_stream("per_thread", stream_kind::per_thread_default));
  }

  event_id resolve_event(const Field& field) const {
    const std::string name = read_string(field);
    const std::optional<event_id> event = program_.find_event(name);
    if (!event) field.fail(fmt::format("{} is not a declared event", shown(name)), events_expected());
    return *event;
  }

  void read_common(const Field& field, Op& op) const {
    if (auto label = field.get("label")) op.label = read_string(*label);
    if (auto item = field.get("item")) op.item = read_string(*item);
    if (auto chunk = field.get("chunk")) {
      op.chunk = read_integer(*chunk, 0, std::numeric_limits<std::int64_t>::max());
    }
    if (auto reads = field.get("reads")) read_accesses(*reads, access_mode::read, op);
    if (auto writes = field.get("writes")) read_accesses(*writes, access_mode::write, op);
  }

  void read_accesses(const Field& list, access_mode mode, Op& op) const {
    require_list(list, AccessReader::kExpected, true);
    for (const Field& element : list.elements()) {
      Access access = AccessReader::read(element);
      access.mode = mode;
      check_declared(element, access);
      op.accesses.push_back(std::move(access));
    }
  }

  /// Only when buffers: is present: the buffer exists and the range fits in it.
  void check_declared(const Field& field, const Access& access) const {
    if (!buffers_) return;
    const auto buffer = buffers_->find(access.buffer);
    if (buffer == buffers_->end()) {
      field.fail(fmt::format("{} is not a declared buffer", shown(access.buffer)),
                 "one of: " + buffer_names());
    }
    const std::uint64_t size = buffer->second;
    const std::uint64_t bytes = access.size.value_or(0);
    if (access.offset > size || bytes > size - access.offset) {
      field.fail(fmt::format("bytes {}..{} lie outside buffer '{}' of {} bytes", access.offset,
                             access.offset + bytes, access.buffer, size),
                 "a range within the buffer");
    }
  }

  [[nodiscard]] std::string streams_expected() const {
    std::vector<std::string> names;
    for (const Stream& stream : program_.streams()) names.push_back(stream.name);
    for (const std::string_view name : {"default", "per_thread"}) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
    }
    return "a declared stream or a default one: " + join_some(names);
  }

  [[nodiscard]] std::string events_expected() const {
    if (program_.events().empty()) return "an event declared under events:";
    return "one of: " + join_some(program_.events());
  }

  [[nodiscard]] std::string buffer_names() const {
    std::vector<std::string> names;
    for (const auto& [name, size] : *buffers_) names.push_back(name);
    return join_some(names);
  }

  Program program_;
  std::optional<std::uint32_t> devices_;                         // empty: devices: absent
  std::optional<std::map<std::string, std::uint64_t>> buffers_;  // empty: buffers: absent
  std::optional<stream_id> per_thread_;
};

}  // namespace

Program read_explicit(const Field& root, const Field& ops) {
  ExplicitReader reader;
  if (auto devices = root.get("devices")) reader.read_devices(*devices);
  if (auto streams = root.get("streams")) reader.read_streams(*streams);
  if (auto events = root.get("events")) reader.read_events(*events);
  if (auto buffers = root.get("buffers")) reader.read_buffers(*buffers);
  reader.read_ops(ops);
  return reader.take();
}

}  // namespace overlap::io::spec
