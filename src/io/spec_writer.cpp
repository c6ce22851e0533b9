// Program -> spec text, the explicit form that spec_parser.cpp reads. Each op
// is one flow map on one line, with the fields the parser's form of that op
// takes; names are plain words where that is safe and double-quoted otherwise.
#include "overlap/io/spec_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/core/error.hpp"

namespace overlap::io {

namespace {

// ---- scalars ----

constexpr bool is_ascii_letter(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_ascii_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Words that YAML resolves to null or a boolean instead of a string (yaml-cpp
/// turns "null" into a null node, which the parser would reject as a name).
bool is_yaml_keyword(std::string_view word) {
  static constexpr std::array<std::string_view, 9> kKeywords = {"null", "true", "false", "yes", "no",
                                                                "on",   "off",  "y",     "n"};
  return std::any_of(kKeywords.begin(), kKeywords.end(), [&](std::string_view keyword) {
    return keyword.size() == word.size() && std::equal(word.begin(), word.end(), keyword.begin(),
                                                       [](char a, char b) { return ascii_lower(a) == b; });
  });
}

/// A word of letters, digits, '_', '.' and '-' that starts with a letter or
/// '_' is a string to every YAML reader, in flow maps too: no indicator, no
/// number, no space to trim. Anything else is quoted.
bool can_be_plain(std::string_view text) {
  if (text.empty() || is_yaml_keyword(text)) return false;
  if (!is_ascii_letter(text.front()) && text.front() != '_') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return is_ascii_letter(c) || is_ascii_digit(c) || c == '_' || c == '.' || c == '-';
  });
}

/// UTF-8 sequences that YAML 1.1 takes for line breaks (NEL, LS, PS) or a
/// byte-order mark: written raw, a reader may fold or drop them.
struct SpecialCodePoint {
  std::string_view utf8;
  unsigned code;
};
constexpr std::array<SpecialCodePoint, 4> kSpecialCodePoints = {{
    {"\xC2\x85", 0x85},
    {"\xE2\x80\xA8", 0x2028},
    {"\xE2\x80\xA9", 0x2029},
    {"\xEF\xBB\xBF", 0xFEFF},
}};

const SpecialCodePoint* special_code_point_at(std::string_view rest) {
  for (const SpecialCodePoint& special : kSpecialCodePoints) {
    if (rest.starts_with(special.utf8)) return &special;
  }
  return nullptr;
}

constexpr bool is_control(char c) noexcept {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7F;
}

std::string escaped_control(char c) {
  switch (c) {
    case '\t': return "\\t";
    case '\n': return "\\n";
    case '\r': return "\\r";
    default: return fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
  }
}

/// A YAML double-quoted scalar. Bytes from 0x80 up are written as they are,
/// UTF-8 or not: an escape such as \x80 would stand for a code point, which
/// reads back as two bytes.
std::string double_quoted(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (const SpecialCodePoint* special = special_code_point_at(text.substr(i))) {
      out += fmt::format("\\u{:04X}", special->code);
      i += special->utf8.size() - 1;
    } else if (text[i] == '"' || text[i] == '\\') {
      out += '\\';
      out += text[i];
    } else if (is_control(text[i])) {
      out += escaped_control(text[i]);
    } else {
      out += text[i];
    }
  }
  return out + '"';
}

/// A name as YAML that reads back as exactly this string.
std::string scalar(std::string_view text) {
  return can_be_plain(text) ? std::string(text) : double_quoted(text);
}

/// fmt's shortest form that reads back as the same double ("0.1", "1e-09").
std::string number(double value) {
  return fmt::format("{}", value);
}

// ---- the header comment ----

/// Length of the line break that `rest` starts with, 0 if none. Every break a
/// YAML reader may see counts, so no part of the comment escapes its '#'.
std::size_t line_break_length(std::string_view rest) {
  for (const std::string_view line_break : {"\r\n", "\n", "\r", "\xC2\x85", "\xE2\x80\xA8", "\xE2\x80\xA9"}) {
    if (rest.starts_with(line_break)) return line_break.size();
  }
  return 0;
}

std::vector<std::string_view> comment_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = line_break_length(text.substr(i));
    if (length == 0) {
      ++i;
      continue;
    }
    lines.push_back(text.substr(start, i - start));
    i += length;
    start = i;
  }
  if (start < text.size()) lines.push_back(text.substr(start));  // a final break ends the last line
  return lines;
}

/// "# " before each line; control characters, which YAML does not allow in
/// a comment, are shown as '?'.
std::string header(std::string_view comment) {
  std::string out;
  for (const std::string_view line : comment_lines(comment)) {
    std::string shown(line);
    std::replace_if(
        shown.begin(), shown.end(), [](char c) { return is_control(c) && c != '\t'; }, '?');
    out += shown.empty() ? "#\n" : "# " + shown + "\n";
  }
  return out;
}

// ---- which fields an op's kind takes: the parser's op forms ----

bool takes_stream(op_kind kind) {
  return is_stream_op(kind) || kind == op_kind::stream_synchronize;
}

bool takes_event(op_kind kind) {
  return kind == op_kind::event_record || kind == op_kind::stream_wait_event ||
         kind == op_kind::event_synchronize;
}

bool takes_time(op_kind kind) {
  return is_work_op(kind) || kind == op_kind::host_work || is_implicitly_synchronizing(kind);
}

bool takes_bytes(op_kind kind) {
  return kind == op_kind::copy || kind == op_kind::memset;
}

bool is_default_stream(stream_kind kind) {
  return kind == stream_kind::legacy_default || kind == stream_kind::per_thread_default;
}

/// The spec's `op:` word; copies say their direction.
std::string_view spec_op_name(const Op& op) {
  switch (op.kind) {
    case op_kind::copy: return op.peer ? "peer" : to_string(op.direction);
    case op_kind::memset: return "memset";
    case op_kind::kernel: return "kernel";
    case op_kind::host_function: return "host_func";
    case op_kind::event_record: return "record";
    case op_kind::stream_wait_event: return "wait";
    case op_kind::stream_synchronize: return "stream_sync";
    case op_kind::event_synchronize: return "event_sync";
    case op_kind::device_synchronize: return "device_sync";
    case op_kind::device_allocate: return "malloc";
    case op_kind::device_free: return "free";
    case op_kind::host_allocate: return "host_alloc";
    case op_kind::host_free: return "host_free";
    case op_kind::host_work: return "host_work";
  }
  throw error(fmt::format("to_spec: op kind {} has no spec name", static_cast<int>(op.kind)));
}

// ---- streams ----

/// The default stream a reserved name always means in a spec.
std::optional<stream_kind> reserved_stream_kind(std::string_view name) {
  if (name == "default") return stream_kind::legacy_default;
  if (name == "per_thread") return stream_kind::per_thread_default;
  return std::nullopt;
}

void require_writable_names(const Program& program) {
  for (const Stream& stream : program.streams()) {
    const std::optional<stream_kind> reserved = reserved_stream_kind(stream.name);
    if (reserved && stream.kind != *reserved) {
      throw invalid_input(fmt::format(
          "to_spec: stream '{}' is {}, but a spec's '{}' always means the {} stream (expected another name)",
          stream.name, to_string(stream.kind), stream.name, to_string(*reserved)));
    }
  }
}

/// Which streams go under `streams:` and which are left to be made by their
/// first use as `default` / `per_thread`, the form people write. A default
/// stream is left out only where first use makes it again with the same id
/// and fields: the left-out streams must close the stream list, be used in
/// the order of their ids, have priority 0, and `per_thread` must not find
/// another per-thread stream first.
class StreamPlan {
 public:
  explicit StreamPlan(const Program& program) : program_(program) {
    require_writable_names(program);
    first_made_on_use_ = program.streams().size();
    while (first_made_on_use_ > 0 && can_be_made_on_use(first_made_on_use_ - 1)) --first_made_on_use_;
    while (first_made_on_use_ < program.streams().size() && !first_uses_follow_ids(first_made_on_use_)) {
      ++first_made_on_use_;
    }
  }

  [[nodiscard]] bool declared(std::size_t id) const noexcept { return id < first_made_on_use_; }

 private:
  [[nodiscard]] bool can_be_made_on_use(std::size_t id) const {
    const Stream& stream = program_.streams()[id];
    if (stream.priority != 0) return false;
    if (stream.kind == stream_kind::legacy_default) return stream.name == "default";
    return stream.name == "per_thread" && per_thread_streams() == 1;
  }

  [[nodiscard]] std::size_t per_thread_streams() const {
    return static_cast<std::size_t>(
        std::count_if(program_.streams().begin(), program_.streams().end(),
                      [](const Stream& s) { return s.kind == stream_kind::per_thread_default; }));
  }

  /// Streams from `first` on are first used in the order of their ids, each of them.
  [[nodiscard]] bool first_uses_follow_ids(std::size_t first) const {
    std::size_t next = first;
    for (const Op& op : program_.ops()) {
      if (!takes_stream(op.kind) || *op.stream < first) continue;
      if (*op.stream > next) return false;
      if (*op.stream == next) ++next;
    }
    return next == program_.streams().size();
  }

  const Program& program_;
  std::size_t first_made_on_use_ = 0;
};

std::string stream_declaration(const Stream& stream) {
  // The device only where it is not the first GPU, as a spec may leave it out.
  const std::string device = stream.device != 0 ? fmt::format(", device: {}", stream.device) : std::string();
  return fmt::format("  - {{name: {}, kind: {}, priority: {}{}}}\n", scalar(stream.name),
                     to_string(stream.kind), stream.priority, device);
}

std::string streams_section(const Program& program) {
  const StreamPlan plan(program);
  std::string out;
  for (std::size_t id = 0; id < program.streams().size(); ++id) {
    if (plan.declared(id)) out += stream_declaration(program.streams()[id]);
  }
  return out.empty() ? "streams: []\n" : "streams:\n" + out;
}

std::string events_section(const Program& program) {
  std::string out;
  for (const std::string& event : program.events()) out += fmt::format("  - {}\n", scalar(event));
  return out.empty() ? "events: []\n" : "events:\n" + out;
}

// ---- ops ----

/// `buf` for a whole declared buffer whose name needs no quotes (a bracket
/// would read as a range), else {buffer, offset, bytes, source}; `source` only
/// where the access is not declared, so a captured program written out keeps
/// which kernel accesses were inferred.
std::string region(const Access& access) {
  const bool declared = access.source == access_source::declared;
  if (declared && access.offset == 0 && !access.size && can_be_plain(access.buffer)) return access.buffer;
  std::string out = fmt::format("{{buffer: {}, offset: {}", scalar(access.buffer), access.offset);
  if (access.size) out += fmt::format(", bytes: {}", *access.size);
  if (!declared) out += fmt::format(", source: {}", to_string(access.source));
  return out + "}";
}

std::vector<std::string> regions(const Op& op, access_mode mode) {
  std::vector<std::string> out;
  for (const Access& access : op.accesses) {
    if (access.mode == mode) out.push_back(region(access));
  }
  return out;
}

/// A spec's sync copy runs on a default stream, as cudaMemcpy does.
void require_writable_sync_copy(const Program& program, const Op& op, std::size_t index) {
  if (op.kind != op_kind::copy || op.mode != call_mode::synchronous) return;
  const Stream& stream = program.streams()[*op.stream];
  if (is_default_stream(stream.kind)) return;
  throw invalid_input(
      fmt::format("to_spec: ops[{}]: a sync copy on stream '{}' ({}) cannot be written (expected a sync copy "
                  "on a default stream, where cudaMemcpy runs)",
                  index, stream.name, to_string(stream.kind)));
}

/// The time to write, if any. An allocation or free without one costs 0 on
/// the host, as the parser reads it; saying so keeps a second trip's text
/// the same as the first's.
std::optional<double> spec_time(const Op& op) {
  if (!takes_time(op.kind)) return std::nullopt;
  if (is_implicitly_synchronizing(op.kind)) return op.duration.value_or(0.0);
  return op.duration;
}

/// stream, event, bytes, time, memory, sync, share and prints: what this kind takes.
void add_payload_fields(const Program& program, const Op& op, std::vector<std::string>& fields) {
  if (takes_stream(op.kind)) fields.push_back("stream: " + scalar(program.streams()[*op.stream].name));
  if (takes_event(op.kind)) fields.push_back("event: " + scalar(program.events()[*op.event]));
  if (takes_bytes(op.kind)) fields.push_back(fmt::format("bytes: {}", op.bytes));
  if (const std::optional<double> time = spec_time(op)) fields.push_back("time: " + number(*time));
  // Written even when it is the default, which differs for sync and async copies.
  if (op.kind == op_kind::copy && !op.peer) fields.push_back(fmt::format("memory: {}", to_string(op.memory)));
  if (op.peer) fields.push_back(fmt::format("from: {}, to: {}", op.peer->from, op.peer->to));
  const bool device_scoped = op.kind == op_kind::device_synchronize || op.kind == op_kind::device_allocate ||
                             op.kind == op_kind::device_free;
  if (device_scoped && op.device != 0) fields.push_back(fmt::format("device: {}", op.device));
  if (takes_bytes(op.kind) && op.mode == call_mode::synchronous) fields.emplace_back("sync: true");
  if (op.kind == op_kind::kernel && op.gpu_share != 1.0) fields.push_back("share: " + number(op.gpu_share));
  if (op.kind == op_kind::kernel && op.prints) fields.emplace_back("prints: true");
}

/// label, item, chunk, reads and writes: what every op may have.
void add_common_fields(const Op& op, std::vector<std::string>& fields) {
  if (!op.label.empty()) fields.push_back("label: " + scalar(op.label));
  if (!op.item.empty()) fields.push_back("item: " + scalar(op.item));
  if (op.chunk >= 0) fields.push_back(fmt::format("chunk: {}", op.chunk));
  for (const access_mode mode : {access_mode::read, access_mode::write}) {
    const std::vector<std::string> list = regions(op, mode);
    if (list.empty()) continue;
    fields.push_back(
        fmt::format("{}: [{}]", mode == access_mode::read ? "reads" : "writes", fmt::join(list, ", ")));
  }
}

std::string op_line(const Program& program, const Op& op, std::size_t index) {
  require_writable_sync_copy(program, op, index);
  std::vector<std::string> fields{fmt::format("op: {}", spec_op_name(op))};
  add_payload_fields(program, op, fields);
  add_common_fields(op, fields);
  return fmt::format("  - {{{}}}\n", fmt::join(fields, ", "));
}

std::string ops_section(const Program& program) {
  if (program.ops().empty()) {
    throw invalid_input(
        "to_spec: the program has no ops (expected at least one: a spec's ops: may not be empty)");
  }
  std::string out = "ops:\n";
  for (std::size_t i = 0; i < program.ops().size(); ++i) out += op_line(program, program.ops()[i], i);
  return out;
}

}  // namespace

std::string to_spec(const Program& program, std::string_view header_comment) {
  std::string out = header(header_comment);
  if (!program.name.empty()) out += "name: " + scalar(program.name) + "\n";
  if (!program.time_unit.empty()) out += "time_unit: " + scalar(program.time_unit) + "\n";
  if (program.device_count() > 1) out += fmt::format("devices: {}\n", program.device_count());
  out += streams_section(program);
  out += events_section(program);
  out += ops_section(program);
  return out;
}

}  // namespace overlap::io
