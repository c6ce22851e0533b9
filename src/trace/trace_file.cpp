// Reading trace files (docs/trace-format.md) line by line into a RawTrace.
#include "overlap/trace/trace_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap::trace {

namespace {

using nlohmann::json;

constexpr std::array<std::pair<call_class, std::string_view>, 16> class_names{{
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
    {call_class::other, "other"},
}};

call_class parse_class(std::string_view name) {
  for (const auto& [cls, text] : class_names) {
    if (text == name) return cls;
  }
  return call_class::other;  // a newer library's class: keep the call, ignore its fields
}

/// One line's object with typed, named access; errors name the line and field.
class Record {
 public:
  Record(const json& object, std::string_view source, std::size_t line)
      : object_(object), source_(source), line_(line) {}

  [[nodiscard]] bool has(const char* field) const { return object_.contains(field); }

  template <typename T>
  T get(const char* field, T fallback = T{}) const {
    const auto it = object_.find(field);
    if (it == object_.end() || it->is_null()) return fallback;
    try {
      return it->get<T>();
    } catch (const json::exception&) {
      fail(field, fmt::format("has the wrong type ({})", it->type_name()));
    }
  }

  template <typename T>
  T require(const char* field) const {
    if (!has(field)) fail(field, "is missing");
    return get<T>(field);
  }

  std::optional<std::uint32_t> stream() const {
    if (!has("stream") || object_.at("stream").is_null()) return std::nullopt;
    return get<std::uint32_t>("stream");
  }

  [[noreturn]] void fail(const char* field, std::string_view problem) const {
    throw invalid_input(fmt::format("{}:{}: {}: {}", source_, line_, field, problem));
  }

 private:
  const json& object_;
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
  c.event = r.get<std::uint64_t>("event");
  c.ptr = r.get<std::uint64_t>("ptr");
  c.memory = r.get<std::string>("memory");
  return c;
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
  return w;
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
  } else if (type == "stream") {
    trace.streams.push_back(
        {r.require<std::uint32_t>("stream"), r.get<std::string>("kind", "blocking"), r.get<int>("priority")});
  } else if (type == "alias") {
    trace.aliases[r.require<std::uint64_t>("corr")] = r.require<std::uint64_t>("of");
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

namespace {

// std::getline with a bound: a file with no newline (or /dev/zero) must not
// fill the memory before the record is found to be bad.
bool next_line(std::streambuf& in, std::string& line, std::string_view source, std::size_t number) {
  line.clear();
  for (int c = in.sbumpc(); c != std::char_traits<char>::eof(); c = in.sbumpc()) {
    if (c == '\n') return true;
    if (line.size() == limits::max_trace_line_bytes) {
      throw invalid_input(fmt::format("{}:{}: a record longer than {} bytes (expected one record per line)",
                                      source, number, limits::max_trace_line_bytes));
    }
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

}  // namespace

RawTrace read_trace(std::istream& in, std::string_view source) {
  RawTrace trace;
  std::string line;
  std::size_t number = 0;
  std::streambuf& buffer = *in.rdbuf();
  while (next_line(buffer, line, source, number + 1)) {
    ++number;
    limits::require_at_most(number, limits::max_trace_records, source, "records",
                            "a trace of more calls is beyond what the audit analyses");
    if (line.empty()) continue;
    const bool last = buffer.sgetc() == std::char_traits<char>::eof();
    json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded() || !object.is_object()) {
      // A process killed mid-write leaves its last line cut short.
      if (last) break;
      throw invalid_input(
          fmt::format("{}:{}: not a JSON object (expected one record per line)", source, number));
    }
    const Record record(object, source, number);
    if (trace.version == 0 && record.get<std::string>("t") != "header")
      record.fail("t", "the first record is not a header (expected a trace file written by libovl_inject)");
    read_record(record, record.require<std::string>("t"), trace);
  }
  if (number == 0) throw invalid_input(fmt::format("{}: empty trace file", source));
  // A one-line file that is not JSON passes the loop as a line cut short.
  if (trace.version == 0)
    throw invalid_input(
        fmt::format("{}:1: not a trace file (no header record; expected JSON lines written "
                    "by libovl_inject)",
                    source));
  return trace;
}

RawTrace load_trace(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw invalid_input(fmt::format("cannot read trace file '{}'", path.string()));
  return read_trace(file, path.filename().string());
}

}  // namespace overlap::trace
