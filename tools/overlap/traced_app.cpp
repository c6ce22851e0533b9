#include "traced_app.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "overlap/core/error.hpp"
#include "overlap/trace/measured_run.hpp"
#include "overlap/trace/trace_file.hpp"
#include "trace_follower.hpp"

namespace overlap::cli {

namespace fs = std::filesystem;

namespace {

// The app's pid while we wait for it, for the signal forwarder.
volatile std::sig_atomic_t traced_child = 0;

void forward_signal(int signal) {
  if (traced_child > 0) ::kill(static_cast<pid_t>(traced_child), signal);
}

fs::path self_directory() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

// libcupti, for NVTX_INJECTION64_PATH: NVTX ranges reach CUPTI only through
// it. The toolkit this was built with, else the usual places, else the bare
// name for the dynamic loader to find.
std::string cupti_library() {
  if (const char* path = std::getenv("OVERLAP_CUPTI_LIB")) return path;
  std::vector<std::string> candidates;
#ifdef OVERLAP_CUPTI_LIBRARY
  candidates.emplace_back(OVERLAP_CUPTI_LIBRARY);
#endif
  candidates.emplace_back("/usr/local/cuda/lib64/libcupti.so");
  candidates.emplace_back("/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so");
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (fs::exists(c, ec)) return c;
  }
  return "libcupti.so";
}

std::vector<std::string> app_environment(const fs::path& trace_dir, AppRun run, Migrations migrations) {
  std::vector<std::string> env;
  std::string preload;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("CUDA_INJECTION64_PATH=") || entry.starts_with("OVERLAP_TRACE_DIR=") ||
        entry.starts_with("NVTX_INJECTION64_PATH=") || entry.starts_with("OVERLAP_ACCESSES="))
      continue;
    if (entry.starts_with("LD_PRELOAD=")) {
      preload = entry.substr(std::string_view("LD_PRELOAD=").size());
      continue;
    }
    env.emplace_back(entry);
  }
  env.push_back("OVERLAP_TRACE_DIR=" + trace_dir.string());
  if (run == AppRun::traced) {
    env.push_back("CUDA_INJECTION64_PATH=" + injection_library().string());
    env.push_back("NVTX_INJECTION64_PATH=" + cupti_library());
    // The last of a name wins in getenv: this overrides an inherited value.
    if (migrations == Migrations::off) env.emplace_back("OVERLAP_TRACE_MIGRATIONS=0");
  } else {
    // Preloaded, the measuring library subscribes to the Compute Sanitizer
    // API before the app's first CUDA call (tools/measure/measure.cpp).
    env.emplace_back("OVERLAP_ACCESSES=measured");
    preload = preload.empty() ? measure_library().string() : measure_library().string() + ":" + preload;
  }
  if (!preload.empty()) env.push_back("LD_PRELOAD=" + preload);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

std::size_t count_lines(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  // Counted byte by byte: one endless line must not be held in memory.
  return static_cast<std::size_t>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

}  // namespace

/// Installs forward_signal for SIGINT and SIGTERM; restores on destruction.
class SignalForwarding {
 public:
  SignalForwarding() {
    struct sigaction action {};
    action.sa_handler = forward_signal;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &action, &previous_[i]);
  }
  ~SignalForwarding() {
    for (std::size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &previous_[i], nullptr);
    traced_child = 0;
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  std::array<int, 2> signals_{SIGINT, SIGTERM};
  std::array<struct sigaction, 2> previous_{};
};

fs::path injection_library() {
  if (const char* path = std::getenv("OVERLAP_INJECT_LIB")) {
    if (!fs::exists(path)) throw invalid_input(fmt::format("OVERLAP_INJECT_LIB: '{}' does not exist", path));
    return fs::absolute(path);
  }
  const fs::path here = self_directory();
  const std::array candidates{here / "../inject/libovl_inject.so", here / "../lib/overlap/libovl_inject.so",
                              here / "libovl_inject.so"};
  for (const fs::path& c : candidates) {
    if (fs::exists(c)) return fs::canonical(c);
  }
  throw invalid_input(
      fmt::format("the injection library libovl_inject.so was not found (looked in {}, {}, {}); it is built "
                  "with the CUDA "
                  "layer (a CUDA toolkit with CUPTI), or set OVERLAP_INJECT_LIB to its path",
                  candidates[0].lexically_normal().string(), candidates[1].lexically_normal().string(),
                  candidates[2].lexically_normal().string()));
}

KernelAccesses parse_kernel_accesses(std::string_view text) {
  if (text == "inferred") return KernelAccesses::inferred;
  if (text == "measured") return KernelAccesses::measured;
  throw invalid_input(fmt::format("--accesses: '{}' is not a mode (inferred or measured)", text));
}

Migrations parse_migrations(std::string_view text) {
  if (text == "on") return Migrations::traced;
  if (text == "off") return Migrations::off;
  throw invalid_input(fmt::format("--migrations: '{}' is not a choice (on or off)", text));
}

void add_migrations_option(CLI::App& app, std::string& value) {
  app.add_option("--migrations", value,
                 "on (default): managed memory's moves across the link are traced, time the prefetches "
                 "and count as link work; off: not traced, which spares the driver's cost of them on "
                 "programs that fault much managed memory (15-25% there)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
}

fs::path measure_library() {
  fs::path library = injection_library().parent_path() / "libovl_measure.so";
  if (!fs::exists(library))
    throw invalid_input(fmt::format(
        "--accesses measured: {} was not found; it is built where the Compute Sanitizer API is found (the "
        "CUDA toolkit's compute-sanitizer/ folder, or OVERLAP_SANITIZER_ROOT when configuring)",
        library.string()));
  return library;
}

TracedApp::TracedApp(const std::vector<std::string>& command, const fs::path& trace_dir,
                     bool app_stdout_to_stderr, AppRun run, Migrations migrations)
    : trace_dir_(trace_dir) {
  if (command.empty())
    throw invalid_input("no app given: put the app and its arguments after -- (see --help)");
  std::vector<std::string> env = app_environment(trace_dir, run, migrations);
  std::vector<std::string> argv = command;
  std::vector<char*> argv_pointers = pointers(argv);
  std::vector<char*> env_pointers = pointers(env);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (app_stdout_to_stderr) posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  forwarding_ = std::make_unique<SignalForwarding>();
  const int spawned =
      posix_spawnp(&child_, argv[0].c_str(), &actions, nullptr, argv_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw invalid_input(fmt::format("cannot run '{}': {}", command.front(), std::strerror(spawned)));
  name_ = command.front();
  traced_child = child_;
  follower_ = std::make_unique<TraceFollower>(trace_dir / fmt::format("trace.{}.jsonl", child_));
}

TracedApp::~TracedApp() {
  if (!ended_) {
    try {
      wait_for_exit(/*block=*/true);
    } catch (...) {
      // Destroyed while an error unwinds: the app's status is of no more use.
    }
  }
}

bool TracedApp::wait_for_exit(bool block) {
  for (;;) {
    const pid_t got = waitpid(child_, &status_, block ? 0 : WNOHANG);
    if (got == child_) {
      ended_ = true;
      return true;
    }
    if (got == 0) return false;  // still running
    if (errno != EINTR) throw error(fmt::format("waiting for '{}' failed: {}", name_, std::strerror(errno)));
  }
}

std::optional<trace::RawTrace> TracedApp::complete_trace() {
  // How often the app is asked whether it has ended without a footer (killed, say).
  constexpr auto exit_poll = std::chrono::milliseconds(5);
  while (!ended_) {
    if (follower_->wait_for_footer(exit_poll)) {
      trace_taken_ = true;
      return follower_->finish();
    }
    (void)wait_for_exit(/*block=*/false);
  }
  return std::nullopt;
}

TracedRun TracedApp::finish() {
  if (!ended_) (void)wait_for_exit(/*block=*/true);
  forwarding_.reset();
  TracedRun run;
  if (WIFSIGNALED(status_)) {
    run.signal = WTERMSIG(status_);
    run.exit_code = 128 + *run.signal;
  } else {
    run.exit_code = WEXITSTATUS(status_);
  }

  // The app's own process, else the traced process with most records (the
  // app may be a launcher such as a shell or python's multiprocessing).
  std::size_t most = 0;
  for (const auto& entry : fs::directory_iterator(trace_dir_)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("trace.") || !name.ends_with(".jsonl")) continue;
    ++run.traced_processes;
    run.trace_files.push_back(entry.path());
    if (name == fmt::format("trace.{}.jsonl", child_)) {
      run.trace_file = entry.path();
      most = SIZE_MAX;
    } else if (most != SIZE_MAX) {
      const std::size_t lines = count_lines(entry.path());
      if (lines > most) {
        most = lines;
        run.trace_file = entry.path();
      }
    }
  }
  if (most == SIZE_MAX && !trace_taken_) {
    const auto started = std::chrono::steady_clock::now();
    run.raw = follower_->finish();
    run.read_after_exit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  return run;
}

TracedRun run_traced(const std::vector<std::string>& command, const fs::path& trace_dir,
                     bool app_stdout_to_stderr, Migrations migrations) {
  TracedApp app(command, trace_dir, app_stdout_to_stderr, AppRun::traced, migrations);
  std::optional<trace::RawTrace> early = app.complete_trace();
  TracedRun run = app.finish();
  if (early) run.raw = std::move(early);
  return run;
}

MeasuringRun run_measuring(const std::vector<std::string>& command, const fs::path& dir,
                           bool app_stdout_to_stderr) {
  const auto started = std::chrono::steady_clock::now();
  MeasuringRun m;
  {
    TracedApp app(command, dir, app_stdout_to_stderr, AppRun::measuring);
    m.exit_code = app.finish().exit_code;
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The app's own process, or the child that launched most (a Python
  // launcher's worker, say): the largest file.
  std::uintmax_t largest = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("accesses.") || !name.ends_with(".jsonl")) continue;
    if (const std::uintmax_t size = entry.file_size(); !m.accesses_file || size > largest) {
      largest = size;
      m.accesses_file = entry.path();
    }
  }
  return m;
}

TemporaryFolder::TemporaryFolder() {
  std::string pattern = (fs::temp_directory_path() / "overlap-trace-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw error(fmt::format("cannot create a temporary folder: {}", std::strerror(errno)));
  path_ = pattern;
}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void keep_raw_copy(const TracedRun& run, const std::string& raw_copy) {
  if (!run.trace_file || raw_copy.empty()) return;
  std::error_code ec;
  fs::copy_file(*run.trace_file, raw_copy, fs::copy_options::overwrite_existing, ec);
  if (ec) throw invalid_input(fmt::format("--raw: cannot write '{}': {}", raw_copy, ec.message()));
}

bool has_cuda_activity(const trace::RawTrace& raw) {
  return !raw.calls.empty() || !raw.work.empty();
}

void join_measuring_run(trace::RawTrace& raw, const MeasuringRun& measuring, const std::string& raw_copy,
                        std::string_view command, Streams io) {
  if (!measuring.accesses_file) return;
  std::ifstream in(*measuring.accesses_file);
  const trace::MeasuredJoin join = trace::join_measured_run(raw, in, measuring.accesses_file->string());
  io.err << fmt::format(
      "overlap {}: measured accesses: {} of {} kernel launches joined from the measuring run ({} measured "
      "there{}{})\n",
      command, join.joined, join.traced_launches, join.measured_launches,
      join.inexact > 0 ? fmt::format(", {} overflowed to hulls", join.inexact) : "",
      join.outside > 0 ? fmt::format(", {} ranges outside the app's allocations", join.outside) : "");
  if (!raw_copy.empty()) append_raw_records(raw_copy, trace::measured_records(raw));
}

void append_raw_records(const std::string& raw_copy, const std::string& lines) {
  if (raw_copy.empty() || lines.empty()) return;
  std::ofstream out(raw_copy, std::ios::app);
  out << lines;
  if (!out) throw invalid_input(fmt::format("--raw: cannot write '{}'", raw_copy));
}

MeasuringRun measure_app(const std::vector<std::string>& app_command, const fs::path& dir,
                         std::string_view command, Streams io) {
  io.err << fmt::format(
      "overlap {}: measuring what each kernel reads and writes: a first run of the app under the Compute "
      "Sanitizer API (slower), then the traced run\n",
      command);
  MeasuringRun m = run_measuring(app_command, dir, /*app_stdout_to_stderr=*/true);
  if (!m.accesses_file)
    throw invalid_input(
        fmt::format("--accesses measured: the measuring run (exit code {}) left no accesses: the app made no "
                    "CUDA call, or "
                    "the Compute Sanitizer API did not start (its message is above)",
                    m.exit_code));
  io.err << fmt::format("overlap {}: measuring run: {:.2f} s, exit code {}\n", command, m.seconds,
                        m.exit_code);
  return m;
}

std::optional<trace::Capture> capture_if_any(TracedRun& run, const std::string& raw_copy,
                                             const std::string& app, std::string_view command, Streams io,
                                             const MeasuringRun* measuring) {
  keep_raw_copy(run, raw_copy);
  trace::RawTrace raw;
  if (run.raw) {
    raw = std::move(*run.raw);
    run.raw.reset();
  } else if (run.trace_file) {
    raw = trace::load_trace(*run.trace_file);
  }
  if (measuring != nullptr) join_measuring_run(raw, *measuring, raw_copy, command, io);
  if (!has_cuda_activity(raw)) {
    io.err << fmt::format(
        "overlap {}: no CUDA activity: '{}' {} (exit code {})\n", command, app,
        run.trace_file ? "ended before the tracer recorded any CUDA call" : "made no CUDA call",
        run.exit_code);
    return std::nullopt;
  }
  return trace::capture(raw);
}

}  // namespace overlap::cli
