// Reading trace files (docs/trace-format.md) line by line into a RawTrace.
#include "overlap/trace/trace_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap::trace {

namespace {

using nlohmann::json;

constexpr std::array<std::pair<call_class, std::string_view>, 18> class_names{{
    {call_class::copy, "copy"},
    {call_class::memset, "memset"},
    {call_class::launch, "launch"},
    {call_class::record, "record"},
    {call_class::wait, "wait"},
    {call_class::stream_sync, "stream_sync"},
    {call_class::event_sync, "event_sync"},
    {call_class::device_sync, "device_sync"},
    {call_class::alloc, "alloc"},
    {call_class::free, "free"},
    {call_class::host_register, "register"},
    {call_class::host_unregister, "unregister"},
    {call_class::stream_create, "stream_create"},
    {call_class::stream_destroy, "stream_destroy"},
    {call_class::event_create, "event_create"},
    {call_class::prefetch, "prefetch"},
    {call_class::attach, "attach"},
    {call_class::other, "other"},
}};

call_class parse_class(std::string_view name) {
  for (const auto& [cls, text] : class_names) {
    if (text == name) return cls;
  }
  return call_class::other;  // a newer library's class: keep the call, ignore its fields
}

/// One JSON value of a record, as much of it as the readers use. Strings
/// and keys are views into the line (or into the fallback's parsed object);
/// an array's elements lie in its Object's element list.
struct Value {
  /// The JSON type, numbers split as nlohmann::json splits them (the
  /// conversions in Record::get follow nlohmann's rules for each).
  enum class Kind : std::uint8_t {
    null,
    boolean,
    unsigned_number,
    signed_number,
    float_number,
    string,
    array,
    object
  };
  Kind kind = Kind::null;
  bool boolean = false;
  std::uint64_t unsigned_number = 0;
  std::int64_t signed_number = 0;
  double float_number = 0;
  std::string_view text;  ///< a string's characters
  std::size_t first = 0;  ///< an array's first element in Object::elements
  std::size_t count = 0;  ///< an array's number of elements

  /// nlohmann::json's type_name(), for the same error messages.
  [[nodiscard]] const char* type_name() const noexcept {
    switch (kind) {
      case Kind::null: return "null";
      case Kind::boolean: return "boolean";
      case Kind::unsigned_number:
      case Kind::signed_number:
      case Kind::float_number: return "number";
      case Kind::string: return "string";
      case Kind::array: return "array";
      case Kind::object: return "object";
    }
    return "null";
  }
};

/// One line's object, flat: reused from line to line, so reading a record
/// allocates nothing but the strings the record keeps. A line holds a few
/// dozen fields at most, so a linear search beats a map.
struct Object {
  std::vector<std::pair<std::string_view, Value>> members;
  std::vector<Value> elements;  ///< every array's elements
  json fallback;                ///< a line the fast parser left to nlohmann::json

  void clear() {
    members.clear();
    elements.clear();
  }

  /// The field's value; the last one where a key repeats, as nlohmann::json keeps it.
  [[nodiscard]] const Value* find(std::string_view key) const noexcept {
    // Backwards: the last repeat wins. (std::views::reverse would do, but
    // clang's checks reject libstdc++ 12's ranges on this vector.)
    for (auto it = members.rbegin(); it != members.rend(); ++it) {  // NOLINT(modernize-loop-convert)
      if (it->first == key) return &it->second;
    }
    return nullptr;
  }
};

/// Parses the common shape of a trace line (flat objects of ASCII strings
/// without escapes, integers, booleans, nulls and arrays of those) without
/// building a DOM. Anything else (escapes, non-ASCII, fractions, nested
/// objects, invalid JSON) returns false and goes to nlohmann::json, so what
/// a line means never depends on which parser read it.
class FastParser {
 public:
  explicit FastParser(std::string_view line) : p_(line.data()), end_(line.data() + line.size()) {}

  bool object(Object& out) {
    skip_space();
    if (!take('{')) return false;
    skip_space();
    if (!take('}')) {
      for (;;) {
        std::string_view key;
        if (!string(key)) return false;
        skip_space();
        if (!take(':')) return false;
        skip_space();
        Value v;
        if (!value(v, out, /*in_array=*/false)) return false;
        out.members.emplace_back(key, v);
        skip_space();
        if (take('}')) break;
        if (!take(',')) return false;
        skip_space();
      }
    }
    skip_space();
    return p_ == end_;
  }

 private:
  void skip_space() noexcept {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  bool take(char c) noexcept {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  bool literal(std::string_view word) noexcept {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  }

  bool string(std::string_view& out) noexcept {
    if (!take('"')) return false;
    const char* start = p_;
    for (; p_ != end_; ++p_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x7f) return false;  // escapes, control bytes, UTF-8
    }
    return false;
  }

  bool number(Value& v) noexcept {
    const bool negative = take('-');
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    if (*p_ == '0' && end_ - p_ > 1 && p_[1] >= '0' && p_[1] <= '9') return false;  // a leading zero
    std::uint64_t magnitude = 0;
    for (; p_ != end_ && *p_ >= '0' && *p_ <= '9'; ++p_) {
      const auto digit = static_cast<std::uint64_t>(*p_ - '0');
      if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;  // a float
      magnitude = magnitude * 10 + digit;
    }
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;  // a float
    if (!negative) {
      v.kind = Value::Kind::unsigned_number;
      v.unsigned_number = magnitude;
      return true;
    }
    constexpr auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
    if (magnitude > limit) return false;  // a float
    v.kind = Value::Kind::signed_number;
    v.signed_number =
        magnitude == limit ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(magnitude);
    return true;
  }

  bool value(Value& v, Object& out, bool in_array) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '"': v.kind = Value::Kind::string; return string(v.text);
      case 't':
        v.kind = Value::Kind::boolean;
        v.boolean = true;
        return literal("true");
      case 'f':
        v.kind = Value::Kind::boolean;
        v.boolean = false;
        return literal("false");
      case 'n': v.kind = Value::Kind::null; return literal("null");
      case '[': {
        if (in_array) return false;  // nested arrays: the fallback's
        ++p_;
        v.kind = Value::Kind::array;
        v.first = out.elements.size();
        skip_space();
        if (take(']')) return true;
        for (;;) {
          Value element;
          if (!value(element, out, /*in_array=*/true)) return false;
          out.elements.push_back(element);
          skip_space();
          if (take(']')) break;
          if (!take(',')) return false;
          skip_space();
        }
        v.count = out.elements.size() - v.first;
        return true;
      }
      default: return number(v);
    }
  }

  const char* p_;
  const char* end_;
};

/// A value nlohmann::json parsed, in Object's form (its strings stay in `j`).
Value from_json(const json& j, Object& out) {
  Value v;
  switch (j.type()) {
    case json::value_t::boolean:
      v.kind = Value::Kind::boolean;
      v.boolean = j.get<bool>();
      break;
    case json::value_t::number_unsigned:
      v.kind = Value::Kind::unsigned_number;
      v.unsigned_number = j.get<std::uint64_t>();
      break;
    case json::value_t::number_integer:
      v.kind = Value::Kind::signed_number;
      v.signed_number = j.get<std::int64_t>();
      break;
    case json::value_t::number_float:
      v.kind = Value::Kind::float_number;
      v.float_number = j.get<double>();
      break;
    case json::value_t::string:
      v.kind = Value::Kind::string;
      v.text = j.get_ref<const std::string&>();
      break;
    case json::value_t::array: {
      v.kind = Value::Kind::array;
      v.first = out.elements.size();
      v.count = j.size();
      out.elements.resize(v.first + v.count);
      for (std::size_t k = 0; k < v.count; ++k) {
        const Value element = from_json(j[k], out);  // may append a nested array's elements
        out.elements[v.first + k] = element;
      }
      break;
    }
    case json::value_t::object: v.kind = Value::Kind::object; break;
    default: break;  // null (binary and discarded never come from parse)
  }
  return v;
}

/// Reads one line into `out`; false when it is not a JSON object.
bool parse_object(std::string_view line, Object& out) {
  out.clear();
  if (FastParser(line).object(out)) return true;
  out.clear();
  out.fallback = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (out.fallback.is_discarded() || !out.fallback.is_object()) return false;
  for (const auto& [key, item] : out.fallback.items()) {
    const Value v = from_json(item, out);
    out.members.emplace_back(key, v);
  }
  return true;
}

/// One line's object with typed, named access; errors name the line and field.
class Record {
 public:
  Record(const Object& object, std::string_view source, std::size_t line)
      : object_(object), source_(source), line_(line) {}

  [[nodiscard]] bool has(const char* field) const { return object_.find(field) != nullptr; }

  /// The field as a T, with nlohmann::json's conversions (a number converts
  /// to any number type, a boolean to any but json's own number types); a null or
  /// missing field is the fallback.
  template <typename T>
  T get(const char* field, T fallback = T{}) const {
    const Value* v = object_.find(field);
    if (v == nullptr || v->kind == Value::Kind::null) return fallback;
    std::optional<T> converted;
    if constexpr (std::is_same_v<T, std::vector<std::uint64_t>>) {
      if (v->kind == Value::Kind::array) {
        T items;
        items.reserve(v->count);
        for (std::size_t k = 0; k < v->count; ++k) {
          const auto item = convert<std::uint64_t>(object_.elements[v->first + k]);
          if (!item) break;
          items.push_back(*item);
        }
        if (items.size() == v->count) converted = std::move(items);
      }
    } else {
      converted = convert<T>(*v);
    }
    if (!converted) {
      if constexpr (std::is_integral_v<T>) {
        if (v->kind == Value::Kind::float_number)
          fail(field, fmt::format("is out of range ({})", v->float_number));
      }
      fail(field, fmt::format("has the wrong type ({})", v->type_name()));
    }
    return std::move(*converted);
  }

  template <typename T>
  T require(const char* field) const {
    if (!has(field)) fail(field, "is missing");
    return get<T>(field);
  }

  std::optional<std::uint32_t> stream() const {
    const Value* v = object_.find("stream");
    if (v == nullptr || v->kind == Value::Kind::null) return std::nullopt;
    return get<std::uint32_t>("stream");
  }

  [[noreturn]] void fail(const char* field, std::string_view problem) const {
    throw invalid_input(fmt::format("{}:{}: {}: {}", source_, line_, field, problem));
  }

 private:
  template <typename T>
  static std::optional<T> convert(const Value& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (v.kind == Value::Kind::string) return std::string(v.text);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (v.kind == Value::Kind::boolean) return v.boolean;
    } else {
      static_assert(std::is_arithmetic_v<T>);
      switch (v.kind) {
        case Value::Kind::unsigned_number: return static_cast<T>(v.unsigned_number);
        case Value::Kind::signed_number: return static_cast<T>(v.signed_number);
        case Value::Kind::float_number:
          // A fraction converts to an integer as JSON readers do (truncated),
          // but only one the integer can hold: beyond, the cast is undefined.
          if constexpr (std::is_integral_v<T>) {
            const double x = v.float_number;
            if (!(x > static_cast<double>(std::numeric_limits<T>::min()) - 1.0 &&
                  x < static_cast<double>(std::numeric_limits<T>::max()) + 1.0))
              break;
          }
          return static_cast<T>(v.float_number);
        case Value::Kind::boolean:
          // nlohmann::json converts a boolean to a number, except to its own number types.
          if constexpr (!std::is_same_v<T, std::uint64_t> && !std::is_same_v<T, std::int64_t> &&
                        !std::is_same_v<T, double>)
            return static_cast<T>(v.boolean);
          break;
        default: break;
      }
    }
    return std::nullopt;
  }

  const Object& object_;
  std::string_view source_;
  std::size_t line_;
};

Call read_call(const Record& r) {
  Call c;
  c.corr = r.get<std::uint64_t>("corr");
  c.api = r.require<std::string>("api");
  c.driver = r.get<std::string>("layer") == "drv";
  c.tid = r.get<std::uint64_t>("tid");
  c.start = r.require<std::uint64_t>("start");
  c.end = r.require<std::uint64_t>("end");
  if (c.end < c.start) r.fail("end", "is before start");
  c.status = r.get<int>("status");
  c.caller = r.get<std::string>("caller");
  c.cls = parse_class(r.get<std::string>("cls", "other"));
  c.stream = r.stream();
  c.dst = r.get<std::uint64_t>("dst");
  c.src = r.get<std::uint64_t>("src");
  c.bytes = r.get<std::uint64_t>("bytes");
  c.copy_kind = r.get<std::string>("kind");
  c.async = r.get<bool>("async");
  c.kernel = r.get<std::string>("kernel");
  const auto grid = r.get<std::vector<std::uint64_t>>("grid");
  if (!grid.empty()) {
    c.blocks = 1;
    for (const std::uint64_t g : grid) c.blocks *= g;
  }
  c.ptrs = r.get<std::vector<std::uint64_t>>("ptrs");
  c.struct_ptrs = r.get<std::vector<std::uint64_t>>("sptrs");
  c.event = r.get<std::uint64_t>("event");
  c.ptr = r.get<std::uint64_t>("ptr");
  c.memory = r.get<std::string>("memory");
  c.to = r.get<std::string>("to");
  return c;
}

Migration read_migration(const Record& r) {
  Migration m;
  m.start = r.require<std::uint64_t>("start");
  m.end = r.require<std::uint64_t>("end");
  if (m.end < m.start) r.fail("end", "is before start");
  m.bytes = r.get<std::uint64_t>("bytes");
  m.address = r.get<std::uint64_t>("address");
  m.kind = r.get<std::string>("kind");
  m.cause = r.get<std::string>("cause", "unknown");
  m.count = std::max<std::uint64_t>(1, r.get<std::uint64_t>("count", 1));
  m.busy = std::min(r.get<std::uint64_t>("busy", m.end - m.start), m.count * (m.end - m.start));
  return m;
}

DeviceWork read_work(const Record& r, work_kind kind) {
  DeviceWork w;
  w.kind = kind;
  w.corr = r.get<std::uint64_t>("corr");
  w.start = r.require<std::uint64_t>("start");
  w.end = r.require<std::uint64_t>("end");
  if (w.end < w.start) r.fail("end", "is before start");
  w.stream = r.stream();
  w.bytes = r.get<std::uint64_t>("bytes");
  w.copy_kind = r.get<std::string>("kind");
  w.src_kind = r.get<std::string>("src");
  w.dst_kind = r.get<std::string>("dst");
  w.async = r.get<bool>("async");
  w.name = r.get<std::string>("name");
  w.sync_type = r.get<std::string>("type");
  w.node = r.get<std::uint64_t>("node");
  const auto grid = r.get<std::vector<std::uint64_t>>("grid");
  if (!grid.empty()) {
    w.blocks = 1;
    for (const std::uint64_t g : grid) w.blocks *= g;
  }
  return w;
}

/// The name of a CUgraphNodeType value (as cuda.h numbers them).
std::string graph_node_kind(std::uint64_t type) {
  static constexpr std::array<std::string_view, 14> names{
      "kernel",       "memcpy",       "memset",           "host",           "graph",     "empty",
      "wait_event",   "event_record", "semaphore_signal", "semaphore_wait", "mem_alloc", "mem_free",
      "batch_mem_op", "conditional"};
  return type < names.size() ? std::string(names[type]) : "unknown";
}

GraphRecord read_graph(const Record& r) {
  GraphRecord g;
  g.exec = r.get<std::uint64_t>("exec");
  g.graph = r.get<std::uint64_t>("graph");
  g.nodes = r.get<std::vector<std::uint64_t>>("nodes");
  const auto types = r.get<std::vector<std::uint64_t>>("types");
  g.parents = r.get<std::vector<std::uint64_t>>("parents");
  if (types.size() != g.nodes.size()) r.fail("types", "has not one entry per node");
  if (g.parents.size() != g.nodes.size()) r.fail("parents", "has not one entry per node");
  g.kinds.reserve(types.size());
  for (const std::uint64_t t : types) g.kinds.push_back(graph_node_kind(t));
  const auto edges = r.get<std::vector<std::uint64_t>>("edges");
  if (edges.size() % 2 != 0) r.fail("edges", "is not a list of (from, to) pairs");
  for (std::size_t i = 0; i < edges.size(); i += 2) g.edges.emplace_back(edges[i], edges[i + 1]);
  g.cut = r.get<bool>("cut");
  return g;
}

void read_record(const Record& r, const std::string& type, RawTrace& trace) {
  if (type == "call") {
    trace.calls.push_back(read_call(r));
  } else if (type == "memcpy") {
    trace.work.push_back(read_work(r, work_kind::memcpy));
  } else if (type == "memset") {
    trace.work.push_back(read_work(r, work_kind::memset));
  } else if (type == "kernel") {
    trace.work.push_back(read_work(r, work_kind::kernel));
  } else if (type == "sync") {
    trace.work.push_back(read_work(r, work_kind::sync));
  } else if (type == "migration") {
    trace.migrations.push_back(read_migration(r));
  } else if (type == "stream") {
    trace.streams.push_back(
        {r.require<std::uint32_t>("stream"), r.get<std::string>("kind", "blocking"), r.get<int>("priority")});
  } else if (type == "alias") {
    trace.aliases[r.require<std::uint64_t>("corr")] = r.require<std::uint64_t>("of");
  } else if (type == "graph_node") {
    GraphNodeRecord& n = trace.graph_nodes[r.require<std::uint64_t>("node")];
    const bool changed = n.params_changed;
    n = GraphNodeRecord{};
    n.corr = r.get<std::uint64_t>("corr");
    n.kind = r.get<std::string>("kind");
    n.kernel = r.get<std::string>("kernel");
    n.ptrs = r.get<std::vector<std::uint64_t>>("ptrs");
    n.struct_ptrs = r.get<std::vector<std::uint64_t>>("sptrs");
    n.dst = r.get<std::uint64_t>("dst");
    n.src = r.get<std::uint64_t>("src");
    n.bytes = r.get<std::uint64_t>("bytes");
    n.params_changed = changed;
  } else if (type == "graph_node_set") {
    trace.graph_nodes[r.require<std::uint64_t>("node")].params_changed = true;
  } else if (type == "graph_clone") {
    const auto node = r.require<std::uint64_t>("node");
    const auto of = r.require<std::uint64_t>("of");
    if (node != of) trace.node_clones[node] = of;
  } else if (type == "graph") {
    trace.graphs.push_back(read_graph(r));
  } else if (type == "accesses") {
    // A measured launch's bytes (`overlap audit --accesses measured`,
    // measured_run.hpp); with a `node`, a graph kernel node's.
    const auto corr = r.require<std::uint64_t>("corr");
    const auto node = r.get<std::uint64_t>("node");
    MeasuredAccesses& m = node != 0 ? trace.measured_nodes[{corr, node}] : trace.measured[corr];
    const auto pairs = [&](const char* key, auto& out) {
      const auto flat = r.get<std::vector<std::uint64_t>>(key);
      if (flat.size() % 2 != 0) r.fail(key, "is not a list of (address, bytes) pairs");
      for (std::size_t i = 0; i < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
    };
    pairs("reads", m.reads);
    pairs("writes", m.writes);
    m.exact = r.get<bool>("exact", true);
  } else if (type == "printf") {
    trace.printing_kernels.insert(r.require<std::string>("kernel"));
  } else if (type == "range") {
    trace.ranges.push_back({r.get<std::string>("name"), r.require<std::uint64_t>("start"),
                            r.require<std::uint64_t>("end"), r.get<std::uint64_t>("tid")});
  } else if (type == "device") {
    DeviceRecord device{r.get<int>("device"), r.get<std::string>("name"),
                        r.get<int>("sms"),    r.get<int>("copy_engines"),
                        std::nullopt,         r.get<std::string>("cc")};
    if (r.has("concurrent_kernels")) device.concurrent_kernels = r.get<bool>("concurrent_kernels");
    trace.devices.push_back(std::move(device));
  } else if (type == "env") {
    // Version 2: one record right after the header; a variable left out was unset.
    trace.env.recorded = true;
    const auto variable = [&](const char* name) -> std::optional<std::string> {
      if (!r.has(name)) return std::nullopt;
      return r.get<std::string>(name);
    };
    trace.env.max_connections = variable("CUDA_DEVICE_MAX_CONNECTIONS");
    trace.env.module_loading = variable("CUDA_MODULE_LOADING");
    trace.env.launch_blocking = variable("CUDA_LAUNCH_BLOCKING");
    trace.env.rank = variable("RANK");
    trace.env.local_rank = variable("LOCAL_RANK");
    trace.env.mpi_rank = variable("OMPI_COMM_WORLD_RANK");
    if (!trace.env.mpi_rank) trace.env.mpi_rank = variable("PMI_RANK");
  } else if (type == "header") {
    // Only as the first record (read_trace checks): a second one is two files joined.
    if (trace.version != 0) r.fail("t", "a second header (expected one trace file, not several joined)");
    trace.version = r.require<int>("version");
    if (trace.version < oldest_trace_version || trace.version > newest_trace_version) {
      r.fail("version", fmt::format("{} is not a trace format this overlap reads (versions {} to {})",
                                    trace.version, oldest_trace_version, newest_trace_version));
    }
    trace.pid = r.get<std::uint64_t>("pid");
    trace.exe = r.get<std::string>("exe");
  } else if (type == "error") {
    trace.errors.push_back(r.get<std::string>("message"));
  } else if (type == "footer") {
    trace.complete = true;
    trace.dropped = r.get<std::uint64_t>("dropped");
    trace.end_reason = r.get<std::string>("reason");
  } else {
    ++trace.unknown_records;
  }
}

}  // namespace

std::optional<std::uint32_t> TraceEnvironment::connections() const {
  if (!recorded) return std::nullopt;
  constexpr std::uint32_t unset = 8;  // CUDA's default
  if (!max_connections || max_connections->empty()) return unset;
  long value = 0;
  const char* begin = max_connections->data();
  const char* end = begin + max_connections->size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc::result_out_of_range) return DeviceModel::max_connections;
  if (ec != std::errc{} || value < 1) return unset;
  return static_cast<std::uint32_t>(std::min<long>(value, DeviceModel::max_connections));
}

bool TraceEnvironment::launches_blocking() const {
  if (!launch_blocking) return false;
  long value = 0;
  const auto [ptr, ec] =
      std::from_chars(launch_blocking->data(), launch_blocking->data() + launch_blocking->size(), value);
  return ec == std::errc{} && value != 0;
}

DeviceModel with_environment(DeviceModel model, const TraceEnvironment& env,
                             std::vector<std::string>* applied) {
  const auto say = [applied](std::string text) {
    if (applied) applied->push_back(std::move(text));
  };
  if (const auto connections = env.connections();
      connections && model.mapping == queue_mapping::per_stream && *connections != model.connections) {
    model.connections = *connections;
    say(fmt::format(
        "the run had {} connections (CUDA_DEVICE_MAX_CONNECTIONS{})", *connections,
        env.max_connections ? "=" + *env.max_connections : std::string(" unset: CUDA's default")));
  }
  if (env.launches_blocking())
    say("the run had CUDA_LAUNCH_BLOCKING set: every launch waited for the GPU, so nothing overlapped");
  return model;
}

std::string_view to_string(call_class cls) noexcept {
  for (const auto& [c, text] : class_names) {
    if (c == cls) return text;
  }
  return "other";
}

/// The reader's line parser, kept out of the header.
struct TraceReader::Parser {
  Object object;
};

TraceReader::TraceReader(std::string source)
    : source_(std::move(source)), parser_(std::make_unique<Parser>()) {}

TraceReader::~TraceReader() = default;
TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;

void TraceReader::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto* newline = static_cast<const char*>(std::memchr(bytes.data(), '\n', bytes.size()));
    if (newline == nullptr) {
      // The start of a line whose end is still to come (or never comes: a cut-short last line).
      if (partial_.size() + bytes.size() > limits::max_trace_line_bytes) too_long();
      partial_.append(bytes);
      return;
    }
    const auto length = static_cast<std::size_t>(newline - bytes.data());
    if (partial_.empty()) {
      if (length > limits::max_trace_line_bytes) too_long();
      take_line(bytes.substr(0, length));
    } else {
      if (partial_.size() + length > limits::max_trace_line_bytes) too_long();
      partial_.append(bytes.substr(0, length));
      take_line(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(length + 1);
  }
}

void TraceReader::take_line(std::string_view line) {
  ++lines_;
  limits::require_at_most(lines_, limits::max_trace_records, source_, "records",
                          "a trace of more calls is beyond what the audit analyses");
  // A line that did not parse is fine only as the last one: a process
  // killed mid-write leaves its last line cut short.
  if (bad_line_ != 0)
    throw invalid_input(
        fmt::format("{}:{}: not a JSON object (expected one record per line)", source_, bad_line_));
  if (line.empty()) return;
  Object& object = parser_->object;
  if (!parse_object(line, object)) {
    bad_line_ = lines_;
    return;
  }
  const Record record(object, source_, lines_);
  if (trace_.version == 0 && record.get<std::string>("t") != "header")
    record.fail("t", "the first record is not a header (expected a trace file written by libovl_inject)");
  read_record(record, record.require<std::string>("t"), trace_);
}

void TraceReader::too_long() const {
  throw invalid_input(fmt::format("{}:{}: a record longer than {} bytes (expected one record per line)",
                                  source_, lines_ + 1, limits::max_trace_line_bytes));
}

RawTrace TraceReader::finish() && {
  if (!partial_.empty()) {
    take_line(partial_);
    partial_.clear();
  }
  if (lines_ == 0) throw invalid_input(fmt::format("{}: empty trace file", source_));
  // A one-line file that is not JSON passes as a line cut short.
  if (trace_.version == 0)
    throw invalid_input(
        fmt::format("{}:1: not a trace file (no header record; expected JSON lines written "
                    "by libovl_inject)",
                    source_));
  return std::move(trace_);
}

RawTrace read_trace(std::istream& in, std::string_view source) {
  TraceReader reader{std::string(source)};
  // Large blocks: no call per character, and a file with no newline (or
  // /dev/zero) is refused at the line limit before it fills the memory.
  std::string block(std::size_t{1} << 20, '\0');
  std::streambuf& buffer = *in.rdbuf();
  for (;;) {
    const std::streamsize got = buffer.sgetn(block.data(), static_cast<std::streamsize>(block.size()));
    if (got <= 0) break;
    reader.feed(std::string_view(block.data(), static_cast<std::size_t>(got)));
  }
  return std::move(reader).finish();
}

RawTrace load_trace(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw invalid_input(fmt::format("cannot read trace file '{}'", path.string()));
  // The first 64 KiB tell a Chrome trace from JSON Lines (Kineto writes its
  // devices before traceEvents).
  std::string head(std::size_t{64} << 10, '\0');
  head.resize(
      static_cast<std::size_t>(file.rdbuf()->sgetn(head.data(), static_cast<std::streamsize>(head.size()))));
  if (looks_like_chrome_trace(head)) {
    file.close();
    const std::string text = limits::read_file(path.string(), limits::max_chrome_trace_bytes, "Chrome trace",
                                               "profile fewer steps with torch.profiler's schedule");
    return read_pytorch_trace(text, path.filename().string());
  }
  TraceReader reader{path.filename().string()};
  if (!head.empty()) reader.feed(head);
  std::string block(std::size_t{1} << 20, '\0');
  for (;;) {
    const std::streamsize got = file.rdbuf()->sgetn(block.data(), static_cast<std::streamsize>(block.size()));
    if (got <= 0) break;
    reader.feed(std::string_view(block.data(), static_cast<std::size_t>(got)));
  }
  return std::move(reader).finish();
}

}  // namespace overlap::trace
