// PyTorch profiler traces (Kineto's Chrome-trace JSON) as a RawTrace, so that
// `overlap trace --from` and `overlap audit --from` read what PyTorch users
// already record, into the same Program and Timeline as our own traces.
//
// The format records every runtime and driver call with its host times and
// CUPTI correlation id, and every kernel, memcpy, memset and (when the
// profile turned them on) synchronization with its stream and the same id;
// what it lacks is said in RawTrace::gaps rather than guessed:
// - no pointer arguments, so no accesses (races are not checked);
// - cudaEventRecord carries neither its event nor its stream, and CUPTI's
//   wait records name the event waited on but (in CUDA 13.0) not the record:
//   records are host time, and capture orders a wait conservatively;
// - no stream kinds (which stream is the legacy default stream);
// - no return codes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace {

namespace {

using json = nlohmann::json;

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return text.starts_with(p); });
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The family of a runtime or driver call, by its name: what libovl_inject
// writes as `class` from the call's parameters.
call_class class_of(std::string_view api) {
  if (api == "cudaDeviceSynchronize" || api == "cudaThreadSynchronize" || api == "cuCtxSynchronize")
    return call_class::device_sync;
  if (starts_with_any(api, {"cudaMemcpy", "cuMemcpy"})) return call_class::copy;
  if (starts_with_any(api, {"cudaMemset", "cuMemset"})) return call_class::memset;
  if (starts_with_any(api, {"cudaLaunch", "cuLaunch"})) return call_class::launch;
  if (starts_with_any(api, {"cudaStreamWaitEvent", "cuStreamWaitEvent"})) return call_class::wait;
  if (starts_with_any(api, {"cudaStreamSynchronize", "cuStreamSynchronize"})) return call_class::stream_sync;
  if (starts_with_any(api, {"cudaEventSynchronize", "cuEventSynchronize"})) return call_class::event_sync;
  if (starts_with_any(api, {"cudaMalloc", "cudaHostAlloc", "cuMemAlloc", "cuMemHostAlloc"}))
    return call_class::alloc;
  if (starts_with_any(api, {"cudaFree", "cuMemFree"})) return call_class::free;
  if (starts_with_any(api, {"cudaHostRegister", "cuMemHostRegister"})) return call_class::host_register;
  if (starts_with_any(api, {"cudaHostUnregister", "cuMemHostUnregister"})) return call_class::host_unregister;
  if (starts_with_any(api, {"cudaStreamCreate", "cuStreamCreate"})) return call_class::stream_create;
  if (starts_with_any(api, {"cudaStreamDestroy", "cuStreamDestroy"})) return call_class::stream_destroy;
  if (starts_with_any(api, {"cudaEventCreate", "cuEventCreate"})) return call_class::event_create;
  // cudaEventRecord names no event or stream here: host time (see above).
  return call_class::other;
}

// What an allocation call allocates, as libovl_inject names it.
std::string memory_of(std::string_view api) {
  if (contains(api, "Async")) return "async";
  if (contains(api, "Managed")) return "managed";
  if (contains(api, "Host")) return "pinned";
  return "device";
}

// "Memcpy HtoD (Pinned -> Device)" -> {"h2d", "pinned", "device"}.
struct CopyName {
  std::string kind;
  std::string src;
  std::string dst;
};

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

CopyName parse_copy_name(std::string_view name) {
  CopyName out;
  static constexpr std::pair<std::string_view, std::string_view> directions[] = {
      {"HtoD", "h2d"}, {"DtoH", "d2h"}, {"DtoD", "d2d"}, {"HtoH", "h2h"}, {"PtoP", "d2d"}};
  for (const auto& [tag, kind] : directions)
    if (contains(name, tag)) out.kind = kind;
  if (const auto open = name.find('('); open != std::string_view::npos) {
    const auto arrow = name.find("->", open);
    const auto close = name.find(')', open);
    if (arrow != std::string_view::npos && close != std::string_view::npos && arrow < close) {
      auto trim = [](std::string_view t) {
        while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
        while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
        return t;
      };
      out.src = lowercase(trim(name.substr(open + 1, arrow - open - 1)));
      out.dst = lowercase(trim(name.substr(arrow + 2, close - arrow - 2)));
    }
  }
  return out;
}

// "Stream Sync" -> "stream", as libovl_inject writes sync records.
std::string sync_type_of(std::string_view name) {
  if (name == "Stream Sync") return "stream";
  if (name == "Event Sync") return "event";
  if (name == "Context Sync") return "context";
  if (name == "Stream Wait Event") return "stream_wait_event";
  return lowercase(name);
}

/// One event of traceEvents, with typed access; errors name the event and field.
class Event {
 public:
  Event(const json& e, std::string_view source, std::size_t index) : e_(e), source_(source), index_(index) {}

  [[nodiscard]] const json* find(const char* field) const {
    const auto it = e_.find(field);
    return it == e_.end() || it->is_null() ? nullptr : &*it;
  }
  [[nodiscard]] const json* arg(const char* field) const {
    const json* args = find("args");
    if (args == nullptr || !args->is_object()) return nullptr;
    const auto it = args->find(field);
    return it == args->end() || it->is_null() ? nullptr : &*it;
  }

  [[nodiscard]] std::string text(const char* field) const {
    const json* v = find(field);
    if (v == nullptr) return {};
    if (!v->is_string()) fail(field, fmt::format("has the wrong type ({})", v->type_name()));
    return v->get<std::string>();
  }

  // A time in microseconds as nanoseconds from the trace's clock.
  [[nodiscard]] std::uint64_t ns(const char* field) const {
    const json* v = find(field);
    if (v == nullptr) fail(field, "is missing");
    if (!v->is_number()) fail(field, fmt::format("has the wrong type ({})", v->type_name()));
    const double us = v->get<double>();
    // 1e12 us is 11 days: no profile is longer, and ns stay far from overflow.
    if (!(us >= 0.0 && us <= 1e15)) fail(field, fmt::format("is out of range ({})", us));
    return static_cast<std::uint64_t>(std::llround(us * 1000.0));
  }

  // An integer argument; empty when absent or negative (Kineto's "none").
  [[nodiscard]] std::optional<std::int64_t> int_arg(const char* field) const {
    const json* v = arg(field);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) fail_arg(field, fmt::format("has the wrong type ({})", v->type_name()));
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (!(std::abs(d) < 9e18) || d != std::floor(d))
        fail_arg(field, fmt::format("is out of range ({})", d));
      return d < 0 ? std::nullopt : std::optional<std::int64_t>(static_cast<std::int64_t>(d));
    }
    if (v->is_number_unsigned()) {
      const auto u = v->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail_arg(field, fmt::format("is out of range ({})", u));
      return static_cast<std::int64_t>(u);
    }
    const auto i = v->get<std::int64_t>();
    return i < 0 ? std::nullopt : std::optional<std::int64_t>(i);
  }

  // A host thread or process id: a number (Kineto also writes names such as
  // "Spans" for its own rows, which hold no CUDA work).
  [[nodiscard]] std::optional<std::uint64_t> id(const char* field) const {
    const json* v = find(field);
    if (v == nullptr || !v->is_number_integer()) return std::nullopt;
    if (v->is_number_unsigned()) return v->get<std::uint64_t>();
    return static_cast<std::uint64_t>(v->get<std::int64_t>());
  }

  [[noreturn]] void fail(const char* field, std::string_view problem) const {
    throw invalid_input(fmt::format("{}: traceEvents[{}].{}: {}", source_, index_, field, problem));
  }
  [[noreturn]] void fail_arg(const char* field, std::string_view problem) const {
    throw invalid_input(fmt::format("{}: traceEvents[{}].args.{}: {}", source_, index_, field, problem));
  }

 private:
  const json& e_;
  std::string_view source_;
  std::size_t index_;
};

std::optional<std::uint32_t> stream_arg(const Event& e) {
  const auto s = e.int_arg("stream");
  if (!s) return std::nullopt;
  if (*s > std::numeric_limits<std::uint32_t>::max())
    e.fail_arg("stream", fmt::format("is out of range ({})", *s));
  return static_cast<std::uint32_t>(*s);
}

std::uint64_t corr_arg(const Event& e) {
  const auto c = e.int_arg("correlation");
  if (!c) e.fail_arg("correlation", "is missing");
  return static_cast<std::uint64_t>(*c);
}

void read_devices(const json& root, RawTrace& trace, std::string_view source) {
  const auto it = root.find("deviceProperties");
  if (it == root.end() || !it->is_array()) return;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& d = (*it)[i];
    if (!d.is_object()) continue;
    DeviceRecord r;
    auto number = [&](const char* field) -> int {
      const auto f = d.find(field);
      if (f == d.end() || !f->is_number_integer()) return 0;
      const auto v = f->get<std::int64_t>();
      if (v < 0 || v > 1'000'000)
        throw invalid_input(
            fmt::format("{}: deviceProperties[{}].{}: is out of range ({})", source, i, field, v));
      return static_cast<int>(v);
    };
    r.index = number("id");
    if (const auto n = d.find("name"); n != d.end() && n->is_string()) r.name = n->get<std::string>();
    r.sms = number("numSms");
    if (d.contains("computeMajor"))
      r.compute_capability = fmt::format("{}.{}", number("computeMajor"), number("computeMinor"));
    trace.devices.push_back(std::move(r));
  }
}

// torch.distributed's rank of the process that wrote the trace (Kineto's
// `distributedInfo`, present when a process group existed): names the
// process among a job's traces as RANK does in ours.
void read_rank(const json& root, RawTrace& trace, std::string_view source) {
  const auto info = root.find("distributedInfo");
  if (info == root.end() || !info->is_object()) return;
  const auto rank = info->find("rank");
  if (rank == info->end()) return;
  if (!rank->is_number_integer() || rank->get<std::int64_t>() < 0)
    throw invalid_input(fmt::format(
        "{}: distributedInfo.rank: is not a rank (expected an integer >= 0, got {})", source, rank->dump()));
  trace.env.rank = std::to_string(rank->get<std::int64_t>());
}

}  // namespace

bool looks_like_chrome_trace(std::string_view head) noexcept {
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  if (head[first] == '[') return true;
  if (head[first] != '{') return false;
  // Our traces start with {"t":"header",...}; Kineto's with schemaVersion,
  // deviceProperties or traceEvents.
  return contains(head, "\"traceEvents\"") || contains(head, "\"schemaVersion\"") ||
         contains(head, "\"deviceProperties\"");
}

// NOLINTNEXTLINE(readability-function-size): one pass over the events, a case per category
RawTrace read_pytorch_trace(std::string_view text, std::string_view source) {
  if (text.size() > limits::max_chrome_trace_bytes)
    throw invalid_input(fmt::format("{}: larger than the {} bytes a Chrome trace may be ({})", source,
                                    limits::max_chrome_trace_bytes,
                                    "profile fewer steps with torch.profiler's schedule"));
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    throw invalid_input(
        fmt::format("{}: not valid JSON (expected a Chrome trace from torch.profiler)", source));
  const json* events = nullptr;
  if (root.is_array()) {
    events = &root;
  } else if (root.is_object()) {
    const auto it = root.find("traceEvents");
    if (it == root.end()) throw invalid_input(fmt::format("{}: traceEvents: is missing", source));
    if (!it->is_array())
      throw invalid_input(fmt::format("{}: traceEvents: has the wrong type ({})", source, it->type_name()));
    events = &*it;
  } else {
    throw invalid_input(fmt::format("{}: not a Chrome trace (a JSON {}, expected an object with traceEvents)",
                                    source, root.type_name()));
  }
  limits::require_at_most(events->size(), limits::max_trace_records, fmt::format("{}: traceEvents", source),
                          "events", "a few million calls, several times the ops a program may hold");

  RawTrace trace;
  trace.version = newest_trace_version;
  trace.format = "pytorch-profiler";
  trace.gaps = {.pointers = true, .event_records = true, .stream_kinds = true, .call_status = true};
  trace.complete = true;
  trace.end_reason = "exit";
  if (root.is_object()) {
    read_devices(root, trace, source);
    read_rank(root, trace, source);
  }

  std::map<std::uint64_t, std::size_t> call_of;  // correlation -> index into trace.calls
  std::vector<std::size_t> event_of_work;        // per trace.work: its index in traceEvents
  std::set<std::uint32_t> streams;
  std::optional<std::uint64_t> pid;
  std::string process;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& raw = (*events)[i];
    if (!raw.is_object())
      throw invalid_input(fmt::format("{}: traceEvents[{}]: is not an object", source, i));
    const Event e(raw, source, i);
    const std::string ph = e.text("ph");
    const std::string cat = e.text("cat");
    if (ph == "M") {
      if (e.text("name") == "process_name" && process.empty())
        if (const json* n = e.arg("name"); n != nullptr && n->is_string()) process = n->get<std::string>();
      continue;
    }
    if (ph != "X") continue;  // flows, instants and counters add nothing the X events lack
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      Call c;
      c.api = e.text("name");
      c.driver = cat == "cuda_driver";
      c.corr = corr_arg(e);
      c.tid = e.id("tid").value_or(0);
      c.start = e.ns("ts");
      c.end = c.start + e.ns("dur");
      c.cls = class_of(c.api);
      c.async = contains(c.api, "Async");
      if (c.cls == call_class::alloc || c.cls == call_class::free) c.memory = memory_of(c.api);
      if (!pid) pid = e.id("pid");
      call_of[c.corr] = trace.calls.size();
      trace.calls.push_back(std::move(c));
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync") {
      DeviceWork w;
      w.corr = corr_arg(e);
      w.start = e.ns("ts");
      w.end = w.start + e.ns("dur");
      w.stream = stream_arg(e);
      const std::string name = e.text("name");
      if (cat == "kernel") {
        w.kind = work_kind::kernel;
        w.name = name;
      } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
        w.kind = cat == "gpu_memcpy" ? work_kind::memcpy : work_kind::memset;
        w.bytes = static_cast<std::uint64_t>(e.int_arg("bytes").value_or(0));
        if (w.bytes > limits::max_bytes) e.fail_arg("bytes", fmt::format("is out of range ({})", w.bytes));
        if (w.kind == work_kind::memcpy) {
          CopyName copy = parse_copy_name(name);
          w.copy_kind = std::move(copy.kind);
          w.src_kind = std::move(copy.src);
          w.dst_kind = std::move(copy.dst);
        }
      } else {
        w.kind = work_kind::sync;
        w.sync_type = sync_type_of(name);
      }
      trace.work.push_back(std::move(w));
      event_of_work.push_back(i);
    } else if (cat == "user_annotation" || (cat == "cpu_op" && e.text("name").starts_with("ProfilerStep#"))) {
      // record_function ranges; each ProfilerStep#N is one step of a range
      // that repeats, as a pushed NVTX range would.
      std::string name = e.text("name");
      if (name.starts_with("ProfilerStep#")) name = "ProfilerStep";
      const std::uint64_t start = e.ns("ts");
      trace.ranges.push_back({std::move(name), start, start + e.ns("dur"), e.id("tid").value_or(0)});
    }
  }
  // Each call takes what its device records say of it: its stream, bytes,
  // copy kind, kernel and grid, and for syncs and waits the event waited
  // on. The app's streams are those its own calls' work ran on: a graph
  // launch's branches run on streams of the driver's, which capture tells
  // apart by their being named nowhere else (capture_graphs.hpp).
  for (std::size_t k = 0; k < trace.work.size(); ++k) {
    DeviceWork& w = trace.work[k];
    const auto it = call_of.find(w.corr);
    if (it == call_of.end()) continue;
    Call& c = trace.calls[it->second];
    w.async = c.async;
    if (w.stream && !c.stream) c.stream = w.stream;
    const Event e((*events)[event_of_work[k]], source, event_of_work[k]);
    switch (w.kind) {
      case work_kind::sync:
        if (const auto event = e.int_arg("wait_on_cuda_event_id"))
          c.event = static_cast<std::uint64_t>(*event);
        continue;  // a sync record names no stream of the app's work
      case work_kind::kernel:
        if (c.kernel.empty()) c.kernel = w.name;
        if (const json* grid = e.arg("grid"); grid != nullptr && grid->is_array() && c.blocks == 0) {
          std::uint64_t blocks = 1;
          for (const json& g : *grid) {
            if (!g.is_number_integer() || g.get<std::int64_t>() < 0 || g.get<std::int64_t>() > (1LL << 31))
              e.fail_arg("grid", "is not a list of block counts");
            blocks *= g.get<std::uint64_t>();
          }
          c.blocks = blocks;
        }
        break;
      case work_kind::memcpy:
      case work_kind::memset:
        c.bytes += w.bytes;
        if (w.kind == work_kind::memcpy && c.copy_kind.empty()) c.copy_kind = w.copy_kind;
        break;
    }
    const bool graph = c.api == "cudaGraphLaunch" || c.api == "cuGraphLaunch";
    if (w.stream && !graph) streams.insert(*w.stream);
  }
  for (const std::uint32_t s : streams) trace.streams.push_back({s, "blocking", 0});
  trace.pid = pid.value_or(0);
  trace.exe = process.empty() ? std::string("(PyTorch profiler trace)") : process;
  // Calls in the order they returned, as libovl_inject writes them.
  std::stable_sort(trace.calls.begin(), trace.calls.end(),
                   [](const Call& a, const Call& b) { return a.end < b.end; });
  std::stable_sort(trace.ranges.begin(), trace.ranges.end(),
                   [](const Range& a, const Range& b) { return a.end < b.end; });
  return trace;
}

}  // namespace overlap::trace
