// CPU tests of the injection library's pure parts: JSON escaping and record
// building, the trace file's name, buffering and flushing into a temporary
// folder, the footer, the fork and signal paths of the writer, the names the
// file uses, and the caller search's frame filtering and symbol lookup.
//
// This file lives beside the library rather than in tests/ so that
// tests/CMakeLists.txt's glob does not pull it into overlap_tests, which
// does not link the injection code.
#include "record_writer.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "callers.hpp"
#include "env_record.hpp"
#include "trace_names.hpp"

namespace overlap::inject {
namespace {

std::string escaped(std::string_view text) {
  std::string out;
  append_json_escaped(out, text);
  return out;
}

TEST(JsonEscape, QuotesBackslashesAndNamedControls) {
  EXPECT_EQ(escaped(R"(say "hi")"), R"(say \"hi\")");
  EXPECT_EQ(escaped(R"(C:\path\file)"), R"(C:\\path\\file)");
  EXPECT_EQ(escaped("a\nb\tc\rd\be\ff"), R"(a\nb\tc\rd\be\ff)");
}

TEST(JsonEscape, OtherControlCharactersAsUnicodeEscapes) {
  EXPECT_EQ(escaped(std::string_view("\x01\x1f", 2)), R"(\u0001\u001f)");
  EXPECT_EQ(escaped(std::string_view("a\0b", 3)), R"(a\u0000b)");
  EXPECT_EQ(escaped("\x7f"), "\x7f");  // DEL needs no escape in JSON
}

TEST(JsonEscape, ValidUtf8IsKept) {
  EXPECT_EQ(escaped("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(escaped("\xE2\x82\xAC"), "\xE2\x82\xAC");          // euro sign
  EXPECT_EQ(escaped("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // emoji
}

TEST(JsonEscape, InvalidUtf8BecomesReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(escaped("a\xFF"
                    "b"),
            "a" + fffd + "b");                                        // never valid
  EXPECT_EQ(escaped("\xC3"), fffd);                                   // truncated at the end
  EXPECT_EQ(escaped("\xC0\xAF"), fffd + fffd);                        // overlong '/'
  EXPECT_EQ(escaped("\xED\xA0\x80"), fffd + fffd + fffd);             // a surrogate
  EXPECT_EQ(escaped("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
  EXPECT_EQ(escaped("\xE2\x82"
                    "x"),
            fffd + fffd + "x");  // cut short by ASCII
}

TEST(JsonLine, BuildsOneFlatObjectPerLine) {
  std::string out;
  JsonLine(out, "call")
      .number("corr", 7U)
      .number("status", -1)
      .number("big", UINT64_MAX)
      .boolean("async", true)
      .string("api", "cudaMemcpyAsync")
      .string("caller", "f(\"x\")+0x1a")
      .numbers("ptrs", std::vector<std::uint64_t>{1, 2, 3})
      .triple("grid", 4, 5, 6)
      .finish();
  EXPECT_EQ(
      out,
      R"({"t":"call","corr":7,"status":-1,"big":18446744073709551615,"async":true,"api":"cudaMemcpyAsync",)"
      R"("caller":"f(\"x\")+0x1a","ptrs":[1,2,3],"grid":[4,5,6]})"
      "\n");
}

TEST(JsonLine, AppendsAfterWhatIsThere) {
  std::string out = "{\"t\":\"x\"}\n";
  JsonLine(out, "y").numbers("empty", {}).finish();
  EXPECT_EQ(out, "{\"t\":\"x\"}\n{\"t\":\"y\",\"empty\":[]}\n");
}

TEST(EnvRecord, SetVariablesAreStringsAndUnsetOnesAreLeftOut) {
  std::string out;
  append_env_record(out, [](const char* name) -> const char* {
    const std::string_view n(name);
    if (n == "CUDA_DEVICE_MAX_CONNECTIONS") return "32";
    if (n == "CUDA_MODULE_LOADING") return "LAZY";
    return nullptr;  // CUDA_LAUNCH_BLOCKING unset
  });
  EXPECT_EQ(out, R"({"t":"env","CUDA_DEVICE_MAX_CONNECTIONS":"32","CUDA_MODULE_LOADING":"LAZY"})"
                 "\n");
}

TEST(EnvRecord, NothingSetIsAnEmptyRecordAndValuesAreEscaped) {
  std::string out;
  append_env_record(out, [](const char*) -> const char* { return nullptr; });
  EXPECT_EQ(out, "{\"t\":\"env\"}\n");
  out.clear();
  append_env_record(out, [](const char* name) -> const char* {
    return std::string_view(name) == "CUDA_LAUNCH_BLOCKING" ? "1\"\n" : nullptr;
  });
  EXPECT_EQ(out, R"({"t":"env","CUDA_LAUNCH_BLOCKING":"1\"\n"})"
                 "\n");
  EXPECT_EQ(trace_format_version, 2);
}

TEST(EnvRecord, CarriesTheRankOfAMultiProcessJob) {
  std::string out;
  append_env_record(out, [](const char* name) -> const char* {
    const std::string_view n(name);
    if (n == "RANK") return "3";
    if (n == "LOCAL_RANK") return "1";
    if (n == "OMPI_COMM_WORLD_RANK") return "7";
    return nullptr;
  });
  EXPECT_EQ(out, R"({"t":"env","RANK":"3","LOCAL_RANK":"1","OMPI_COMM_WORLD_RANK":"7"})"
                 "\n");
}

TEST(TraceFile, NamedAfterTheProcess) {
  EXPECT_EQ(RecordWriter::path_for("/tmp/traces", 123), "/tmp/traces/trace.123.jsonl");
  EXPECT_EQ(RecordWriter::path_for("/tmp/traces/", 123), "/tmp/traces/trace.123.jsonl");
  EXPECT_EQ(RecordWriter::path_for("", 42), "trace.42.jsonl");
}

/// A fresh folder under the system's temporary folder, removed afterwards.
class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "ovl_inject_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  [[nodiscard]] std::string path() const { return RecordWriter::path_for(dir_.string(), 1234); }

  [[nodiscard]] std::vector<std::string> lines() const {
    std::ifstream in(path());
    std::vector<std::string> result;
    for (std::string line; std::getline(in, line);) result.push_back(line);
    return result;
  }

  static std::string record(int n) {
    std::string out;
    JsonLine(out, "call").number("corr", n).finish();
    return out;
  }

  std::filesystem::path dir_;
};

TEST_F(WriterTest, BuffersUntilFlushed) {
  RecordWriter writer(path());
  std::string error;
  ASSERT_TRUE(writer.open(error)) << error;
  writer.append(record(1));
  writer.append(record(2) + record(3), 2);
  EXPECT_TRUE(lines().empty()) << "nothing is written below the flush size";
  writer.flush();
  EXPECT_EQ(lines(), (std::vector<std::string>{R"({"t":"call","corr":1})", R"({"t":"call","corr":2})",
                                               R"({"t":"call","corr":3})"}));
  EXPECT_EQ(writer.records_written(), 3U);
}

TEST_F(WriterTest, WritesWhenTheBufferPassesTheFlushSize) {
  RecordWriter writer(path(), /*flush_bytes=*/64);
  std::string error;
  ASSERT_TRUE(writer.open(error)) << error;
  for (int i = 0; i < 10; ++i) writer.append(record(i));  // 22 bytes each
  EXPECT_GE(lines().size(), 9U);
  EXPECT_EQ(lines().size() % 3, 0U) << "whole buffers go out, never part of a record";
}

TEST_F(WriterTest, FooterCountsRecordsAndDropsAndComesOnce) {
  RecordWriter writer(path());
  std::string error;
  ASSERT_TRUE(writer.open(error)) << error;
  writer.append(record(1));
  writer.append(record(2));
  writer.count_lost(3);
  EXPECT_TRUE(writer.finish("exit", 4, /*from_signal=*/false));
  EXPECT_FALSE(writer.finish("exit", 0, false)) << "the footer is written once";
  writer.append(record(3));  // after the footer: dropped
  writer.flush();
  const std::vector<std::string> written = lines();
  ASSERT_EQ(written.size(), 3U);
  EXPECT_EQ(written.back(), R"({"t":"footer","records":2,"dropped":7,"reason":"exit"})");
  EXPECT_TRUE(writer.finished());
}

TEST_F(WriterTest, FooterReasonKeepsOnlyPlainText) {
  RecordWriter writer(path());
  std::string error;
  ASSERT_TRUE(writer.open(error)) << error;
  EXPECT_TRUE(writer.finish("signal 15\"\\\n", 0, /*from_signal=*/true));
  EXPECT_EQ(lines().back(), R"({"t":"footer","records":0,"dropped":0,"reason":"signal 15"})");
}

TEST_F(WriterTest, OpenTruncatesAnOldFileOfTheSamePid) {
  {
    std::ofstream old(path());
    old << "stale\n";
  }
  RecordWriter writer(path());
  std::string error;
  ASSERT_TRUE(writer.open(error)) << error;
  writer.append(record(1));
  writer.flush();
  EXPECT_EQ(lines(), std::vector<std::string>{R"({"t":"call","corr":1})"});
}

TEST_F(WriterTest, OpenFailsWithAReason) {
  RecordWriter writer((dir_ / "missing" / "trace.1.jsonl").string());
  std::string error;
  EXPECT_FALSE(writer.open(error));
  EXPECT_FALSE(error.empty());
}

TEST_F(WriterTest, SignalModeNeverWaitsForAHeldLock) {
  RecordWriter writer(path());
  std::string error;
  ASSERT_TRUE(writer.open(error)) << error;
  writer.append(record(1));
  writer.before_fork();  // holds the lock, as an interrupted thread would
  writer.set_signal_mode(true);
  writer.append(record(2));  // must not block
  EXPECT_EQ(writer.records_lost(), 1U);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(writer.finish("signal 2", 0, /*from_signal=*/true));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "gives up after ~50 ms";
  writer.after_fork_in_parent();
}

TEST_F(WriterTest, AForkedChildNeverWritesTheParentsFile) {
  RecordWriter writer(path());
  std::string error;
  ASSERT_TRUE(writer.open(error)) << error;
  writer.append(record(1));
  writer.before_fork();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    writer.after_fork_in_child();
    writer.append(record(99));
    writer.flush();
    (void)writer.finish("exit", 0, false);
    ::_exit(0);
  }
  writer.after_fork_in_parent();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_TRUE(lines().empty()) << "the child wrote neither its records nor the parent's";
  EXPECT_TRUE(writer.finish("exit", 0, false));
  EXPECT_EQ(lines(), (std::vector<std::string>{R"({"t":"call","corr":1})",
                                               R"({"t":"footer","records":1,"dropped":0,"reason":"exit"})"}));
}

TEST(TraceNames, ApiNamesLoseEntryPointSuffixes) {
  EXPECT_EQ(api_base_name("cudaMemcpyAsync"), "cudaMemcpyAsync");
  EXPECT_EQ(api_base_name("cudaMemcpyAsync_ptsz"), "cudaMemcpyAsync");
  EXPECT_EQ(api_base_name("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(api_base_name("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync");
  EXPECT_EQ(api_base_name("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
  EXPECT_EQ(api_base_name("cuMemcpy3D"), "cuMemcpy3D") << "a digit that is not a version stays";
  EXPECT_EQ(api_base_name("cuStreamGetCaptureInfo_v3"), "cuStreamGetCaptureInfo");
  EXPECT_EQ(api_base_name("_v2"), "_v2");
  EXPECT_EQ(api_base_name(""), "");
}

TEST(TraceNames, CopyKinds) {
  using enum MemorySide;
  EXPECT_EQ(copy_kind_name(host, device), "h2d");
  EXPECT_EQ(copy_kind_name(device, host), "d2h");
  EXPECT_EQ(copy_kind_name(device, device), "d2d");
  EXPECT_EQ(copy_kind_name(host, host), "h2h");
  EXPECT_EQ(copy_kind_name(unknown, device), "default");
}

TEST(TraceNames, DefaultStreams) {
  EXPECT_EQ(default_stream_kind(0, false), StreamKind::legacy_default);
  EXPECT_EQ(default_stream_kind(0, true), StreamKind::per_thread_default);
  EXPECT_EQ(default_stream_kind(1, true), StreamKind::legacy_default) << "cudaStreamLegacy is explicit";
  EXPECT_EQ(default_stream_kind(2, false), StreamKind::per_thread_default);
  EXPECT_TRUE(is_default_stream_handle(2));
  EXPECT_FALSE(is_default_stream_handle(0x7f0000001000));
  EXPECT_EQ(created_stream_kind(0), StreamKind::blocking);
  EXPECT_EQ(created_stream_kind(1), StreamKind::non_blocking);
  EXPECT_EQ(stream_kind_name(StreamKind::per_thread_default), "per_thread_default");
}

TEST(Callers, CudaModulesAndSymbols) {
  EXPECT_EQ(module_basename("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), "libcuda.so.1");
  EXPECT_EQ(module_basename("app"), "app");
  EXPECT_TRUE(is_cuda_module("libcuda.so.1"));
  EXPECT_TRUE(is_cuda_module("libcuda.so.580.65.06"));
  EXPECT_TRUE(is_cuda_module("libcudart.so.13"));
  EXPECT_TRUE(is_cuda_module("libcupti.so.13"));
  EXPECT_TRUE(is_cuda_module("libovl_inject.so"));
  EXPECT_FALSE(is_cuda_module("libcudnn.so.9"));
  EXPECT_FALSE(is_cuda_module("libcublas.so.13"));
  EXPECT_FALSE(is_cuda_module("app"));

  EXPECT_TRUE(is_cuda_symbol("cudaMemcpyAsync"));
  EXPECT_TRUE(is_cuda_symbol("cuLaunchKernel"));
  EXPECT_TRUE(is_cuda_symbol("__cudart1047"));
  EXPECT_TRUE(is_cuda_symbol("__cudaPushCallConfiguration"));
  EXPECT_TRUE(is_cuda_symbol("cudart::cudaApiMemcpyAsync(void*, void const*, unsigned long)"));
  EXPECT_FALSE(is_cuda_symbol("cublasSgemm_v2")) << "cu + lowercase is a library, not the API";
  EXPECT_FALSE(is_cuda_symbol("curand"));
  EXPECT_FALSE(is_cuda_symbol("main"));
  EXPECT_FALSE(is_cuda_symbol("cu"));
}

// Functions whose addresses serve as synthetic return addresses. Neither is
// exported (no -rdynamic), so naming them needs the executable's .symtab.
[[gnu::noinline]] int local_function(int x) {
  return x * 3 + 1;
}
extern "C" [[gnu::noinline]] int cudaPretendEntryPoint(int x) {
  return x * 5 + 2;
}

template <typename Function>
void* inside(Function* function, std::uintptr_t offset) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a synthetic return address
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(function) + offset);
}

TEST(Callers, NamesFunctionsFromTheSymbolTable) {
  CallerResolver resolver;
  RawFrames frames;
  frames.pc[0] = inside(&local_function, 1);
  frames.count = 1;
  const std::string* caller = resolver.first_app_frame(frames);
  ASSERT_NE(caller, nullptr);
  EXPECT_EQ(*caller, "overlap::inject::(anonymous namespace)::local_function(int)+0x1");
  EXPECT_EQ(resolver.first_app_frame(frames), caller) << "cached";
}

TEST(Callers, SkipsCudaSymbolsAndUnnamedAddresses) {
  CallerResolver resolver;
  RawFrames frames;
  frames.pc[0] =
      reinterpret_cast<void*>(std::uintptr_t{0x10});  // NOLINT(performance-no-int-to-ptr): unmapped
  frames.pc[1] = inside(&cudaPretendEntryPoint, 1);
  frames.pc[2] = inside(&local_function, 2);
  frames.count = 3;
  const std::string* caller = resolver.first_app_frame(frames);
  ASSERT_NE(caller, nullptr);
  EXPECT_EQ(*caller, "overlap::inject::(anonymous namespace)::local_function(int)+0x2");
}

TEST(Callers, SkipsModulesByName) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").filename().string();
  CallerResolver resolver({self});
  RawFrames frames;
  frames.pc[0] = inside(&local_function, 1);
  frames.pc[1] = inside(&::getpid, 1);
  frames.count = 2;
  const std::string* caller = resolver.first_app_frame(frames);
  ASSERT_NE(caller, nullptr) << "libc's getpid is named";
  EXPECT_NE(caller->find("getpid+0x1"), std::string::npos) << *caller;
}

TEST(Callers, CapturedFramesStartInTheCaller) {
  CallerResolver resolver;
  RawFrames frames;
  capture_frames(frames);
  ASSERT_GT(frames.count, 1);
  const std::string* caller = resolver.first_app_frame(frames);
  ASSERT_NE(caller, nullptr);
  EXPECT_TRUE(caller->starts_with("overlap::inject::capture_frames(")) << *caller;
}

TEST(Callers, ToldWhenAFrameIsInTheRuntime) {
  CallerResolver resolver;
  RawFrames frames;
  frames.pc[0] = inside(&local_function, 1);
  frames.count = 1;
  EXPECT_FALSE(resolver.inside_cuda_runtime(frames));
  frames.pc[1] = inside(&cudaPretendEntryPoint, 1);
  frames.count = 2;
  EXPECT_TRUE(resolver.inside_cuda_runtime(frames)) << "a runtime symbol linked into the app";
  EXPECT_TRUE(is_runtime_symbol("cudart::globalState"));
  EXPECT_FALSE(is_runtime_symbol("cuInit")) << "the driver is not the runtime";
}

TEST(Callers, NothingLeftMeansNoCaller) {
  CallerResolver resolver;
  RawFrames frames;
  frames.pc[0] = inside(&cudaPretendEntryPoint, 1);
  frames.count = 1;
  EXPECT_EQ(resolver.first_app_frame(frames), nullptr);
}

}  // namespace
}  // namespace overlap::inject
