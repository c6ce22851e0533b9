// Spec files -> Program. The YAML tree is walked once; every value is read
// through a Field, which knows the file, line and field path to blame, so
// every error is one line a user can act on without a stack trace.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "overlap/core/byte_size.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/io/spec.hpp"

namespace overlap::io {

namespace {

using field_list = std::vector<std::string_view>;

constexpr std::string_view kTimeExpected = "a finite number >= 0";
constexpr std::string_view kBytesExpected = kByteSizeExpected;
constexpr std::string_view kShareExpected = "a number with 0 < share <= 1";

std::string join(const field_list& names) {
  std::string out;
  for (const std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

/// User text quoted for a message: errors are one line, so a multi-line
/// or long scalar is escaped and cut.
std::string shown(std::string_view text) {
  constexpr std::size_t kLongest = 40;
  std::string out = "'";
  for (const char c : text.substr(0, kLongest)) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out + (text.size() > kLongest ? "...'" : "'");
}

/// How a node looks, for "X is not a Y" messages.
std::string describe(const YAML::Node& node) {
  if (node.IsScalar()) return shown(node.Scalar());
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "an empty value";
}

/// A node together with what to blame when it is wrong: the source, the
/// field path ("ops[3].time") and the line. Map members carry the line of
/// their key, because an empty value's own mark points at the next token.
class Field {
 public:
  Field(const std::string& source, const YAML::Node& node, std::string path, int line)
      : source_(&source), node_(node), path_(std::move(path)), line_(line) {}

  [[nodiscard]] const YAML::Node& node() const noexcept { return node_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int line() const noexcept { return line_; }

  [[noreturn]] void fail(std::string_view problem, std::string_view expected) const {
    fail_raw(fmt::format("{} (expected {})", problem, expected));
  }
  /// For messages that already say what was expected (Program's own checks).
  [[noreturn]] void fail_raw(std::string_view message) const {
    throw invalid_input(
        fmt::format("{}:{}: {}: {}", *source_, line_, path_.empty() ? "top level" : path_, message));
  }
  /// A required member is absent: blame its would-be path on this map's line.
  [[noreturn]] void fail_missing(std::string_view key, std::string_view expected) const {
    Field(*source_, YAML::Node(), member_path(key), line_).fail("required", expected);
  }

  /// Member `key` of a map, or nothing when absent (an empty value is present).
  [[nodiscard]] std::optional<Field> get(std::string_view key) const {
    for (const auto& member : node_) {
      if (member.first.IsScalar() && member.first.Scalar() == key) {
        return Field(*source_, member.second, member_path(key), line_of(member.first));
      }
    }
    return std::nullopt;
  }

  [[nodiscard]] Field require(std::string_view key, std::string_view expected) const {
    std::optional<Field> member = get(key);
    if (!member) fail_missing(key, expected);
    return *member;
  }

  /// Elements of a list (the caller has checked that it is one).
  [[nodiscard]] std::vector<Field> elements() const {
    std::vector<Field> out;
    std::size_t index = 0;
    for (const auto& element : node_) {
      out.emplace_back(*source_, element, fmt::format("{}[{}]", path_, index++), line_of(element));
    }
    return out;
  }

  /// Members of a map as (key, value), keys being scalars.
  [[nodiscard]] std::vector<std::pair<Field, Field>> members() const {
    std::vector<std::pair<Field, Field>> out;
    for (const auto& member : node_) {
      const int key_line = line_of(member.first);
      const std::string key = member.first.IsScalar() ? member.first.Scalar() : std::string();
      Field key_field(*source_, member.first, path_, key_line);
      if (!member.first.IsScalar())
        key_field.fail(describe(member.first) + " is not a field name", "a plain key");
      out.emplace_back(key_field, Field(*source_, member.second, member_path(key), key_line));
    }
    return out;
  }

 private:
  [[nodiscard]] std::string member_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }
  [[nodiscard]] int line_of(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? line_ : mark.line + 1;
  }

  const std::string* source_;
  YAML::Node node_;
  std::string path_;
  int line_;
};

// ---- scalar readers: each checks type and range and names the field ----

void require_map(const Field& field, std::string_view expected) {
  if (!field.node().IsMap()) field.fail(describe(field.node()) + " is not a map", expected);
}

/// Declarations may be empty (`events: []`); things to do may not.
void require_list(const Field& field, std::string_view expected, bool allow_empty = false) {
  if (!field.node().IsSequence()) field.fail(describe(field.node()) + " is not a list", expected);
  if (!allow_empty && field.node().size() == 0) field.fail("an empty list", expected);
}

/// Rejects keys outside `allowed` and keys given twice (yaml-cpp keeps both).
void check_fields(const Field& field, const field_list& allowed) {
  require_map(field, "a map with fields: " + join(allowed));
  std::set<std::string> seen;
  for (const auto& [key, value] : field.members()) {
    const std::string& name = key.node().Scalar();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      key.fail("unknown field " + shown(name), "one of: " + join(allowed));
    }
    if (!seen.insert(name).second)
      key.fail(fmt::format("field {} given twice", shown(name)), "each field once");
  }
}

std::string read_string(const Field& field) {
  if (!field.node().IsScalar()) field.fail(describe(field.node()) + " is not a string", "a non-empty string");
  if (field.node().Scalar().empty()) field.fail("an empty string", "a non-empty string");
  return field.node().Scalar();
}

double read_number(const Field& field, std::string_view expected) {
  double value = 0.0;
  if (!field.node().IsScalar() || !YAML::convert<double>::decode(field.node(), value)) {
    field.fail(describe(field.node()) + " is not a number", expected);
  }
  return value;
}

double read_time(const Field& field) {
  const double value = read_number(field, kTimeExpected);
  if (!std::isfinite(value) || value < 0.0) {
    field.fail(fmt::format("{} is out of range", field.node().Scalar()), kTimeExpected);
  }
  return value;
}

double read_share(const Field& field) {
  const double value = read_number(field, kShareExpected);
  if (!(value > 0.0 && value <= 1.0)) {
    field.fail(fmt::format("{} is out of range", field.node().Scalar()), kShareExpected);
  }
  return value;
}

std::int64_t read_integer(const Field& field, std::int64_t min, std::int64_t max) {
  const std::string expected = max == std::numeric_limits<std::int64_t>::max()
                                   ? fmt::format("an integer >= {}", min)
                                   : fmt::format("an integer from {} to {}", min, max);
  long long value = 0;
  if (!field.node().IsScalar() || !YAML::convert<long long>::decode(field.node(), value)) {
    field.fail(describe(field.node()) + " is not an integer", expected);
  }
  if (value < min || value > max) field.fail(fmt::format("{} is out of range", value), expected);
  return value;
}

/// Counts of chunks and streams: at least one, and within Program's ids.
std::uint32_t read_count(const Field& field) {
  return static_cast<std::uint32_t>(read_integer(field, 1, std::numeric_limits<std::uint32_t>::max()));
}

bool read_bool(const Field& field) {
  bool value = false;
  if (!field.node().IsScalar() || !YAML::convert<bool>::decode(field.node(), value)) {
    field.fail(describe(field.node()) + " is not a boolean", "true or false");
  }
  return value;
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

/// "4096", "64 KiB", "1.5GiB": humans write sizes with units.
std::optional<std::uint64_t> parse_byte_count(std::string_view text) {
  return parse_byte_size(text);
}

std::uint64_t read_bytes(const Field& field) {
  std::optional<std::uint64_t> bytes;
  if (field.node().IsScalar()) bytes = parse_byte_count(field.node().Scalar());
  if (!bytes) field.fail(describe(field.node()) + " is not a byte count", kBytesExpected);
  return *bytes;
}

template <typename T, std::size_t N>
T read_choice(const Field& field, const std::pair<std::string_view, T> (&choices)[N]) {
  field_list names;
  for (const auto& [name, value] : choices) {
    if (field.node().IsScalar() && field.node().Scalar() == name) return value;
    names.push_back(name);
  }
  field.fail(describe(field.node()) + " is not allowed here", "one of: " + join(names));
}

constexpr std::pair<std::string_view, host_memory> kMemories[] = {
    {"pinned", host_memory::pinned},
    {"pageable", host_memory::pageable},
};
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
// A pipeline creates N streams of one kind; only one can be the legacy default.
constexpr std::pair<std::string_view, stream_kind> kPipelineStreamKinds[] = {
    {"blocking", stream_kind::blocking},
    {"non_blocking", stream_kind::non_blocking},
    {"per_thread_default", stream_kind::per_thread_default},
};

// ---- pipeline: form ----

const field_list kPipelineFields = {
    "chunks", "items",          "streams",     "issue",  "stream_kind",  "stage_time",        "total_time",
    "bytes",  "chunk_schedule", "kernel_cost", "memory", "kernel_share", "synchronize_at_end"};

std::vector<std::string> read_item_names(const Field& field) {
  require_list(field, "a list of item names");
  std::vector<std::string> names;
  std::map<std::string, std::string> first_seen;  // name -> path of its first use
  for (const Field& element : field.elements()) {
    std::string name = read_string(element);
    const auto [previous, fresh] = first_seen.emplace(name, element.path());
    if (!fresh)
      element.fail(fmt::format("{} repeats {}", shown(name), previous->second), "unique item names");
    names.push_back(std::move(name));
  }
  return names;
}

void read_chunks(const Field& pipeline, PipelineShape& shape) {
  const std::optional<Field> chunks = pipeline.get("chunks");
  const std::optional<Field> items = pipeline.get("items");
  if (items) {
    shape.item_names = read_item_names(*items);
    shape.chunks = static_cast<std::uint32_t>(shape.item_names.size());
  }
  if (!chunks) return;
  const std::uint32_t count = read_count(*chunks);
  if (items && count != shape.chunks) {
    chunks->fail(fmt::format("{} does not match the {} items", count, shape.chunks),
                 "chunks equal to the number of items, or only one of them");
  }
  shape.chunks = count;
}

/// Reads {h2d, kernel, d2h} times, scaled by `factor` into the shape's totals.
void read_stage_times(const Field& field, double factor, PipelineShape& shape) {
  check_fields(field, {"h2d", "kernel", "d2h"});
  if (auto time = field.get("h2d")) shape.h2d_time = read_time(*time) * factor;
  if (auto time = field.get("kernel")) shape.kernel_time = read_time(*time) * factor;
  if (auto time = field.get("d2h")) shape.d2h_time = read_time(*time) * factor;
}

void read_times(const Field& pipeline, PipelineShape& shape) {
  const std::optional<Field> per_chunk = pipeline.get("stage_time");
  const std::optional<Field> total = pipeline.get("total_time");
  if (per_chunk && total) {
    const Field& later = per_chunk->line() > total->line() ? *per_chunk : *total;
    later.fail("both stage_time and total_time given", "one of them: stage_time per chunk or total_time");
  }
  if (per_chunk && !shape.chunk_schedule.empty()) {
    per_chunk->fail("stage_time with a chunk_schedule, whose chunks differ in size",
                    "total_time, split over the chunks in proportion to their bytes");
  }
  // stage_time is per chunk; the shape holds totals that it splits again.
  if (per_chunk) read_stage_times(*per_chunk, static_cast<double>(shape.chunks), shape);
  if (total) read_stage_times(*total, 1.0, shape);
}

void read_total_bytes(const Field& field, PipelineShape& shape) {
  check_fields(field, {"h2d", "d2h"});
  if (auto bytes = field.get("h2d")) shape.h2d_bytes = read_bytes(*bytes);
  if (auto bytes = field.get("d2h")) shape.d2h_bytes = read_bytes(*bytes);
}

/// chunk_schedule: [64 KiB, 128 KiB, ...]: the input bytes of each chunk.
void read_chunk_schedule(const Field& pipeline, const Field& field, PipelineShape& shape) {
  require_list(field, "a list of chunk sizes in bytes");
  for (const Field& element : field.elements()) {
    const std::uint64_t bytes = read_bytes(element);
    if (bytes == 0) element.fail("0 bytes", "a chunk size > 0");
    shape.chunk_schedule.push_back(bytes);
  }
  if (shape.chunk_schedule.size() > std::numeric_limits<std::uint32_t>::max()) {
    field.fail(fmt::format("{} chunks", shape.chunk_schedule.size()), "at most 4294967295 chunks");
  }
  const auto count = static_cast<std::uint32_t>(shape.chunk_schedule.size());
  for (const std::string_view key : {"chunks", "items"}) {
    if (pipeline.get(key) && shape.chunks != count) {
      field.fail(fmt::format("{} chunks, but {} says {}", count, key, shape.chunks),
                 "one entry per chunk, or no chunks: or items: beside it");
    }
  }
  shape.chunks = count;
}

/// The schedule sizes the input: it gives bytes.h2d, or must add up to it.
void check_schedule_total(const Field& pipeline, PipelineShape& shape) {
  if (shape.chunk_schedule.empty()) return;
  std::uint64_t sum = 0;
  for (const std::uint64_t bytes : shape.chunk_schedule) {
    if (bytes > std::numeric_limits<std::uint64_t>::max() - sum) {
      pipeline.require("chunk_schedule", "").fail("adds up to more than 2^64 bytes", "a total that fits");
    }
    sum += bytes;
  }
  const std::optional<Field> bytes = pipeline.get("bytes");
  if (!bytes || !bytes->get("h2d")) {
    shape.h2d_bytes = sum;
    return;
  }
  if (sum != shape.h2d_bytes) {
    pipeline.require("chunk_schedule", "")
        .fail(fmt::format("adds up to {} bytes", sum),
              fmt::format("the bytes.h2d total of {} bytes, or no bytes.h2d", shape.h2d_bytes));
  }
}

/// kernel_cost: {fixed_ms, ms_per_mib, wave_bytes}: each chunk's kernel
/// priced by its input bytes (overlap::KernelCost).
void read_kernel_cost(const Field& field, PipelineShape& shape) {
  check_fields(field, {"fixed_ms", "ms_per_mib", "wave_bytes"});
  KernelCost cost;
  cost.fixed_ms = read_time(field.require("fixed_ms", kTimeExpected));
  cost.ms_per_mib = read_time(field.require("ms_per_mib", kTimeExpected));
  if (auto wave = field.get("wave_bytes")) cost.wave_bytes = read_bytes(*wave);
  if (cost.fixed_ms == 0.0 && cost.ms_per_mib == 0.0) {
    field.fail("fixed_ms and ms_per_mib are both 0", "a kernel that takes time");
  }
  if (shape.kernel_time) {
    field.fail("given with a kernel time",
               "one of them: kernel_cost, or kernel under stage_time or total_time");
  }
  if (shape.h2d_bytes == 0) {
    field.fail("no input bytes to price", "bytes: {h2d: ...} or a chunk_schedule beside it");
  }
  shape.kernel_cost = cost;
}

issue_order read_issue_order(const Field& field) {
  const std::string text = read_string(field);
  try {
    return parse_issue_order(text);
  } catch (const invalid_input&) {
    field.fail(fmt::format("{} is not an issue order", shown(text)),
               "one of: depth, depth-first, depth_first, breadth, breadth-first, breadth_first");
  }
}

PipelineShape read_pipeline_shape(const Field& pipeline) {
  check_fields(pipeline, kPipelineFields);
  PipelineShape shape;
  read_chunks(pipeline, shape);
  if (auto field = pipeline.get("chunk_schedule")) read_chunk_schedule(pipeline, *field, shape);
  if (auto field = pipeline.get("streams")) shape.streams = read_count(*field);
  if (auto field = pipeline.get("issue")) shape.order = read_issue_order(*field);
  if (auto field = pipeline.get("stream_kind")) shape.kind = read_choice(*field, kPipelineStreamKinds);
  read_times(pipeline, shape);
  if (auto field = pipeline.get("bytes")) read_total_bytes(*field, shape);
  check_schedule_total(pipeline, shape);
  if (auto field = pipeline.get("kernel_cost")) read_kernel_cost(*field, shape);
  if (auto field = pipeline.get("memory")) shape.memory = read_choice(*field, kMemories);
  if (auto field = pipeline.get("kernel_share")) shape.kernel_gpu_share = read_share(*field);
  if (auto field = pipeline.get("synchronize_at_end")) shape.synchronize_at_end = read_bool(*field);
  // A pipeline with no stage would be an empty program: surely a slip.
  if (!shape.h2d_time && !shape.kernel_time && !shape.d2h_time && shape.h2d_bytes == 0 &&
      shape.d2h_bytes == 0) {
    pipeline.fail("no stage has a time or bytes", "stage_time, total_time or bytes");
  }
  return shape;
}

Program read_pipeline(const Field& pipeline) {
  const PipelineShape shape = read_pipeline_shape(pipeline);
  try {
    return make_pipeline_program(shape);
  } catch (const invalid_input& e) {
    pipeline.fail_raw(e.what());  // fields are checked above; this is a safety net
  }
}

// ---- explicit form: streams, events, buffers, ops ----

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
      {"kernel", op_kind::kernel, std::nullopt, {"stream", "time", "share"}},
      {"memset", op_kind::memset, std::nullopt, {"stream", "bytes", "time", "sync"}},
      {"host_func", op_kind::host_function, std::nullopt, {"stream", "time"}},
      {"record", op_kind::event_record, std::nullopt, {"event", "stream"}},
      {"wait", op_kind::stream_wait_event, std::nullopt, {"stream", "event"}},
      {"stream_sync", op_kind::stream_synchronize, std::nullopt, {"stream"}},
      {"event_sync", op_kind::event_synchronize, std::nullopt, {"event"}},
      {"device_sync", op_kind::device_synchronize, std::nullopt, {}},
      {"malloc", op_kind::device_allocate, std::nullopt, host_cost},
      {"free", op_kind::device_free, std::nullopt, host_cost},
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

/// time, bytes, share, and a copy's direction, mode and memory.
void read_payload(const Field& op_field, const OpForm& form, Op& op) {
  if (auto time = op_field.get("time")) op.duration = read_time(*time);
  if (auto bytes = op_field.get("bytes")) op.bytes = read_bytes(*bytes);
  if (auto share = op_field.get("share")) op.gpu_share = read_share(*share);
  if (op.kind == op_kind::copy) read_copy_mode(op_field, form, op);
  if (op.kind == op_kind::memset) op.mode = read_call_mode(op_field);
  // Program::implicit_sync always sets a host cost; match it.
  if (is_implicitly_synchronizing(op.kind) && !op.duration) op.duration = 0.0;
  require_payload(op_field, op);
}

/// One access: "buf", "buf[offset:end]" (end exclusive, either side may be
/// left out) or {buffer, offset, bytes}.
class AccessReader {
 public:
  static constexpr std::string_view kExpected =
      "a buffer name, 'name[offset:end]' with byte offsets, or a map {buffer, offset, bytes}";

  static Access read(const Field& field) {
    if (field.node().IsMap()) return read_map(field);
    if (!field.node().IsScalar()) field.fail(describe(field.node()) + " is not an access", kExpected);
    return read_text(field, field.node().Scalar());
  }

 private:
  static Access read_map(const Field& field) {
    check_fields(field, {"buffer", "offset", "bytes"});
    Access access;
    access.buffer = read_string(field.require("buffer", "a buffer name"));
    if (auto offset = field.get("offset")) access.offset = read_bytes(*offset);
    if (auto bytes = field.get("bytes")) access.size = read_bytes(*bytes);
    return access;
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

const field_list kStreamFields = {"name", "kind", "priority"};

/// `default` and `per_thread` always mean the two default streams. They are
/// made on first use, or declared with their own kind to give them a place
/// among the streams or a priority (as overlap::io::to_spec does).
std::optional<stream_kind> reserved_stream_kind(std::string_view name) {
  if (name == "default") return stream_kind::legacy_default;
  if (name == "per_thread") return stream_kind::per_thread_default;
  return std::nullopt;
}

/// Builds a Program from the explicit form, resolving names as it goes.
class ExplicitReader {
 public:
  void read_streams(const Field& list) {
    require_list(list, "a list of streams {name, kind, priority}", true);
    for (const Field& element : list.elements()) read_stream(element);
  }

  void read_events(const Field& list) {
    require_list(list, "a list of event names", true);
    for (const Field& element : list.elements()) {
      const std::string name = read_string(element);
      if (program_.find_event(name))
        element.fail(fmt::format("event {} declared twice", shown(name)), "unique names");
      program_.add_event(name);
    }
  }

  void read_buffers(const Field& map) {
    require_map(map, "a map of buffer name -> size in bytes");
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
    for (const Field& element : list.elements()) read_op(element);
  }

  Program take() { return std::move(program_); }

 private:
  void read_stream(const Field& field) {
    // `- s1` is shorthand for `- {name: s1}`.
    if (field.node().IsScalar()) return add_stream(field, field, stream_kind::blocking, 0);
    check_fields(field, kStreamFields);
    const Field name = field.require("name", "a stream name");
    const std::optional<Field> kind = field.get("kind");
    const std::optional<Field> priority = field.get("priority");
    add_stream(name, kind ? *kind : name, kind ? read_choice(*kind, kStreamKinds) : stream_kind::blocking,
               priority ? read_priority(*priority) : 0);
  }

  static int read_priority(const Field& field) {
    return static_cast<int>(
        read_integer(field, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  }

  void add_stream(const Field& name_field, const Field& kind_field, stream_kind kind, int priority) {
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
      program_.add_stream(name, kind, priority);
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
    if (takes(form, "stream")) op.stream = read_op_stream(field, op);
    if (takes(form, "event")) op.event = resolve_event(field.require("event", events_expected()));
    read_common(field, op);
    try {
      program_.append(std::move(op));
    } catch (const invalid_input& e) {
      field.fail_raw(e.what());  // fields are checked above; this is a safety net
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
    const std::optional<stream_id> stream = program_.find_stream(name);
    if (!stream) field.fail(fmt::format("{} is not a declared stream", shown(name)), streams_expected());
    return *stream;
  }

  /// The per-thread default stream: one declared as `per_thread`, else the
  /// first declared one, else "per_thread" made on first use.
  stream_id per_thread_stream() {
    if (const std::optional<stream_id> named = program_.find_stream("per_thread")) return *named;
    for (std::size_t i = 0; i < program_.streams().size(); ++i) {
      if (program_.streams()[i].kind == stream_kind::per_thread_default) return static_cast<stream_id>(i);
    }
    return program_.add_stream("per_thread", stream_kind::per_thread_default);
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
    field_list names;
    for (const Stream& stream : program_.streams()) names.push_back(stream.name);
    for (const std::string_view name : {"default", "per_thread"}) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return "a declared stream or a default one: " + join(names);
  }

  [[nodiscard]] std::string events_expected() const {
    if (program_.events().empty()) return "an event declared under events:";
    std::string names;
    for (const std::string& event : program_.events()) names += (names.empty() ? "" : ", ") + event;
    return "one of: " + names;
  }

  [[nodiscard]] std::string buffer_names() const {
    std::string names;
    for (const auto& [name, size] : *buffers_) names += (names.empty() ? "" : ", ") + name;
    return names;
  }

  Program program_;
  std::optional<std::map<std::string, std::uint64_t>> buffers_;  // empty: buffers: absent
};

Program read_explicit(const Field& root, const Field& ops) {
  ExplicitReader reader;
  if (auto streams = root.get("streams")) reader.read_streams(*streams);
  if (auto events = root.get("events")) reader.read_events(*events);
  if (auto buffers = root.get("buffers")) reader.read_buffers(*buffers);
  reader.read_ops(ops);
  return reader.take();
}

// ---- top level ----

const field_list kTopFields = {"name", "time_unit", "device", "pipeline",
                               "ops",  "streams",   "events", "buffers"};
constexpr std::string_view kTopExpected = "a map with name, time_unit, device, and pipeline: or ops:";

Program read_program(const Field& root) {
  const std::optional<Field> pipeline = root.get("pipeline");
  const std::optional<Field> ops = root.get("ops");
  if (pipeline && ops) {
    const Field& later = pipeline->line() > ops->line() ? *pipeline : *ops;
    later.fail("both pipeline: and ops: given", "exactly one of them");
  }
  if (!pipeline && !ops) root.fail("neither pipeline: nor ops: given", "exactly one of them");
  if (ops) return read_explicit(root, *ops);
  // A pipeline makes its own streams; declarations would be silently unused.
  for (const std::string_view key : {"streams", "events", "buffers"}) {
    if (auto field = root.get(key)) {
      field->fail("not allowed with pipeline:", "it only with ops:; a pipeline makes its own streams");
    }
  }
  return read_pipeline(*pipeline);
}

Spec read_spec(const Field& root) {
  if (root.node().IsNull()) root.fail("the file is empty", kTopExpected);
  require_map(root, kTopExpected);
  check_fields(root, kTopFields);
  Spec spec;
  spec.program = read_program(root);
  if (auto name = root.get("name")) spec.program.name = read_string(*name);
  if (auto unit = root.get("time_unit")) spec.program.time_unit = read_string(*unit);
  if (auto device = root.get("device")) spec.device = read_string(*device);
  return spec;
}

[[noreturn]] void fail_yaml(const YAML::Exception& e, const std::string& source) {
  const int line = e.mark.is_null() ? 1 : e.mark.line + 1;
  throw invalid_input(
      fmt::format("{}:{}: syntax error: {} (expected well-formed YAML or JSON)", source, line, e.msg));
}

}  // namespace

Spec parse_spec(std::string_view text, std::string_view source) {
  const std::string source_name(source);
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return read_spec(Field(source_name, root, "", 1));
  } catch (const YAML::Exception& e) {
    fail_yaml(e, source_name);
  }
}

Spec load_spec(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw invalid_input(fmt::format("cannot read {}: is a directory", path.string()));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw invalid_input(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw invalid_input(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  return parse_spec(text.str(), path.string());
}

}  // namespace overlap::io
