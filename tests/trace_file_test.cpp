// Reading trace lines (src/trace/trace_file.cpp): the common shape of a line
// is read by a parser of its own, anything else by nlohmann::json; a line
// means the same whichever read it (JSON escapes, fractions, a boolean where
// a number is expected, repeated keys), and lines are read across the
// reader's blocks without losing or joining any.
#include "overlap/trace/trace_file.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {
namespace {

const std::string header = R"({"t":"header","version":2,"pid":7,"exe":"/apps/small","start":1})"
                           "\n";

trace::RawTrace read(const std::string& text) {
  std::istringstream in(text);
  return trace::read_trace(in, "t.jsonl");
}

std::string read_error(const std::string& text) {
  try {
    (void)read(text);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "";
}

TEST(TraceFile, ALineOutsideTheCommonShapeMeansWhatJsonSays) {
  // Escapes and non-ASCII (the fallback's), a fraction, booleans where
  // integers are read, null for an absent stream, a repeated key (the last
  // counts), spaces and a carriage return around the tokens.
  const trace::RawTrace t = read(
      header +
      R"({"t":"call","corr":3,"api":"cudaMemcpyAsync","start":10,"end":20,"status":true,"caller":"f\"x\u00e9\"+0x4",)"
      R"("cls":"copy","bytes":1.5e3,"stream":null,"async":true,"corr":4} )"
      "\r\n" +
      R"( { "t" : "call", "corr" : 5, "api" : "cudaLaunchKernel", "start" : 30, "end" : 40, "cls" : "launch",)"
      R"( "stream" : 13, "grid" : [2, 3, 4], "ptrs" : [], "kernel" : "k" } )"
      "\n" +
      R"({"t":"stream","stream":13,"priority":-1,"kind":"non_blocking"})"
      "\n");
  ASSERT_EQ(t.calls.size(), 2U);
  EXPECT_EQ(t.calls[0].corr, 4U);
  EXPECT_EQ(t.calls[0].status, 1);  // a boolean converts to int, as nlohmann::json converts it
  EXPECT_EQ(t.calls[0].caller, "f\"x\xc3\xa9\"+0x4");
  EXPECT_EQ(t.calls[0].bytes, 1500U);
  EXPECT_FALSE(t.calls[0].stream.has_value());
  EXPECT_TRUE(t.calls[0].async);
  EXPECT_EQ(t.calls[0].cls, trace::call_class::copy);
  EXPECT_EQ(t.calls[1].corr, 5U);
  EXPECT_EQ(t.calls[1].blocks, 24U);
  EXPECT_TRUE(t.calls[1].ptrs.empty());
  EXPECT_EQ(t.calls[1].stream, 13U);
  ASSERT_EQ(t.streams.size(), 1U);
  EXPECT_EQ(t.streams[0].priority, -1);
  EXPECT_EQ(t.streams[0].kind, "non_blocking");
}

TEST(TraceFile, AFieldOfTheWrongTypeIsNamedWithItsType) {
  // nlohmann::json converts no boolean to its own unsigned type, so neither does the reader.
  EXPECT_EQ(read_error(header + R"({"t":"call","corr":true,"api":"a","start":1,"end":2})"
                                "\n"),
            "t.jsonl:2: corr: has the wrong type (boolean)");
  EXPECT_EQ(read_error(header + R"({"t":"call","api":"a","start":1,"end":2,"grid":[1,"2"]})"
                                "\n"),
            "t.jsonl:2: grid: has the wrong type (array)");
  EXPECT_EQ(read_error(header + R"({"t":"call","api":"a","start":{"ns":1},"end":2})"
                                "\n"),
            "t.jsonl:2: start: has the wrong type (object)");
  EXPECT_EQ(read_error(header + R"({"t":"call","api":"a","start":01,"end":2})"
                                "\n{}\n"),
            "t.jsonl:2: not a JSON object (expected one record per line)");
}

TEST(TraceFile, LinesAreReadWholeAcrossTheReadersBlocks) {
  // Over a MiB of records, each a different length, the last with no newline:
  // every one is read once, whole, whatever block boundary it straddles.
  std::string text = header;
  const int calls = 30000;
  for (int i = 0; i < calls; ++i) {
    text += R"({"t":"call","corr":)" + std::to_string(i) + R"(,"api":"cudaLaunchKernel","start":)" +
            std::to_string(i) + R"(,"end":)" + std::to_string(i + 1) + R"(,"kernel":")" +
            std::string(static_cast<std::size_t>(i % 37), 'k') + "\"}";
    if (i + 1 < calls) text += "\n";
  }
  ASSERT_GT(text.size(), std::size_t{1} << 20);
  const trace::RawTrace t = read(text);
  ASSERT_EQ(t.calls.size(), static_cast<std::size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    ASSERT_EQ(t.calls[static_cast<std::size_t>(i)].corr, static_cast<std::uint64_t>(i));
    ASSERT_EQ(t.calls[static_cast<std::size_t>(i)].kernel.size(), static_cast<std::size_t>(i % 37));
  }
}

TEST(TraceFile, AReaderFedInPiecesOfAnySizeReadsWhatTheWholeFileGives) {
  // As a running app's file is read: pieces that end mid-line, mid-number,
  // on a newline, one byte long; then a last line cut short, which is left out.
  std::string text = header;
  for (int i = 0; i < 500; ++i) {
    text += R"({"t":"call","corr":)" + std::to_string(i) + R"(,"api":"cudaMemcpyAsync","start":)" +
            std::to_string(10 * i) + R"(,"end":)" + std::to_string(10 * i + 3) + R"(,"bytes":)" +
            std::to_string(i * 7919) + "}\n";
  }
  const trace::RawTrace whole = read(text + R"({"t":"call","corr":9)");
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{4099}}) {
    trace::TraceReader reader("t.jsonl");
    const std::string all = text + R"({"t":"call","corr":9)";
    for (std::size_t at = 0; at < all.size(); at += piece)
      reader.feed(std::string_view(all).substr(at, piece));
    const trace::RawTrace t = std::move(reader).finish();
    ASSERT_EQ(t.calls.size(), whole.calls.size()) << "pieces of " << piece;
    for (std::size_t i = 0; i < t.calls.size(); ++i) {
      ASSERT_EQ(t.calls[i].corr, whole.calls[i].corr);
      ASSERT_EQ(t.calls[i].start, whole.calls[i].start);
      ASSERT_EQ(t.calls[i].bytes, whole.calls[i].bytes);
    }
  }
  EXPECT_EQ(whole.calls.size(), 500U);
  // A bad line is an error once another line follows it, fed at once or later.
  trace::TraceReader reader("t.jsonl");
  reader.feed(header + "{not json\n");
  EXPECT_THROW(reader.feed("{}\n"), invalid_input);
}

TEST(TraceFile, AFractionNoIntegerCanHoldIsOutOfRange) {
  // Found by the trace_reader fuzz target: the cast was undefined behaviour.
  const std::string call = R"({"t":"call","corr":1,"api":"x","start":)";
  EXPECT_EQ(read_error(header + call + R"(1e30,"end":2})" + "\n"),
            "t.jsonl:2: start: is out of range (1e+30)");
  EXPECT_EQ(read_error(header + call + R"(-1.5e19,"end":2})" + "\n"),
            "t.jsonl:2: start: is out of range (-1.5e+19)");
  // One it can hold is truncated, as JSON readers do.
  EXPECT_EQ(read(header + call + R"(7.9,"end":8})" + "\n").calls.at(0).start, 7U);
}

TEST(TraceFile, ALineOverTheLimitIsRefusedAndOneAtItIsRead) {
  const std::size_t limit = limits::max_trace_line_bytes;
  const std::string prefix = R"({"t":"note","text":")";
  std::string at_limit = prefix + std::string(limit - prefix.size() - 2, 'a') + "\"}";
  ASSERT_EQ(at_limit.size(), limit);
  EXPECT_EQ(read(header + at_limit + "\n").unknown_records, 1U);
  EXPECT_EQ(read_error(header + at_limit + "a\n"),
            "t.jsonl:2: a record longer than 1048576 bytes (expected one record per line)");
  EXPECT_EQ(read_error(header + std::string(limit + 1, 'x')),
            "t.jsonl:2: a record longer than 1048576 bytes (expected one record per line)");
}

}  // namespace
}  // namespace overlap
