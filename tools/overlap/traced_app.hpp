// Running an unmodified app under the CUPTI injection library, for
// `overlap trace` and `overlap audit`: where the library is, the environment
// that loads it, the app's exit status, and the trace file it left.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"
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
  /// Every trace file the run left, one per process that used CUDA (a
  /// multi-process job's ranks: job_traces), in no particular order.
  std::vector<std::filesystem::path> trace_files;
  /// `trace_file` already parsed, when it is the app's own process's: read
  /// while the app ran (see TraceFollower). Empty otherwise.
  std::optional<trace::RawTrace> raw;
  /// Seconds spent reading `raw`'s last records after the app ended.
  double read_after_exit_s = 0.0;
};

/// How the traced app's kernels' accesses are known (`--accesses`).
enum class KernelAccesses {
  /// From their pointer parameters, by the audit (no cost to the app).
  inferred,
  /// Measured while they run, by libovl_measure.so (Compute Sanitizer
  /// patching): exact, and the app runs several times slower.
  measured,
};

/// What a run of the app is for.
enum class AppRun {
  /// Traced by libovl_inject.so (CUPTI): the trace file.
  traced,
  /// Measured by libovl_measure.so alone (the Compute Sanitizer API takes
  /// CUPTI's subscriber, so it cannot run beside the tracer): the
  /// accesses file, accesses.PID.jsonl.
  measuring,
};

/// Whether managed memory's migrations are traced (`--migrations`).
enum class Migrations {
  /// CUPTI's unified-memory counters on: each move across the link is a
  /// record. On programs that fault much managed memory back and forth the
  /// driver's own cost of them is 15-25% (bench/RESULTS.md).
  traced,
  /// Off (OVERLAP_TRACE_MIGRATIONS=0 for the app): prefetches are still
  /// ordered ops, but untimed, and moves made by page faults are not seen.
  off,
};

/// Parses `--migrations`: "on" or "off"; throws overlap::invalid_input otherwise.
[[nodiscard]] Migrations parse_migrations(std::string_view text);

/// Adds `--migrations on|off` (into `value`, "on" by default) to `trace` or `audit`.
void add_migrations_option(CLI::App& app, std::string& value);

/// Parses `--accesses`: "inferred" or "measured"; throws overlap::invalid_input otherwise.
[[nodiscard]] KernelAccesses parse_kernel_accesses(std::string_view text);

/// libovl_measure.so beside the injection library. Throws
/// overlap::invalid_input, saying how to get it, when it was not built.
[[nodiscard]] std::filesystem::path measure_library();

/// Where the injection library is: $OVERLAP_INJECT_LIB, else next to this
/// executable's build or install tree. Throws overlap::invalid_input naming
/// the places looked at when none has it.
[[nodiscard]] std::filesystem::path injection_library();

class SignalForwarding;
class TraceFollower;

/// An app running under the injection library, its trace read as it grows.
/// Its trace is whole once the tracer has written the footer, in the app's
/// exit handlers: what reads it can start while the app's process is still
/// tearing CUDA down, and ask for the exit status afterwards.
class TracedApp {
 public:
  /// Starts `command` (the app and its arguments, found on PATH) with the
  /// library injected and its trace files written to `trace_dir`, forwarding
  /// SIGINT and SIGTERM to it. With `app_stdout_to_stderr` the app's standard
  /// output goes to standard error. Throws overlap::invalid_input if the app
  /// cannot be started.
  TracedApp(const std::vector<std::string>& command, const std::filesystem::path& trace_dir,
            bool app_stdout_to_stderr, AppRun run = AppRun::traced,
            Migrations migrations = Migrations::traced);
  /// Waits for the app if finish() was not called.
  ~TracedApp();
  TracedApp(const TracedApp&) = delete;
  TracedApp& operator=(const TracedApp&) = delete;
  TracedApp(TracedApp&&) = delete;
  TracedApp& operator=(TracedApp&&) = delete;

  /// Waits until the app's own trace is whole (its footer read) and returns
  /// it, or until the app ends without one (nothing: finish() then gives
  /// what there is).
  [[nodiscard]] std::optional<trace::RawTrace> complete_trace();
  /// Waits for the app to end: its exit status and its trace files. `raw`
  /// holds the app's trace unless complete_trace() returned it.
  [[nodiscard]] TracedRun finish();

 private:
  /// Reaps the app; false when `block` is false and it is still running.
  bool wait_for_exit(bool block);

  std::filesystem::path trace_dir_;
  std::string name_;
  pid_t child_ = 0;
  int status_ = 0;
  bool ended_ = false;
  bool trace_taken_ = false;
  std::unique_ptr<SignalForwarding> forwarding_;
  std::unique_ptr<TraceFollower> follower_;
};

/// Runs `command` (the app and its arguments, found on PATH) with the library
/// injected, its trace files written to `trace_dir`, waits for it (forwarding
/// SIGINT and SIGTERM) while reading its trace as it grows, and finds its trace. With `app_stdout_to_stderr`
/// the app's standard output goes to standard error, so a report on standard output stays parseable. Throws
/// overlap::invalid_input if the app cannot be started.
[[nodiscard]] TracedRun run_traced(const std::vector<std::string>& command,
                                   const std::filesystem::path& trace_dir, bool app_stdout_to_stderr,
                                   Migrations migrations = Migrations::traced);

/// The measuring run of `--accesses measured`.
struct MeasuringRun {
  int exit_code = 0;
  std::optional<std::filesystem::path> accesses_file;  ///< empty when the app measured nothing
  double seconds = 0.0;                                ///< its wall time
};

/// Runs `command` once preloaded with libovl_measure.so, its accesses file
/// written to `dir`, and waits for it. Throws overlap::invalid_input when the
/// library is missing or the app cannot be started.
[[nodiscard]] MeasuringRun run_measuring(const std::vector<std::string>& command,
                                         const std::filesystem::path& dir, bool app_stdout_to_stderr);

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

/// Copies the run's trace file to `raw_copy` (--raw), if both are set.
/// Throws overlap::invalid_input naming the file when it cannot be written.
void keep_raw_copy(const TracedRun& run, const std::string& raw_copy);

/// The trace holds a CUDA call or device work.
[[nodiscard]] bool has_cuda_activity(const trace::RawTrace& raw);

/// The measuring run of `overlap COMMAND --accesses measured`, with what it
/// did said on `io.err`. Throws overlap::invalid_input when it measured
/// nothing (no CUDA, or the Compute Sanitizer API did not start).
[[nodiscard]] MeasuringRun measure_app(const std::vector<std::string>& app_command,
                                       const std::filesystem::path& dir, std::string_view command,
                                       Streams io);

/// Appends `lines` (records) to the raw copy `raw_copy`, if both are set.
void append_raw_records(const std::string& raw_copy, const std::string& lines);

/// Joins the measuring run's accesses into `raw` (trace::join_measured_run),
/// says on `io.err` how many launches joined, and appends their `accesses`
/// records to the raw copy kept (--raw), so that `--from` audits it alike.
void join_measuring_run(trace::RawTrace& raw, const MeasuringRun& measuring, const std::string& raw_copy,
                        std::string_view command, Streams io);

/// The raw trace turned into a Capture (the one read while the app ran is
/// moved out of `run`); `raw_copy`, if set, also receives a copy of the trace file. When the app left no CUDA
/// activity (it never called CUDA, or crashed before the tracer wrote anything) says so on io.err as `overlap
/// COMMAND: no CUDA activity ...` and returns nothing.
/// With `measuring`, its accesses are joined in first (join_measuring_run).
[[nodiscard]] std::optional<trace::Capture> capture_if_any(TracedRun& run, const std::string& raw_copy,
                                                           const std::string& app, std::string_view command,
                                                           Streams io,
                                                           const MeasuringRun* measuring = nullptr);

}  // namespace overlap::cli
