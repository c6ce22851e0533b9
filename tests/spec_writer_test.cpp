// to_spec: every Program it writes reads back through parse_spec as the same
// program, field by field, for the examples, hand-built awkward programs and
// random ones.
#include "overlap/io/spec_writer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/io/spec.hpp"

namespace {

using namespace overlap;
using overlap::io::parse_spec;
using overlap::io::to_spec;

// ---- comparing two programs field by field ----

std::string shown(const std::string& text) {
  return fmt::format("{:?}", text);
}
/// Numbers as fmt writes them (doubles in the shortest form that reads back
/// exactly), and the enums that overlap names (op_kind, stream_kind, ...).
template <typename T>
std::string shown(const T& value) {
  if constexpr (std::is_arithmetic_v<T>) {
    return fmt::format("{}", value);
  } else {
    return std::string(to_string(value));
  }
}
std::string shown(call_mode mode) {
  return mode == call_mode::synchronous ? "synchronous" : "asynchronous";
}
std::string shown(access_mode mode) {
  return mode == access_mode::read ? "read" : "write";
}
template <typename T>
std::string shown(const std::optional<T>& value) {
  return value ? shown(*value) : std::string("none");
}

/// Doubles are equal to the bit (0.1 must not come back as 0.1000000000000001).
bool same(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}
bool same(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || same(*a, *b));
}
template <typename T>
bool same(const T& a, const T& b) {
  return a == b;
}

/// Collects "field: wrote X, read back Y" lines.
class Differences {
 public:
  template <typename T>
  void compare(const std::string& field, const T& wrote, const T& read) {
    if (!same(wrote, read))
      lines_.push_back(fmt::format("{}: wrote {}, read back {}", field, shown(wrote), shown(read)));
  }
  [[nodiscard]] bool empty() const { return lines_.empty(); }
  [[nodiscard]] std::string text() const {
    constexpr std::size_t kShown = 20;
    std::string out;
    for (std::size_t i = 0; i < std::min(kShown, lines_.size()); ++i) out += lines_[i] + "\n";
    if (lines_.size() > kShown) out += fmt::format("... and {} more\n", lines_.size() - kShown);
    return out;
  }

 private:
  std::vector<std::string> lines_;
};

// What the spec format gives each op kind (docs/spec-format.md, "Ops"); the
// other fields of an Op are ignored by its kind and not written.
bool takes_stream(op_kind k) {
  return is_stream_op(k) || k == op_kind::stream_synchronize;
}
bool takes_event(op_kind k) {
  return k == op_kind::event_record || k == op_kind::stream_wait_event || k == op_kind::event_synchronize;
}
bool takes_time(op_kind k) {
  return is_work_op(k) || k == op_kind::host_work || is_implicitly_synchronizing(k);
}
bool takes_bytes(op_kind k) {
  return k == op_kind::copy || k == op_kind::memset;
}

/// A spec gives an allocation or free without a time the cost 0, as Program::implicit_sync does.
std::optional<double> spec_duration(const Op& op) {
  if (is_implicitly_synchronizing(op.kind) && !op.duration) return 0.0;
  return op.duration;
}

/// Reads, then writes, each in their order: a spec lists them apart.
std::vector<Access> reads_then_writes(std::vector<Access> accesses) {
  std::stable_partition(accesses.begin(), accesses.end(),
                        [](const Access& a) { return a.mode == access_mode::read; });
  return accesses;
}

void compare_accesses(const std::string& at, const Op& wrote, const Op& read, Differences& d) {
  const std::vector<Access> a = reads_then_writes(wrote.accesses);
  const std::vector<Access> b = reads_then_writes(read.accesses);
  d.compare(at + ".accesses.size", a.size(), b.size());
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const std::string field = fmt::format("{}.accesses[{}]", at, i);
    d.compare(field + ".buffer", a[i].buffer, b[i].buffer);
    d.compare(field + ".offset", a[i].offset, b[i].offset);
    d.compare(field + ".size", a[i].size, b[i].size);
    d.compare(field + ".mode", a[i].mode, b[i].mode);
    d.compare(field + ".source", a[i].source, b[i].source);
  }
}

void compare_op(const std::string& at, const Op& wrote, const Op& read, Differences& d) {
  d.compare(at + ".kind", wrote.kind, read.kind);
  if (wrote.kind != read.kind) return;
  const op_kind k = wrote.kind;
  if (takes_stream(k)) d.compare(at + ".stream", wrote.stream, read.stream);
  if (takes_event(k)) d.compare(at + ".event", wrote.event, read.event);
  if (takes_time(k)) d.compare(at + ".duration", spec_duration(wrote), spec_duration(read));
  if (takes_bytes(k)) d.compare(at + ".bytes", wrote.bytes, read.bytes);
  if (takes_bytes(k)) d.compare(at + ".mode", wrote.mode, read.mode);
  if (k == op_kind::copy) d.compare(at + ".direction", wrote.direction, read.direction);
  if (k == op_kind::copy) d.compare(at + ".memory", wrote.memory, read.memory);
  d.compare(at + ".device", wrote.device, read.device);
  d.compare(at + ".peer", wrote.peer.has_value(), read.peer.has_value());
  if (wrote.peer && read.peer) {
    d.compare(at + ".peer.from", wrote.peer->from, read.peer->from);
    d.compare(at + ".peer.to", wrote.peer->to, read.peer->to);
  }
  if (k == op_kind::kernel) d.compare(at + ".gpu_share", wrote.gpu_share, read.gpu_share);
  if (k == op_kind::kernel) d.compare(at + ".prints", wrote.prints, read.prints);
  d.compare(at + ".label", wrote.label, read.label);
  d.compare(at + ".item", wrote.item, read.item);
  d.compare(at + ".chunk", wrote.chunk, read.chunk);
  compare_accesses(at, wrote, read, d);
}

Differences compare_programs(const Program& wrote, const Program& read) {
  Differences d;
  d.compare("name", wrote.name, read.name);
  d.compare("time_unit", wrote.time_unit, read.time_unit);
  d.compare("streams.size", wrote.streams().size(), read.streams().size());
  for (std::size_t i = 0; i < std::min(wrote.streams().size(), read.streams().size()); ++i) {
    const std::string at = fmt::format("streams[{}]", i);
    d.compare(at + ".name", wrote.streams()[i].name, read.streams()[i].name);
    d.compare(at + ".kind", wrote.streams()[i].kind, read.streams()[i].kind);
    d.compare(at + ".priority", wrote.streams()[i].priority, read.streams()[i].priority);
    d.compare(at + ".device", wrote.streams()[i].device, read.streams()[i].device);
  }
  d.compare("device_count", wrote.device_count(), read.device_count());
  d.compare("events.size", wrote.events().size(), read.events().size());
  for (std::size_t i = 0; i < std::min(wrote.events().size(), read.events().size()); ++i) {
    d.compare(fmt::format("events[{}]", i), wrote.events()[i], read.events()[i]);
  }
  d.compare("ops.size", wrote.ops().size(), read.ops().size());
  for (std::size_t i = 0; i < std::min(wrote.ops().size(), read.ops().size()); ++i) {
    compare_op(fmt::format("ops[{}]", i), wrote.ops()[i], read.ops()[i], d);
  }
  return d;
}

/// to_spec, then parse_spec, then every field compared; the spec is shown on failure.
::testing::AssertionResult round_trips(const Program& program) {
  const std::string text = to_spec(program);
  Program read;
  try {
    read = parse_spec(text, "x").program;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "parse_spec refused the spec: " << e.what() << "\n--- spec ---\n"
                                         << text;
  }
  const Differences d = compare_programs(program, read);
  if (!d.empty()) return ::testing::AssertionFailure() << d.text() << "--- spec ---\n" << text;
  // Writing what was read gives the same text: nothing drifts on a second trip.
  const std::string again = to_spec(read);
  if (again != text) {
    return ::testing::AssertionFailure() << "a second trip wrote another text\n--- first ---\n"
                                         << text << "--- second ---\n"
                                         << again;
  }
  return ::testing::AssertionSuccess();
}

// ---- the examples ----

std::vector<std::filesystem::path> example_specs() {
  std::vector<std::filesystem::path> specs;
  const std::filesystem::path root = std::filesystem::path(OVERLAP_SOURCE_DIR) / "examples";
  for (const auto& folder : {root, root / "check"}) {
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      const std::string extension = entry.path().extension().string();
      if (extension == ".yaml" || extension == ".json") specs.push_back(entry.path());
    }
  }
  std::sort(specs.begin(), specs.end());
  return specs;
}

TEST(SpecWriter, EveryExampleRoundTrips) {
  const std::vector<std::filesystem::path> specs = example_specs();
  EXPECT_GE(specs.size(), 19u);  // 6 in examples/, 13 in examples/check/
  for (const auto& path : specs) {
    EXPECT_TRUE(round_trips(io::load_spec(path).program)) << path;
  }
}

// ---- hand-built programs ----

/// Every op kind, every stream kind, events, accesses with and without size.
Program every_kind_program() {
  Program p;
  p.name = "every kind: \"all\" # of them";
  p.time_unit = "us";
  const stream_id s1 = p.add_stream("s1");
  const stream_id quiet = p.add_stream("non blocking", stream_kind::non_blocking, -1);
  const stream_id urgent = p.add_stream("urgent", stream_kind::blocking, 3);
  const stream_id pt_other = p.add_stream("per-thread [2]", stream_kind::per_thread_default);
  const event_id done = p.add_event("done");
  const event_id odd = p.add_event("e: 1");
  p.implicit_sync(op_kind::device_allocate, 0.5);
  p.implicit_sync(op_kind::host_allocate);
  p.copy(s1, copy_direction::h2d, 1024, host_memory::pinned);
  p.last().accesses = {Access{"d_a", 0, 1024, access_mode::write}};
  p.copy(quiet, copy_direction::d2d, 8, host_memory::pinned, 2.0);
  p.copy_sync(copy_direction::d2h, 16);  // makes "default", the legacy stream
  p.copy(urgent, copy_direction::h2d, 4, host_memory::pageable, 0.1);
  p.kernel(s1, 3, 0.25);
  p.last().item = "A";
  p.last().chunk = 2;
  p.last().label = "k";
  p.last().prints = true;
  p.last().accesses = {Access{"d_a", 0, std::nullopt, access_mode::read},
                       Access{"d_b", 16, std::nullopt, access_mode::write},
                       Access{"d_a", 8, 4, access_mode::read}};
  p.memset(p.legacy_default_stream(), 64);
  p.memset(pt_other, 64, 1e-9);
  p.last().mode = call_mode::synchronous;  // cudaMemset: the sync extension
  p.host_function(pt_other, 1);
  p.record(done, s1);
  p.wait(quiet, done);
  p.synchronize(quiet);
  p.synchronize_event(odd);
  p.host_work(123456.789);
  p.implicit_sync(op_kind::device_free);
  p.implicit_sync(op_kind::host_free, 1);
  p.synchronize_device();
  return p;
}

TEST(SpecWriter, EveryOpKindAndStreamKindRoundTrips) {
  const Program p = every_kind_program();
  EXPECT_TRUE(round_trips(p));
  const std::string text = to_spec(p);
  EXPECT_NE(text.find(R"({op: memset, stream: "per-thread [2]", bytes: 64, time: 1e-09, sync: true)"),
            std::string::npos)
      << text;
}

// A captured kernel's accesses are inferred from its pointers; written out
// and read back they must stay so, or `overlap check` on the written program
// would call a possible race an error.
TEST(SpecWriter, AccessSourcesRoundTrip) {
  Program p;
  const stream_id s1 = p.add_stream("s1", stream_kind::non_blocking);
  p.kernel(s1, 1);
  p.last().accesses = {Access{"d", 0, std::nullopt, access_mode::write, access_source::inferred},
                       Access{"d", 16, 32, access_mode::read, access_source::measured},
                       Access{"d", 0, std::nullopt, access_mode::read}};
  EXPECT_TRUE(round_trips(p));
  const std::string text = to_spec(p);
  EXPECT_NE(text.find("{buffer: d, offset: 0, source: inferred}"), std::string::npos) << text;
  EXPECT_NE(text.find("{buffer: d, offset: 16, bytes: 32, source: measured}"), std::string::npos) << text;
}

TEST(SpecWriter, UnknownAccessSourceIsRefusedByName) {
  const std::string spec =
      "streams: [s1]\nops:\n  - {op: kernel, stream: s1, time: 1, writes: [{buffer: d, source: guessed}]}\n";
  try {
    (void)io::parse_spec(spec, "sources.yaml");
    FAIL() << "accepted an unknown access source";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("source"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("guessed"), std::string::npos) << e.what();
  }
}

TEST(SpecWriter, DefaultStreamsAreReferencesWhenFirstUseMakesThemAgain) {
  Program p;
  const stream_id s1 = p.add_stream("s1", stream_kind::non_blocking);
  p.kernel(s1, 1);
  p.copy_sync(copy_direction::h2d, 4);
  const stream_id per_thread = p.add_stream("per_thread", stream_kind::per_thread_default);
  p.kernel(per_thread, 1);
  EXPECT_TRUE(round_trips(p));
  const std::string text = to_spec(p);
  EXPECT_EQ(text.find("name: default"), std::string::npos) << text;
  EXPECT_EQ(text.find("name: per_thread"), std::string::npos) << text;
  EXPECT_NE(text.find("{op: h2d, stream: default, bytes: 4, memory: pageable, sync: true"), std::string::npos)
      << text;
  EXPECT_NE(text.find("{op: kernel, stream: per_thread, time: 1"), std::string::npos) << text;
}

TEST(SpecWriter, DefaultStreamsAreDeclaredWhereTheirIdOrPriorityNeedsIt) {
  Program first_used_early;  // the default stream made before s1: its id is 0
  first_used_early.copy_sync(copy_direction::h2d, 4);
  first_used_early.kernel(first_used_early.add_stream("s1"), 1);
  EXPECT_TRUE(round_trips(first_used_early));
  EXPECT_NE(to_spec(first_used_early).find("{name: default, kind: legacy_default"), std::string::npos);

  Program urgent;
  urgent.kernel(urgent.add_stream("per_thread", stream_kind::per_thread_default, 2), 1);
  EXPECT_TRUE(round_trips(urgent));

  Program unused;  // no op makes it, so it is declared
  (void)unused.legacy_default_stream();
  unused.host_work(1);
  EXPECT_TRUE(round_trips(unused));

  Program two_per_thread;  // as `overlap trace` names the streams of two host threads
  const stream_id mine = two_per_thread.add_stream("per_thread", stream_kind::per_thread_default);
  const stream_id theirs = two_per_thread.add_stream("per_thread 7", stream_kind::per_thread_default);
  two_per_thread.kernel(theirs, 1);
  two_per_thread.kernel(mine, 1);
  EXPECT_TRUE(round_trips(two_per_thread));

  Program renamed_legacy;  // a legacy default stream under another name is declared under it
  const stream_id zero = renamed_legacy.add_stream("stream 0", stream_kind::legacy_default);
  renamed_legacy.kernel(zero, 1);
  renamed_legacy.copy_sync(copy_direction::d2h, 8);
  EXPECT_TRUE(round_trips(renamed_legacy));
}

/// Names YAML would read as something else, or not at all, if written bare.
const std::vector<std::string>& awkward_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = {
        // plain words, which stay plain
        "s1", "_", "a.b-c_d", "default stream", "per_thread 1",
        // indicators, separators and comments
        "a: b", "a:b", "x#y", "x #y", "# not a comment", "[0:8]", "buf[16:]", "{map}", "a,b", "-lead",
        "- item", "--", "&anchor", "*alias", "!tag", "%percent", "@at", "`tick", "|pipe", ">fold", "?q", "?",
        ":", "<<", "=",
        // words and numbers that YAML resolves to something other than a string
        "true", "False", "null", "NULL", "Null", "~", "1", "0x10", "010", "1e5", ".inf", "-.5", "yes", "On",
        "y", "n",
        // quotes, escapes and whitespace
        "'single'", "\"double\"", "it's", "back\\slash", "a\\x41", "\\u00e9", "tab\there", "new\nline",
        "cr\rhere", "  spaces  ", "trailing ", " ",
        // unicode, YAML 1.1 line breaks and the byte-order mark, control bytes, bytes that are not UTF-8
        "ünïcödé", "流れ", "rocket 🚀", "nel\xC2\x85x", "ls\xE2\x80\xA8x", "bom\xEF\xBB\xBFx", "\001ctrl",
        "del\x7F", "not utf-8 \xFF\xFE"};
    all.emplace_back("nul\0x", 5);  // an embedded NUL byte
    return all;
  }();
  return names;
}

TEST(SpecWriter, AwkwardNamesReadBackAsWritten) {
  for (const std::string& name : awkward_names()) {
    Program p;
    p.name = name;
    p.time_unit = name;
    const stream_id s = p.add_stream(name, stream_kind::non_blocking);
    const event_id e = p.add_event(name);
    p.kernel(s, 1);
    p.last().label = name;
    p.last().item = name;
    p.last().accesses = {Access{name, 0, std::nullopt, access_mode::read},
                         Access{name, 4, 8, access_mode::write}};
    p.record(e, s);
    EXPECT_TRUE(round_trips(p)) << shown(name);
  }
}

TEST(SpecWriter, PlainNamesStayPlain) {
  Program p;
  p.kernel(p.add_stream("s1"), 1);
  p.last().accesses = {Access{"d_a", 0, std::nullopt, access_mode::read}};
  EXPECT_NE(to_spec(p).find("{op: kernel, stream: s1, time: 1, label: Kernel, reads: [d_a]}"),
            std::string::npos)
      << to_spec(p);
}

TEST(SpecWriter, DoublesReadBackToTheBit) {
  const std::vector<double> times = {0.0,
                                     -0.0,
                                     0.1,
                                     1e-9,
                                     123456.789,
                                     1.0 / 3.0,
                                     0.1 + 0.2,
                                     5e-324,
                                     2.2250738585072014e-308,
                                     overlap::limits::max_time,
                                     std::nextafter(overlap::limits::max_time, 0.0),
                                     999999999999.9999,
                                     9007199254.740993};
  Program p;
  const stream_id s = p.add_stream("s");
  for (const double t : times) p.kernel(s, t, t > 0.0 && t <= 1.0 ? t : 1.0);
  p.kernel(s, 1, std::nextafter(0.0, 1.0));
  p.kernel(s, 1, std::nextafter(1.0, 0.0));
  EXPECT_TRUE(round_trips(p));
  EXPECT_NE(to_spec(p).find("time: 0.1, share: 0.1,"), std::string::npos) << to_spec(p);
  EXPECT_NE(to_spec(p).find("time: 123456.789,"), std::string::npos) << to_spec(p);
}

TEST(SpecWriter, HeaderCommentOpensTheFile) {
  Program p;
  p.host_work(1);
  const std::string text = to_spec(p, "Captured by overlap trace.\n\nfrom ./app\n");
  EXPECT_EQ(text.rfind("# Captured by overlap trace.\n#\n# from ./app\ntime_unit: ms\n", 0), 0u) << text;
  EXPECT_TRUE(round_trips(p));
  EXPECT_EQ(to_spec(p, "").rfind("time_unit: ms\n", 0), 0u);
}

TEST(SpecWriter, HeaderCommentCannotEscapeItsLines) {
  Program p;
  p.name = "real";
  p.host_work(1);
  // Every kind of line break starts a new comment line, so "name: fake" stays a comment.
  for (const std::string_view line_break : {"\n", "\r\n", "\r", "\xC2\x85", "\xE2\x80\xA8", "\xE2\x80\xA9"}) {
    const std::string comment = fmt::format("first{}name: fake\x01", line_break);
    const std::string text = to_spec(p, comment);
    EXPECT_EQ(text.rfind("# first\n# name: fake?\nname: real\n", 0), 0u) << shown(text);
    EXPECT_EQ(parse_spec(text, "x").program.name, "real");
  }
}

TEST(SpecWriter, RefusesProgramsNoSpecExpresses) {
  EXPECT_THROW((void)to_spec(Program{}), invalid_input);  // a spec's ops: may not be empty

  Program blocking_default;
  blocking_default.kernel(blocking_default.add_stream("default"), 1);
  EXPECT_THROW((void)to_spec(blocking_default), invalid_input);

  Program sync_copy_on_a_stream;
  Op copy;
  copy.kind = op_kind::copy;
  copy.stream = sync_copy_on_a_stream.add_stream("s1");
  copy.mode = call_mode::synchronous;
  copy.bytes = 4;
  sync_copy_on_a_stream.append(copy);
  try {
    (void)to_spec(sync_copy_on_a_stream);
    ADD_FAILURE() << "no error";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0]: a sync copy on stream 's1'"), std::string::npos)
        << e.what();
  }
}

// ---- the format extensions the writer needs ----

TEST(SpecWriter, SpecDeclaresDefaultStreamsOnlyWithTheirOwnKind) {
  const Program p = parse_spec(R"(
streams:
  - {name: per_thread 1, kind: per_thread_default}
  - {name: per_thread, kind: per_thread_default, priority: 2}
  - {name: default, kind: legacy_default}
ops:
  - {op: kernel, stream: per_thread, time: 1}
  - {op: kernel, stream: default, time: 1}
)",
                               "x")
                        .program;
  ASSERT_EQ(p.streams().size(), 3u);
  EXPECT_EQ(p.ops()[0].stream, 1u);  // `per_thread` is the one declared so, not the first per-thread stream
  EXPECT_EQ(p.ops()[1].stream, 2u);
  EXPECT_EQ(p.streams()[1].priority, 2);
  EXPECT_THROW((void)parse_spec("streams: [default]\nops: [{op: host_work, time: 1}]", "x"), invalid_input);
  EXPECT_THROW(
      (void)parse_spec("streams: [{name: per_thread, kind: legacy_default}]\nops: [{op: host_work, time: 1}]",
                       "x"),
      invalid_input);
}

TEST(SpecWriter, SpecMemsetTakesSync) {
  const Program p = parse_spec("ops: [{op: memset, stream: default, bytes: 4, sync: true}]", "x").program;
  EXPECT_EQ(p.ops()[0].mode, call_mode::synchronous);
}

// ---- random programs ----

/// Programs of random ops that Program accepts: every kind, every stream
/// kind, awkward names, extreme numbers, and noise in the fields an op's
/// kind ignores (which the writer must leave out).
class RandomProgram {
 public:
  explicit RandomProgram(std::uint32_t seed) : rng_(seed) {}

  Program make() {
    if (chance(0.5)) program_.name = name();
    program_.time_unit = name();
    const int steps = between(1, 40);
    for (int i = 0; i < steps; ++i) step();
    if (program_.ops().empty()) program_.host_work(time());
    return std::move(program_);
  }

 private:
  void step() {
    if (chance(0.08)) return add_stream();
    if (chance(0.06)) return add_event();
    if (chance(0.03)) return (void)program_.legacy_default_stream();
    add_op();
  }

  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  int between(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& options) {
    return options[static_cast<std::size_t>(between(0, static_cast<int>(options.size()) - 1))];
  }
  std::uint64_t large() {
    return chance(0.2) ? overlap::limits::max_bytes
                       : std::uniform_int_distribution<std::uint64_t>(0, overlap::limits::max_bytes)(rng_);
  }
  std::uint64_t count() { return chance(0.5) ? static_cast<std::uint64_t>(between(0, 4096)) : large(); }

  std::string name() { return pick(awkward_names()); }

  /// A name no stream or event has yet, and no reserved stream name.
  template <typename Taken>
  std::string fresh_name(Taken taken) {
    std::string n = name();
    for (int suffix = 2; taken(n) || n == "default" || n == "per_thread"; ++suffix)
      n = fmt::format("{} {}", name(), suffix);
    return n;
  }

  double time() {
    switch (between(0, 5)) {
      case 0: return pick(std::vector<double>{0.0, 0.1, 1e-9, 123456.789, 5e-324, overlap::limits::max_time});
      case 1: return std::uniform_real_distribution<double>(0.0, 1e6)(rng_);
      case 2: {  // any double from 0 to the time limit, from its bits
        const double d =
            std::fabs(std::bit_cast<double>(std::uniform_int_distribution<std::uint64_t>()(rng_)));
        return overlap::limits::is_time(d) ? d
                                           : std::fmod(std::isfinite(d) ? d : 1.5, overlap::limits::max_time);
      }
      default: return static_cast<double>(between(0, 100)) / 10.0;
    }
  }
  double share() {
    if (chance(0.3)) return 1.0;
    const double s = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    return s > 0.0 ? s : 0.5;
  }

  void add_stream() {
    const std::vector<stream_kind> kinds = {stream_kind::blocking, stream_kind::non_blocking,
                                            stream_kind::per_thread_default, stream_kind::legacy_default};
    const stream_kind kind = pick(kinds);
    const int priority = chance(0.5) ? 0 : between(-3, 3);
    const bool has_legacy =
        std::any_of(program_.streams().begin(), program_.streams().end(),
                    [](const Stream& s) { return s.kind == stream_kind::legacy_default; });
    if (kind == stream_kind::legacy_default && has_legacy) return;
    std::string stream_name =
        fresh_name([&](const std::string& n) { return program_.find_stream(n).has_value(); });
    if (kind == stream_kind::legacy_default && chance(0.5)) stream_name = "default";
    if (kind == stream_kind::per_thread_default && chance(0.5) && !program_.find_stream("per_thread")) {
      stream_name = "per_thread";
    }
    if (program_.find_stream(stream_name)) return;
    (void)program_.add_stream(stream_name, kind, priority);
  }

  void add_event() {
    (void)program_.add_event(
        fresh_name([&](const std::string& n) { return program_.find_event(n).has_value(); }));
  }

  stream_id any_stream() {
    if (program_.streams().empty() || chance(0.1)) add_stream();
    if (program_.streams().empty()) return program_.legacy_default_stream();
    return static_cast<stream_id>(between(0, static_cast<int>(program_.streams().size()) - 1));
  }
  /// Where a spec's sync copy may run: a default stream.
  stream_id default_stream() {
    std::vector<stream_id> defaults;
    for (std::size_t i = 0; i < program_.streams().size(); ++i) {
      const stream_kind k = program_.streams()[i].kind;
      if (k == stream_kind::legacy_default || k == stream_kind::per_thread_default)
        defaults.push_back(static_cast<stream_id>(i));
    }
    return defaults.empty() || chance(0.2) ? program_.legacy_default_stream() : pick(defaults);
  }
  event_id any_event() {
    if (program_.events().empty()) add_event();
    return static_cast<event_id>(between(0, static_cast<int>(program_.events().size()) - 1));
  }

  void add_op() {
    Op op;
    op.kind = static_cast<op_kind>(between(0, static_cast<int>(op_kind::host_work)));
    add_noise(op);
    fill_kind_fields(op);
    fill_common_fields(op);
    program_.append(std::move(op));
  }

  /// Values in fields the kind ignores; the ones it uses are set after.
  void add_noise(Op& op) {
    if (!chance(0.3)) return;
    op.bytes = count();
    op.direction = static_cast<copy_direction>(between(0, 2));
    op.memory = static_cast<host_memory>(between(0, 1));
    op.mode = static_cast<call_mode>(between(0, 1));
    op.gpu_share = chance(0.5) ? std::numeric_limits<double>::quiet_NaN() : -3.0;
    op.duration = time();
    if (!program_.streams().empty()) op.stream = any_stream();
    if (!program_.events().empty()) op.event = any_event();
  }

  void fill_kind_fields(Op& op) {
    if (takes_time(op.kind)) op.duration = chance(0.7) ? std::optional<double>(time()) : std::nullopt;
    if (op.kind == op_kind::kernel || op.kind == op_kind::host_function || op.kind == op_kind::host_work) {
      op.duration = time();
    }
    if (takes_bytes(op.kind)) {
      op.bytes = count();
      op.mode = static_cast<call_mode>(between(0, 1));
    }
    if (op.kind == op_kind::copy) {
      op.direction = static_cast<copy_direction>(between(0, 2));
      op.memory = static_cast<host_memory>(between(0, 1));
    }
    if (op.kind == op_kind::kernel) op.gpu_share = share();
    if (op.kind == op_kind::kernel) op.prints = chance(0.3);
    if (takes_event(op.kind)) op.event = any_event();
    if (takes_stream(op.kind)) {
      const bool sync_copy = op.kind == op_kind::copy && op.mode == call_mode::synchronous;
      op.stream = sync_copy ? default_stream() : any_stream();
    }
  }

  void fill_common_fields(Op& op) {
    if (chance(0.5)) op.label = name();
    if (chance(0.3)) op.item = name();
    if (chance(0.3)) op.chunk = chance(0.5) ? between(0, 16) : std::numeric_limits<std::int64_t>::max();
    const int accesses = between(0, 3);
    for (int i = 0; i < accesses; ++i) {
      Access a;
      a.buffer = name();
      a.offset = chance(0.5) ? 0 : count();
      if (chance(0.6)) a.size = count();
      a.mode = chance(0.5) ? access_mode::read : access_mode::write;
      op.accesses.push_back(std::move(a));
    }
  }

  std::mt19937 rng_;
  Program program_;
};

TEST(SpecWriter, RandomProgramsRoundTrip) {
  constexpr std::uint32_t kPrograms = 500;
  for (std::uint32_t seed = 0; seed < kPrograms; ++seed) {
    const Program p = RandomProgram(seed).make();
    ASSERT_TRUE(round_trips(p)) << "seed " << seed;
  }
}

}  // namespace
