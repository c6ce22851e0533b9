#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <locale>
#include <sstream>
#include <string>

#include "overlap/core/error.hpp"
#include "overlap/io/spec.hpp"

namespace {

using namespace overlap;
using overlap::io::load_spec;
using overlap::io::parse_spec;

std::filesystem::path example(const char* name) {
  return std::filesystem::path(OVERLAP_SOURCE_DIR) / "examples" / name;
}

/// The error message parse_spec gives for `text` read as "bad.yaml".
std::string error_of(const std::string& text) {
  try {
    (void)parse_spec(text, "bad.yaml");
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

/// Asserts the message starts "bad.yaml:<line>: <field>:" and mentions `problem`.
void expect_error(const std::string& text, int line, const std::string& field, const std::string& problem) {
  const std::string message = error_of(text);
  const std::string prefix = "bad.yaml:" + std::to_string(line) + ": " + field + ": ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << "want prefix '" << prefix << "' in: " << message;
  EXPECT_NE(message.find(problem), std::string::npos) << "want '" << problem << "' in: " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

void expect_same_op(const Op& a, const Op& b, std::size_t index) {
  SCOPED_TRACE("op " + std::to_string(index));
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.event, b.event);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.item, b.item);
  EXPECT_EQ(a.chunk, b.chunk);
  EXPECT_EQ(a.duration, b.duration);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.direction, b.direction);
  EXPECT_EQ(a.memory, b.memory);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.gpu_share, b.gpu_share);
  EXPECT_EQ(a.accesses.size(), b.accesses.size());
}

void expect_same_program(const Program& a, const Program& b) {
  ASSERT_EQ(a.streams().size(), b.streams().size());
  for (std::size_t i = 0; i < a.streams().size(); ++i) {
    EXPECT_EQ(a.streams()[i].name, b.streams()[i].name);
    EXPECT_EQ(a.streams()[i].kind, b.streams()[i].kind);
  }
  EXPECT_EQ(a.events(), b.events());
  ASSERT_EQ(a.ops().size(), b.ops().size());
  for (std::size_t i = 0; i < a.ops().size(); ++i) expect_same_op(a.ops()[i], b.ops()[i], i);
}

// ---- the examples ----

TEST(Spec, Seed004YamlIsTheTwoStreamPipeline) {
  const io::Spec spec = load_spec(example("seed004.yaml"));
  const Program& p = spec.program;
  EXPECT_EQ(spec.device, "unit");
  EXPECT_EQ(p.name, "seed004-2-stream-pipeline");
  EXPECT_EQ(p.time_unit, "units");
  ASSERT_EQ(p.streams().size(), 2u);
  EXPECT_EQ(p.streams()[0].name, "Stream1");
  EXPECT_EQ(p.streams()[1].name, "Stream2");
  EXPECT_EQ(p.streams()[1].kind, stream_kind::blocking);
  ASSERT_EQ(p.ops().size(), 7u);
  const char* labels[] = {"H2D", "Kernel", "D2H"};
  for (std::size_t i = 0; i < 6; ++i) {
    const Op& op = p.ops()[i];
    EXPECT_EQ(op.label, labels[i % 3]) << i;
    EXPECT_EQ(op.item, i < 3 ? "A" : "B") << i;
    EXPECT_EQ(op.stream, i < 3 ? 0u : 1u) << i;
    EXPECT_EQ(op.duration, 1.0) << i;
  }
  EXPECT_EQ(p.ops()[6].kind, op_kind::device_synchronize);
}

TEST(Spec, Seed004JsonGivesTheSameProgram) {
  const io::Spec yaml = load_spec(example("seed004.yaml"));
  const io::Spec json = load_spec(example("seed004.json"));
  EXPECT_EQ(json.device, yaml.device);
  EXPECT_EQ(json.program.name, yaml.program.name);
  EXPECT_EQ(json.program.time_unit, yaml.program.time_unit);
  expect_same_program(json.program, yaml.program);
}

TEST(Spec, Seed001PipelineSplitsTotalsOverFourChunks) {
  const Program p = load_spec(example("seed001-4chunks-2streams.yaml")).program;
  ASSERT_EQ(p.streams().size(), 2u);
  ASSERT_EQ(p.ops().size(), 13u);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(p.ops()[i].duration, i % 3 == 1 ? 5.0 : 7.5) << i;
    EXPECT_EQ(p.ops()[i].stream, (i / 3) % 2) << i;
  }
}

TEST(Spec, Seed001ExplicitEqualsTheOneChunkPipeline) {
  const Program explicit_form = load_spec(example("seed001-explicit.yaml")).program;
  const Program pipeline =
      parse_spec("pipeline: {chunks: 1, total_time: {h2d: 30, kernel: 20, d2h: 30}}", "inline.yaml").program;
  expect_same_program(explicit_form, pipeline);
}

TEST(Spec, DefaultStreamTrapPutsTheCudaMemcpyOnTheLegacyDefaultStream) {
  const Program p = load_spec(example("default-stream-trap.yaml")).program;
  ASSERT_EQ(p.ops().size(), 5u);
  const Op& memcpy = p.ops()[2];
  EXPECT_EQ(memcpy.kind, op_kind::copy);
  EXPECT_EQ(memcpy.mode, call_mode::synchronous);
  EXPECT_EQ(memcpy.memory, host_memory::pageable);
  EXPECT_EQ(memcpy.bytes, 64u << 20);
  ASSERT_TRUE(memcpy.stream.has_value());
  EXPECT_EQ(p.streams()[*memcpy.stream].kind, stream_kind::legacy_default);
  EXPECT_EQ(p.ops()[3].label, "kernelB");
  EXPECT_EQ(p.streams()[*p.ops()[3].stream].name, "s2");
  ASSERT_EQ(p.ops()[1].accesses.size(), 2u);
  EXPECT_EQ(p.ops()[1].accesses[0].buffer, "d_a");
  EXPECT_EQ(p.ops()[1].accesses[0].mode, access_mode::read);
  EXPECT_EQ(p.ops()[1].accesses[1].mode, access_mode::write);
}

TEST(Spec, EveryYamlBlockInTheFormatDocParses) {
  std::ifstream file(std::filesystem::path(OVERLAP_SOURCE_DIR) / "docs" / "spec-format.md");
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  int blocks = 0;
  for (auto start = doc.find("```yaml\n"); start != std::string::npos; start = doc.find("```yaml\n", start)) {
    start += 8;
    const auto end = doc.find("```", start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_NO_THROW((void)parse_spec(doc.substr(start, end - start), "spec-format.md")) << "block " << blocks;
    ++blocks;
  }
  EXPECT_EQ(blocks, 4);  // pipeline, chunk schedule, explicit, several GPUs
}

// ---- the explicit form ----

TEST(Spec, ExplicitFormReadsEveryOpKind) {
  const std::string text = R"(
time_unit: us
streams:
  - {name: s1, kind: non_blocking, priority: -1}
  - s2
events: [e1]
ops:
  - {op: malloc, time: 0.5}
  - {op: host_alloc}
  - {op: h2d, stream: s1, bytes: 1 KiB}
  - {op: copy, dir: d2d, stream: s2, bytes: 8, time: 2}
  - {op: d2h, sync: true, bytes: 16}
  - {op: h2d, stream: s1, bytes: 4, memory: pageable}
  - {op: kernel, stream: s1, time: 3, share: 0.25, label: k, item: A, chunk: 2}
  - {op: memset, stream: default, bytes: 64}
  - {op: host_func, stream: per_thread, time: 1}
  - {op: record, event: e1, stream: s1}
  - {op: wait, stream: s2, event: e1}
  - {op: stream_sync, stream: s2}
  - {op: event_sync, event: e1}
  - {op: host_work, time: 4}
  - {op: free}
  - {op: host_free, time: 1}
  - {op: device_sync}
)";
  const Program p = parse_spec(text, "all.yaml").program;
  EXPECT_EQ(p.time_unit, "us");
  ASSERT_EQ(p.ops().size(), 17u);
  ASSERT_EQ(p.streams().size(), 4u);  // s1, s2, then default and per_thread on first use
  EXPECT_EQ(p.streams()[0].kind, stream_kind::non_blocking);
  EXPECT_EQ(p.streams()[0].priority, -1);
  EXPECT_EQ(p.streams()[1].kind, stream_kind::blocking);

  const std::vector<op_kind> kinds = {op_kind::device_allocate,
                                      op_kind::host_allocate,
                                      op_kind::copy,
                                      op_kind::copy,
                                      op_kind::copy,
                                      op_kind::copy,
                                      op_kind::kernel,
                                      op_kind::memset,
                                      op_kind::host_function,
                                      op_kind::event_record,
                                      op_kind::stream_wait_event,
                                      op_kind::stream_synchronize,
                                      op_kind::event_synchronize,
                                      op_kind::host_work,
                                      op_kind::device_free,
                                      op_kind::host_free,
                                      op_kind::device_synchronize};
  for (std::size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(p.ops()[i].kind, kinds[i]) << i;

  EXPECT_EQ(p.ops()[0].duration, 0.5);
  EXPECT_EQ(p.ops()[1].duration, 0.0);  // an implicit sync without time costs nothing
  EXPECT_EQ(p.ops()[2].bytes, 1024u);
  EXPECT_EQ(p.ops()[2].memory, host_memory::pinned);
  EXPECT_FALSE(p.ops()[2].duration.has_value());
  EXPECT_EQ(p.ops()[3].direction, copy_direction::d2d);
  EXPECT_EQ(p.ops()[3].stream, 1u);
  EXPECT_EQ(p.ops()[4].mode, call_mode::synchronous);
  EXPECT_EQ(p.ops()[4].memory, host_memory::pageable);
  EXPECT_EQ(p.streams()[*p.ops()[4].stream].kind, stream_kind::legacy_default);
  EXPECT_EQ(p.ops()[5].memory, host_memory::pageable);
  EXPECT_EQ(p.ops()[6].label, "k");
  EXPECT_EQ(p.ops()[6].item, "A");
  EXPECT_EQ(p.ops()[6].chunk, 2);
  EXPECT_EQ(p.ops()[6].gpu_share, 0.25);
  EXPECT_EQ(p.ops()[7].stream, p.ops()[4].stream);
  EXPECT_EQ(p.streams()[*p.ops()[8].stream].kind, stream_kind::per_thread_default);
  EXPECT_EQ(p.ops()[9].event, 0u);
  EXPECT_EQ(p.ops()[10].stream, 1u);
}

TEST(Spec, ParsesAccessesInEveryForm) {
  const std::string text = R"(
buffers: {buf: 64, out: 1 KiB}
ops:
  - op: kernel
    stream: default
    time: 1
    reads: [buf, "buf[16:48]", "buf[16:]", "buf[:8]", {buffer: out, offset: 4, bytes: 12}]
    writes: [{buffer: out}]
)";
  const Program p = parse_spec(text, "acc.yaml").program;
  const std::vector<Access>& a = p.ops()[0].accesses;
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].buffer, "buf");
  EXPECT_EQ(a[0].offset, 0u);
  EXPECT_FALSE(a[0].size.has_value());
  EXPECT_EQ(a[1].offset, 16u);
  EXPECT_EQ(a[1].size, 32u);
  EXPECT_EQ(a[2].offset, 16u);
  EXPECT_FALSE(a[2].size.has_value());
  EXPECT_EQ(a[3].offset, 0u);
  EXPECT_EQ(a[3].size, 8u);
  EXPECT_EQ(a[4].buffer, "out");
  EXPECT_EQ(a[4].offset, 4u);
  EXPECT_EQ(a[4].size, 12u);
  EXPECT_EQ(a[4].mode, access_mode::read);
  EXPECT_EQ(a[5].mode, access_mode::write);
}

TEST(Spec, AccessesNeedDeclaredBuffersOnlyWhenBuffersIsGiven) {
  const std::string op = "  - {op: kernel, stream: default, time: 1, reads: [\"x[0:8]\"]}\n";
  EXPECT_NO_THROW((void)parse_spec("ops:\n" + op, "ok.yaml"));
  expect_error("buffers: {buf: 4}\nops:\n" + op, 3, "ops[0].reads[0]", "'x' is not a declared buffer");
  expect_error("buffers: {x: 4}\nops:\n" + op, 3, "ops[0].reads[0]", "outside buffer 'x' of 4 bytes");
  expect_error("ops:\n  - {op: kernel, stream: default, time: 1, writes: [\"x[8:4]\"]}\n", 2,
               "ops[0].writes[0]", "ends before it starts");
}

TEST(Spec, SyncCopiesMayOnlyNameADefaultStream) {
  EXPECT_NO_THROW((void)parse_spec("ops: [{op: h2d, sync: true, stream: per_thread, bytes: 4}]", "ok.yaml"));
  expect_error("streams: [s1]\nops:\n  - {op: h2d, sync: true, stream: s1, bytes: 4}\n", 3, "ops[0].stream",
               "a sync copy cannot run on 's1'");
}

// ---- errors: file, line, field, problem ----

TEST(Spec, UnknownFieldListsTheAllowedOnes) {
  expect_error("ops:\n  - op: kernel\n    stream: default\n    tim: 1\n", 4, "ops[0]",
               "unknown field 'tim' (expected one of: op, stream, time, share, prints, label");
  expect_error("name: x\nnmae: y\npipeline: {chunks: 1}\n", 2, "top level", "unknown field 'nmae'");
  expect_error("pipeline:\n  chunks: 2\n  stage_time: {h2d: 1, kernal: 2}\n", 3, "pipeline.stage_time",
               "unknown field 'kernal'");
}

TEST(Spec, NegativeOrNonNumericTime) {
  expect_error("ops:\n  - {op: kernel, stream: default, time: -2}\n", 2, "ops[0].time",
               "-2 is out of range (expected a number from 0 to 1e12)");
  expect_error("ops:\n  - op: host_work\n    time: soon\n", 3, "ops[0].time", "'soon' is not a number");
  expect_error("pipeline:\n  chunks: 2\n  total_time:\n    kernel: -1\n", 4, "pipeline.total_time.kernel",
               "out of range");
  expect_error("ops:\n  - op: kernel\n    stream: default\n", 2, "ops[0].time", "required");
}

// A host program's global C++ locale must not change how a spec reads: here
// one whose decimal point is a comma ("1,5"), as de_DE's is.
struct comma_decimal : std::numpunct<char> {
  [[nodiscard]] char do_decimal_point() const override { return ','; }
};

TEST(Spec, NumbersReadTheSameUnderAnyGlobalLocale) {
  const std::locale previous = std::locale::global(std::locale(std::locale::classic(), new comma_decimal));
  const Program program =
      parse_spec("ops:\n  - {op: host_work, time: 1.5}\n  - {op: host_work, time: +2e-1}\n", "locale.yaml")
          .program;
  std::locale::global(previous);
  ASSERT_EQ(program.ops().size(), 2u);
  EXPECT_DOUBLE_EQ(*program.ops()[0].duration, 1.5);
  EXPECT_DOUBLE_EQ(*program.ops()[1].duration, 0.2);
}

TEST(Spec, IntegersInYamlCoreSchemaForms) {
  EXPECT_EQ(parse_spec("pipeline: {chunks: 0x10, stage_time: {h2d: 1}}\n", "hex.yaml").program.ops().size(),
            parse_spec("pipeline: {chunks: 16, stage_time: {h2d: 1}}\n", "dec.yaml").program.ops().size());
  EXPECT_EQ(parse_spec("pipeline: {chunks: 0o20, stage_time: {h2d: 1}}\n", "oct.yaml").program.ops().size(),
            parse_spec("pipeline: {chunks: +16, stage_time: {h2d: 1}}\n", "plus.yaml").program.ops().size());
  expect_error("pipeline:\n  chunks: 1.5\n", 2, "pipeline.chunks", "'1.5' is not an integer");
  expect_error("pipeline:\n  chunks: 0x\n", 2, "pipeline.chunks", "'0x' is not an integer");
  expect_error("pipeline:\n  chunks: 99999999999999999999\n", 2, "pipeline.chunks", "is not an integer");
  expect_error("ops:\n  - op: host_work\n    time: 1.5.2\n", 3, "ops[0].time", "'1.5.2' is not a number");
}

TEST(Spec, UnknownStreamAndEvent) {
  expect_error(
      "streams: [s1]\nops:\n  - {op: h2d, stream: s1, bytes: 4}\n  - {op: kernel, stream: s9, time: 1}\n", 4,
      "ops[1].stream",
      "'s9' is not a declared stream (expected a declared stream or a default one: s1, default, per_thread)");
  expect_error("streams: [s1]\nevents: [e1]\nops:\n  - {op: record, event: e2, stream: s1}\n", 4,
               "ops[0].event", "'e2' is not a declared event (expected one of: e1)");
  expect_error("ops:\n  - {op: kernel, time: 1}\n", 2, "ops[0].stream", "required");
}

TEST(Spec, ZeroStreamsOrChunks) {
  expect_error("name: z\npipeline:\n  chunks: 4\n  streams: 0\n", 4, "pipeline.streams",
               "0 is out of range (expected an integer from 1 to");
  expect_error("pipeline:\n  chunks: 0\n", 2, "pipeline.chunks", "0 is out of range");
  expect_error("pipeline:\n  items: [A, B]\n  chunks: 3\n", 3, "pipeline.chunks",
               "3 does not match the 2 items");
  expect_error("pipeline:\n  items: [A, B, A]\n", 2, "pipeline.items[2]", "'A' repeats pipeline.items[0]");
}

TEST(Spec, WrongTypes) {
  expect_error("pipeline:\n  chunks: many\n", 2, "pipeline.chunks", "'many' is not an integer");
  expect_error("pipeline:\n  chunks: [1]\n", 2, "pipeline.chunks", "a list is not an integer");
  expect_error("pipeline:\n  chunks: 2\n  synchronize_at_end: maybe\n", 3, "pipeline.synchronize_at_end",
               "is not a boolean");
  expect_error("ops: {op: kernel}\n", 1, "ops", "a map is not a list");
  expect_error("ops:\n  - {op: h2d, stream: default, bytes: -4}\n", 2, "ops[0].bytes",
               "'-4' is not a byte count");
  expect_error("ops:\n  - {op: teleport}\n", 2, "ops[0].op",
               "'teleport' is not an op (expected one of: h2d, d2h");
  expect_error("pipeline: {chunks: 2, memory: sticky}\n", 1, "pipeline.memory",
               "'sticky' is not allowed here (expected one of: pinned, pageable)");
}

TEST(Spec, SyntaxErrorsReportTheirLine) {
  expect_error("name: x\nops: [\n  {op: kernel\n", 4, "syntax error", "expected well-formed YAML or JSON");
  const std::string message = error_of("name: x\npipeline:\n  chunks: 2\n   streams: 1\n");
  EXPECT_EQ(message.rfind("bad.yaml:4: syntax error: ", 0), 0u) << message;
}

TEST(Spec, WholeFileMistakes) {
  expect_error("", 1, "top level", "the file is empty");
  expect_error("# only a comment\n", 1, "top level", "the file is empty");
  expect_error("name: x\n", 1, "top level", "neither pipeline: nor ops: given");
  expect_error("pipeline: {chunks: 1}\nops: [{op: device_sync}]\n", 2, "ops",
               "both pipeline: and ops: given");
  expect_error("pipeline: {chunks: 1}\nstreams: [s1]\n", 2, "streams", "not allowed with pipeline:");
  expect_error("- a\n- b\n", 1, "top level", "a list is not a map");
  expect_error("name: x\npipeline:\n  chunks: 2\n", 2, "pipeline", "no stage has a time or bytes");
  expect_error("pipeline:\n  chunks: 1\n  stage_time: {h2d: 1}\n  total_time: {h2d: 1}\n", 4,
               "pipeline.total_time", "both stage_time and total_time given");
}

TEST(Spec, LoadSpecNamesTheFileInErrors) {
  const std::string missing = (std::filesystem::temp_directory_path() / "no-such-overlap-spec.yaml").string();
  try {
    (void)load_spec(missing);
    FAIL() << "expected invalid_input";
  } catch (const invalid_input& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot read " + missing + ": ", 0), 0u) << e.what();
  }
}

}  // namespace
