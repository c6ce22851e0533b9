// Running an unmodified app under the CUPTI injection library, for
// `overlap trace` and `overlap audit`: where the library is, the environment
// that loads it, the app's exit status, and the trace file it left.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/trace/capture.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

/// How the traced app ended.
struct TracedRun {
  int exit_code = 0;  ///< the app's exit code, or 128 + the signal that ended it
  std::optional<int> signal;
  /// The trace of the app's process (or, if it ran CUDA in a child, of the
  /// child with most calls); empty when no process used CUDA.
  std::optional<std::filesystem::path> trace_file;
  std::size_t traced_processes = 0;  ///< trace files the run left
};

/// Where the injection library is: $OVERLAP_INJECT_LIB, else next to this
/// executable's build or install tree. Throws overlap::invalid_input naming
/// the places looked at when none has it.
[[nodiscard]] std::filesystem::path injection_library();

/// Runs `command` (the app and its arguments, found on PATH) with the library
/// injected, its trace files written to `trace_dir`, waits for it (forwarding
/// SIGINT and SIGTERM), and finds its trace. With `app_stdout_to_stderr` the
/// app's standard output goes to standard error, so a report on standard
/// output stays parseable. Throws overlap::invalid_input if the app cannot be
/// started.
[[nodiscard]] TracedRun run_traced(const std::vector<std::string>& command,
                                   const std::filesystem::path& trace_dir, bool app_stdout_to_stderr);

/// A temporary folder removed when this goes out of scope.
class TemporaryFolder {
 public:
  TemporaryFolder();
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

/// The raw trace turned into a Capture; `raw_copy`, if set, also receives a
/// copy of the trace file. When the app left no CUDA activity (it never
/// called CUDA, or crashed before the tracer wrote anything) says so on
/// io.err as `overlap COMMAND: no CUDA activity ...` and returns nothing.
[[nodiscard]] std::optional<trace::Capture> capture_if_any(const TracedRun& run, const std::string& raw_copy,
                                                           const std::string& app, std::string_view command,
                                                           Streams io);

}  // namespace overlap::cli
