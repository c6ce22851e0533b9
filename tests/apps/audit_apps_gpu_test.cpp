// `overlap audit` and `overlap trace` run on the test apps (tests/apps/*.cu),
// unmodified CUDA programs with one planted trap or race each: the audit must
// report exactly the planted rule, pointing at the call that plants it, and
// nothing for the repaired twins and the clean pipeline; the trace must show
// the clean pipeline's overlap; and neither may hang or crash on a missing
// app, an app without CUDA, a crash, a signal or a fork. The Python scripts
// (CuPy, PyTorch) are audited too where python3 can import the library.
//
// Every test needs a GPU and says "skipped: no CUDA device" without one.
// The commands run as child processes (posix_spawn) in a scratch folder,
// with stdout and stderr in files; the audit writes its JSON with -o.
// OVERLAP_CLI and OVERLAP_APPS_DIR in the environment override the paths
// compiled in (for a build carried to another machine).
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;  // NOLINT: POSIX

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// --- environment -------------------------------------------------------------------

bool has_cuda_device() {
  static const bool present = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return present;
}

// Every test starts with this.
#define SKIP_WITHOUT_DEVICE() \
  if (!has_cuda_device()) GTEST_SKIP() << "skipped: no CUDA device"

int cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

// The multi-process tests run one process per GPU.
#define SKIP_WITHOUT_TWO_DEVICES() \
  if (cuda_device_count() < 2) GTEST_SKIP() << "skipped: needs 2 GPUs"

std::string from_env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : std::string(fallback);
}

const std::string& cli() {
  static const std::string path = from_env("OVERLAP_CLI", OVERLAP_CLI);
  return path;
}

std::string app_path(const std::string& binary) {
  static const std::string dir = from_env("OVERLAP_APPS_DIR", OVERLAP_APPS_DIR);
  return dir + "/app_" + binary;
}

std::string python_script(const std::string& name) {
  return std::string(OVERLAP_SOURCE_DIR) + "/tests/apps/python/" + name;
}

/// The absolute path of `program` found on PATH, or empty.
std::string on_path(const std::string& program) {
  std::stringstream dirs(from_env("PATH", "/usr/local/bin:/usr/bin:/bin"));
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (access(candidate.c_str(), X_OK) == 0) return fs::absolute(candidate).string();
  }
  return {};
}

/// A fresh folder for one test's files, removed with everything in it.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "overlap_audit_apps_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// --- running commands ----------------------------------------------------------------

struct Outcome {
  std::vector<std::string> argv;
  int exit_code = -1;  ///< 128 + the signal when a signal ended it; -1 when it could not start
  bool timed_out = false;
  std::string out;
  std::string err;

  [[nodiscard]] std::string describe() const {
    std::string text = "command:";
    for (const std::string& a : argv) text += " " + a;
    text += "\nexit code: " + std::to_string(exit_code) + (timed_out ? " (timed out, killed)" : "");
    const auto tail = [](const std::string& s) {
      return s.size() > 4000 ? "..." + s.substr(s.size() - 4000) : s;
    };
    return text + "\nstdout:\n" + tail(out) + "\nstderr:\n" + tail(err);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs argv (argv[0] looked up on PATH when it has no slash) in `dir` with
/// stdin from /dev/null and stdout/stderr captured, in its own process
/// group; kills the group after `timeout`.
Outcome run_command(const std::vector<std::string>& argv, const Scratch& dir,
                    std::chrono::seconds timeout = 300s) {
  static int serial = 0;
  const std::string tag = std::to_string(++serial);
  const std::string out_path = dir.file("stdout." + tag);
  const std::string err_path = dir.file("stderr." + tag);
  Outcome r;
  r.argv = argv;

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addchdir_np(&actions, dir.path().c_str());
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t default_signals;
  sigfillset(&default_signals);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  posix_spawnattr_setsigdefault(&attributes, &default_signals);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, static_cast<short>(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                           POSIX_SPAWN_SETSIGDEF));

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    r.err = std::string("posix_spawnp: ") + std::strerror(spawned);
    return r;
  }

  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      r.err = std::string("waitpid: ") + std::strerror(errno);
      return r;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

// --- the audit ---------------------------------------------------------------------------

struct Audit {
  Outcome run;
  json report;  ///< null when nothing could be parsed
  std::string parse_error;

  [[nodiscard]] bool parsed() const { return report.is_object(); }
  [[nodiscard]] std::string describe() const {
    std::string text = run.describe();
    if (!parse_error.empty()) text += "\nJSON: " + parse_error;
    if (parsed()) {
      std::string dump = report.dump(1);
      if (dump.size() > 12000) dump = dump.substr(0, 12000) + "...";
      text += "\nreport:\n" + dump;
    }
    return text;
  }
};

/// The JSON object that starts the first line beginning with '{'.
std::optional<json> json_in(const std::string& text, std::string& error) {
  std::size_t at = text.rfind('{', 0) == 0 ? 0 : text.find("\n{");
  if (at == std::string::npos) return std::nullopt;
  if (text[at] == '\n') ++at;
  try {
    return json::parse(text.substr(at));
  } catch (const json::exception& e) {
    error = e.what();
    return std::nullopt;
  }
}

/// `overlap audit --json -o FILE [options] -- command...`, and its report.
Audit audit(const std::vector<std::string>& command, const Scratch& dir,
            const std::vector<std::string>& options = {}) {
  const std::string report_path = dir.file("audit.json");
  std::error_code ignored;
  fs::remove(report_path, ignored);
  std::vector<std::string> argv = {cli(), "audit", "--json", "-o", report_path};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  Audit a;
  a.run = run_command(argv, dir);
  const std::string text = read_file(report_path);
  // The report goes to the file; fall back to stdout in case it went there.
  if (auto report = json_in(text, a.parse_error)) {
    a.report = std::move(*report);
  } else if (auto from_stdout = json_in(a.run.out, a.parse_error)) {
    a.report = std::move(*from_stdout);
  }
  return a;
}

const json& findings_of(const json& report) {
  static const json none = json::array();
  const auto it = report.find("findings");
  return it != report.end() && it->is_array() ? *it : none;
}

std::set<std::string> rules_of(const json& report) {
  std::set<std::string> rules;
  for (const json& f : findings_of(report)) rules.insert(f.value("rule", std::string("?")));
  return rules;
}

std::string text_of(const std::set<std::string>& words) {
  std::string text = "{";
  for (const std::string& w : words) text += (text.size() > 1 ? ", " : "") + w;
  return text + "}";
}

/// The app's exit code as the report gives it.
int app_exit_code(const json& report) {
  const auto it = report.find("exit_code");
  return it != report.end() && it->is_number_integer() ? it->get<int>() : -1;
}

bool trace_complete(const json& report) {
  const auto trace = report.find("trace");
  return trace != report.end() && trace->is_object() && trace->value("complete", false);
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// --- what each app plants ----------------------------------------------------------------

/// An op a race finding must name.
struct ExpectedOp {
  std::string kind;   ///< "kernel" or "copy"
  std::string label;  ///< the kernel's name, or "H2D"
  std::string api;    ///< empty: any
};

struct Planted {
  std::string app;
  std::string rule;
  std::string severity;
  std::vector<std::string> apis;  ///< what the finding's first op may have been issued by
  std::vector<ExpectedOp> race;   ///< races: the two ops, in any order
};

const std::vector<Planted>& planted_apps() {
  static const std::vector<Planted> apps = {
      {"legacy_default_stream", "legacy-default-stream", "warning", {"cudaMemcpyAsync"}, {}},
      {"synchronous_copy", "synchronous-copy", "warning", {"cudaMemcpy"}, {}},
      {"pageable_copy", "pageable-async-copy", "warning", {"cudaMemcpyAsync"}, {}},
      {"alloc_in_loop", "implicit-synchronization", "warning", {"cudaMalloc", "cudaFree"}, {}},
      {"device_sync", "device-synchronize", "warning", {"cudaDeviceSynchronize"}, {}},
      {"copy_serialization", "copy-engine-serialization", "info", {"cudaMemcpyAsync"}, {}},
      {"idle_gap", "idle-gap", "warning", {"cudaMallocHost", "cudaFreeHost"}, {}},
      {"lazy_module_load", "lazy-module-load", "warning", {"cudaLaunchKernel"}, {}},
      // Kernels' accesses are inferred from their pointers: their races are possible, warnings.
      {"race_kernels", "race", "warning", {}, {{"kernel", "kernel1", ""}, {"kernel", "kernel2", ""}}},
      {"race_copy",
       "race",
       "warning",
       {},
       {{"copy", "H2D", "cudaMemcpyAsync"}, {"kernel", "scale_kernel", ""}}},
      // Both sides known byte for byte (a copy, a stream-ordered free): an error.
      {"stream_ordered_free",
       "race",
       "error",
       {},
       {{"copy", "D2H", "cudaMemcpyAsync"}, {"record", "cudaFreeAsync", "cudaFreeAsync"}}},
      // Inside two graphs (captured, built by hand): the nodes' pointers and the graphs' edges.
      {"graph_race",
       "race",
       "warning",
       {},
       {{"kernel", "fill", "cudaGraphLaunch"}, {"kernel", "halve", "cudaGraphLaunch"}}},
      // Two small kernels chained by stream capture.
      {"graph_serialized", "graph-serialized-nodes", "warning", {"cudaGraphLaunch"}, {}},
      // A graph's free node not ordered after a kernel reading the memory it frees.
      {"graph_memory_race",
       "race",
       "warning",
       {},
       {{"kernel", "keep", "cudaGraphLaunch"}, {"record", "free", "cudaGraphLaunch"}}},
      // Two nodes of one graph that run the same kernel, told apart by their pointers.
      {"graph_shared_kernel",
       "race",
       "warning",
       {},
       {{"kernel", "scale_kernel", "cudaGraphLaunch"}, {"kernel", "scale_kernel", "cudaGraphLaunch"}}},
  };
  return apps;
}

struct AppCase {
  std::string binary;  ///< app_<binary>
  std::vector<std::string> args;
  const Planted* planted = nullptr;  ///< null: no finding expected
  std::string name;                  ///< the test's name
};

std::vector<AppCase> planted_cases() {
  std::vector<AppCase> cases;
  for (const Planted& p : planted_apps()) {
    for (const std::string suffix : {"", "_static"})
      cases.push_back({p.app + suffix, {}, &p, p.app + suffix});
  }
  return cases;
}

std::vector<AppCase> clean_cases() {
  std::vector<AppCase> cases;
  for (const std::string suffix : {"", "_static"}) {
    cases.push_back({"clean_pipeline" + suffix, {}, nullptr, "clean_pipeline" + suffix});
    for (const Planted& p : planted_apps())
      cases.push_back({p.app + suffix, {"--repaired"}, nullptr, p.app + "_repaired" + suffix});
  }
  return cases;
}

std::string case_name(const testing::TestParamInfo<AppCase>& info) {
  return info.param.name;
}

// How gtest shows a case in listings and failures.
void PrintTo(const AppCase& c, std::ostream* os) {
  *os << c.name;
}

bool matches(const json& op, const ExpectedOp& expected) {
  // A graph's node is labelled "graph N: name".
  const std::string label = op.value("label", std::string());
  const bool named =
      label == expected.label || (label.starts_with("graph ") && label.ends_with(": " + expected.label));
  return op.value("kind", std::string()) == expected.kind && named &&
         (expected.api.empty() || op.value("api", std::string()) == expected.api);
}

// --- planted apps: exactly their rule --------------------------------------------------

class PlantedApp : public testing::TestWithParam<AppCase> {};

TEST_P(PlantedApp, AuditReportsExactlyThePlantedRule) {
  SKIP_WITHOUT_DEVICE();
  const AppCase& c = GetParam();
  const Planted& p = *c.planted;
  Scratch dir;
  std::vector<std::string> command = {app_path(c.binary)};
  command.insert(command.end(), c.args.begin(), c.args.end());
  const Audit a = audit(command, dir);
  ASSERT_FALSE(a.run.timed_out) << a.describe();
  ASSERT_TRUE(a.parsed()) << a.describe();
  const json& report = a.report;

  EXPECT_EQ(app_exit_code(report), 0) << "the app itself failed\n" << a.describe();
  EXPECT_TRUE(trace_complete(report)) << a.describe();
  EXPECT_EQ(rules_of(report), std::set<std::string>{p.rule})
      << "expected only " << p.rule << ", got " << text_of(rules_of(report)) << "\n"
      << a.describe();
  // The audit fails the run (exit 1) for warnings and errors, not for info.
  EXPECT_EQ(a.run.exit_code, p.severity == "info" ? 0 : 1) << a.describe();

  bool seen = false;
  for (const json& f : findings_of(report)) {
    if (f.value("rule", std::string()) != p.rule) continue;
    seen = true;
    EXPECT_EQ(f.value("severity", std::string()), p.severity) << f.dump(1);
    const json ops = f.value("ops", json::array());
    ASSERT_FALSE(ops.empty()) << f.dump(1);
    if (!p.apis.empty()) {
      const std::string api = ops.front().value("api", std::string());
      EXPECT_NE(std::find(p.apis.begin(), p.apis.end(), api), p.apis.end())
          << "the first op's api is '" << api << "'\n"
          << f.dump(1);
    }
    if (!p.race.empty()) {
      // Every race found is the planted one: these two ops, nothing else;
      // certain where both sides are known byte for byte (an error).
      EXPECT_EQ(f.value("certainty", std::string()), p.severity == "error" ? "certain" : "possible")
          << f.dump(1);
      ASSERT_EQ(ops.size(), 2U) << f.dump(1);
      const bool in_order = matches(ops[0], p.race[0]) && matches(ops[1], p.race[1]);
      const bool reversed = matches(ops[0], p.race[1]) && matches(ops[1], p.race[0]);
      EXPECT_TRUE(in_order || reversed) << "expected a " << p.race[0].kind << " '" << p.race[0].label
                                        << "' and a " << p.race[1].kind << " '" << p.race[1].label << "'\n"
                                        << f.dump(1);
    }
  }
  EXPECT_TRUE(seen) << a.describe();
}

INSTANTIATE_TEST_SUITE_P(Apps, PlantedApp, testing::ValuesIn(planted_cases()), case_name);

// --- repaired twins and the clean pipeline: no finding -----------------------------------

class CleanApp : public testing::TestWithParam<AppCase> {};

TEST_P(CleanApp, AuditReportsNothing) {
  SKIP_WITHOUT_DEVICE();
  const AppCase& c = GetParam();
  Scratch dir;
  std::vector<std::string> command = {app_path(c.binary)};
  command.insert(command.end(), c.args.begin(), c.args.end());
  const Audit a = audit(command, dir);
  ASSERT_FALSE(a.run.timed_out) << a.describe();
  ASSERT_TRUE(a.parsed()) << a.describe();
  EXPECT_EQ(app_exit_code(a.report), 0) << "the app itself failed\n" << a.describe();
  EXPECT_TRUE(trace_complete(a.report)) << a.describe();
  EXPECT_TRUE(findings_of(a.report).empty())
      << "expected no finding, got " << text_of(rules_of(a.report)) << "\n"
      << a.describe();
  EXPECT_EQ(a.run.exit_code, 0) << a.describe();
}

INSTANTIATE_TEST_SUITE_P(Apps, CleanApp, testing::ValuesIn(clean_cases()), case_name);

// --- the trace of the clean pipeline shows its overlap ------------------------------------

struct Interval {
  double start = 0.0;
  double end = 0.0;
  [[nodiscard]] bool overlaps(const Interval& other) const {
    return std::min(end, other.end) > std::max(start, other.start);
  }
};

class CleanTrace : public testing::TestWithParam<std::string> {};

TEST_P(CleanTrace, UploadsOverlapKernelsAndDownloads) {
  SKIP_WITHOUT_DEVICE();
  Scratch dir;
  const std::string timeline_path = dir.file("t.json");
  const Outcome r = run_command(
      {cli(), "trace", "--output", timeline_path, "--format", "json", "--", app_path(GetParam())}, dir);
  ASSERT_FALSE(r.timed_out) << r.describe();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json timeline;
  try {
    timeline = json::parse(read_file(timeline_path));
  } catch (const json::exception& e) {
    FAIL() << "the timeline is not JSON: " << e.what() << "\n" << r.describe();
  }
  ASSERT_TRUE(timeline.contains("spans") && timeline["spans"].is_array()) << timeline.dump(1).substr(0, 4000);

  std::set<long long> streams;
  std::vector<Interval> uploads;
  std::vector<Interval> downloads;
  std::vector<Interval> kernels;
  for (const json& span : timeline["spans"]) {
    const std::string kind = span.value("kind", std::string());
    if (kind != "copy" && kind != "kernel") continue;
    streams.insert(span.value("stream", -1LL));
    const Interval when{span.value("start", 0.0), span.value("end", 0.0)};
    const json direction = span.value("direction", json());
    if (kind == "kernel") {
      kernels.push_back(when);
    } else if (direction == "h2d") {
      uploads.push_back(when);
    } else if (direction == "d2h") {
      downloads.push_back(when);
    }
  }
  EXPECT_GE(streams.size(), 2U) << "copies and kernels on " << streams.size() << " stream(s)";
  ASSERT_FALSE(uploads.empty());
  ASSERT_FALSE(kernels.empty());
  ASSERT_FALSE(downloads.empty());
  const auto overlaps_any = [](const Interval& x, const std::vector<Interval>& others) {
    return std::any_of(others.begin(), others.end(), [&](const Interval& o) { return x.overlaps(o); });
  };
  const bool overlapped = std::any_of(uploads.begin(), uploads.end(), [&](const Interval& u) {
    return overlaps_any(u, kernels) && overlaps_any(u, downloads);
  });
  EXPECT_TRUE(overlapped) << "no upload overlaps both a kernel and a download: " << uploads.size()
                          << " uploads, " << kernels.size() << " kernels, " << downloads.size()
                          << " downloads";
}

INSTANTIATE_TEST_SUITE_P(Apps, CleanTrace, testing::Values("clean_pipeline", "clean_pipeline_static"),
                         [](const testing::TestParamInfo<std::string>& param) { return param.param; });

// --- robustness ---------------------------------------------------------------------------------

/// stderr holds one line: the error.
void expect_one_line_error(const Outcome& r) {
  std::string err = r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  EXPECT_FALSE(err.empty()) << r.describe();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "more than one line on stderr\n" << r.describe();
}

// --- measured accesses ---------------------------------------------------------------------

// `--accesses measured` (tools/measure): the planted kernel and copy races,
// inferred as possible, are proven (errors, certain) once every launch's
// bytes are measured, graphs' kernel nodes too (those of one launch that
// share a kernel included, from its first launch); the repaired twins stay
// clean.
class MeasuredRace : public testing::TestWithParam<std::string> {};

TEST_P(MeasuredRace, ProvenWhenMeasuredAndGoneWhenRepaired) {
  SKIP_WITHOUT_DEVICE();
#ifndef OVERLAP_MEASURE_BUILT
  GTEST_SKIP() << "skipped: libovl_measure.so not built (no Compute Sanitizer API when configuring)";
#endif
  Scratch dir;
  for (const bool repaired : {false, true}) {
    std::vector<std::string> command = {app_path(GetParam())};
    if (repaired) command.emplace_back("--repaired");
    const Audit a = audit(command, dir, {"--accesses", "measured"});
    ASSERT_FALSE(a.run.timed_out) << a.describe();
    ASSERT_TRUE(a.parsed()) << a.describe();
    EXPECT_EQ(app_exit_code(a.report), 0) << a.describe();
    const json accesses = a.report.value("kernel_accesses", json::object());
    EXPECT_EQ(accesses.value("mode", std::string()), "measured") << a.describe();
    EXPECT_GT(accesses.value("launches", 0), 0) << a.describe();
    EXPECT_EQ(accesses.value("measured", 0), accesses.value("launches", -1)) << "every launch measured\n"
                                                                             << a.describe();
    EXPECT_TRUE(accesses.value("measuring_run_s", json()).is_number()) << a.describe();
    std::size_t races = 0;
    for (const json& f : findings_of(a.report)) {
      if (f.value("rule", std::string()) != "race") continue;
      ++races;
      EXPECT_EQ(f.value("severity", std::string()), "error") << f.dump(1);
      EXPECT_EQ(f.value("certainty", std::string()), "certain") << f.dump(1);
    }
    EXPECT_EQ(races, repaired ? 0U : 1U) << (repaired ? "repaired" : "racy") << "\n" << a.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Apps, MeasuredRace,
                         testing::Values("race_kernels", "race_copy", "race_kernels_static", "graph_race",
                                         "graph_memory_race", "graph_shared_kernel"),
                         [](const testing::TestParamInfo<std::string>& app) { return app.param; });

// --- managed and mapped memory ---------------------------------------------------------------

// app_managed_memory: prefetches are counted apart from the driver's moves
// on demand, and the zero-copy kernel's bytes are on the link; without
// prefetches the kernels fault the pages in instead.
TEST(ManagedMemory, PrefetchesAndMovesOnDemandAreCountedApart) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::uint64_t managed_bytes = (16ULL << 20) + 4321ULL * 4;  // the app's x and y, each
  constexpr std::uint64_t mapped_bytes = ((1ULL << 20) + 777ULL) * 4;
  constexpr std::uint64_t slack = 8ULL << 20;  // the driver moves whole 2 MiB blocks at most
  Scratch dir;
  for (const bool on_demand : {false, true}) {
    std::vector<std::string> command = {app_path("managed_memory")};
    if (on_demand) command.emplace_back("--on-demand");
    const Audit a = audit(command, dir);
    ASSERT_FALSE(a.run.timed_out) << a.describe();
    ASSERT_TRUE(a.parsed()) << a.describe();
    EXPECT_EQ(app_exit_code(a.report), 0) << a.describe();
    const json link = a.report.value("link", json::object());
    const json prefetches = link.value("prefetches", json::object());
    const json moved = link.value("on_demand", json::object());
    const json mapped = link.value("mapped", json::object());
    if (on_demand) {
      EXPECT_EQ(prefetches.value("count", -1), 0) << link.dump(1);
      // x faulted in by the kernels (y too: its pages started on the host).
      EXPECT_GE(moved.value("h2d_bytes", std::uint64_t{0}), managed_bytes) << link.dump(1);
    } else {
      // x and y to the GPU, y back.
      EXPECT_GE(prefetches.value("h2d_bytes", std::uint64_t{0}), 2 * managed_bytes) << link.dump(1);
      EXPECT_LE(prefetches.value("h2d_bytes", std::uint64_t{0}), 2 * managed_bytes + slack) << link.dump(1);
      EXPECT_GE(prefetches.value("d2h_bytes", std::uint64_t{0}), managed_bytes) << link.dump(1);
      EXPECT_LE(prefetches.value("d2h_bytes", std::uint64_t{0}), managed_bytes + slack) << link.dump(1);
      EXPECT_LT(moved.value("h2d_bytes", std::uint64_t{0}), managed_bytes) << link.dump(1);
    }
    // The zero-copy kernel: one launch, its whole input inferred from the pointer.
    EXPECT_EQ(mapped.value("launches", -1), 1) << link.dump(1);
    EXPECT_EQ(mapped.value("inferred", -1), 1) << link.dump(1);
    EXPECT_EQ(mapped.value("read_bytes", std::uint64_t{0}), mapped_bytes) << link.dump(1);
    EXPECT_EQ(a.report.value("summary", json::object()).value("errors", -1), 0) << a.describe();
  }
}

// app_printf_sync: the tracer names the kernel that calls printf, and a
// cudaDeviceSynchronize that shows its output is not reported; with a
// kernel that prints nothing (--quiet) the same syncs serve nothing.
TEST(PrintingKernels, ASyncThatShowsTheirOutputIsNotUseless) {
  SKIP_WITHOUT_DEVICE();
  Scratch dir;
  for (const bool quiet : {false, true}) {
    std::vector<std::string> command = {app_path("printf_sync")};
    if (quiet) command.emplace_back("--quiet");
    const std::string raw = dir.file(quiet ? "quiet.jsonl" : "printing.jsonl");
    const Audit a = audit(command, dir, {"--raw", raw});
    ASSERT_FALSE(a.run.timed_out) << a.describe();
    ASSERT_TRUE(a.parsed()) << a.describe();
    EXPECT_EQ(app_exit_code(a.report), 0) << a.describe();
    // The app's own output passes through, the GPU's lines among it.
    const std::string output = a.run.out + a.run.err;
    EXPECT_EQ(output.find("gpu: round 7: first result") != std::string::npos, !quiet) << output;
    // The record names the module's printing kernel when the module loads,
    // in both runs; the quiet run launches only busy_kernel, which does not
    // print (a whole-module answer would hide its trap).
    EXPECT_NE(read_file(raw).find(R"({"t":"printf","kernel":"_Z15busy_then_print)"), std::string::npos)
        << raw;
    EXPECT_EQ(rules_of(a.report).contains("device-synchronize"), quiet) << a.describe();
  }
}

TEST(Robustness, MissingAppIsBadInput) {
  SKIP_WITHOUT_DEVICE();
  Scratch dir;
  const std::string missing = dir.file("no_such_app");
  const Outcome audited = run_command({cli(), "audit", "--json", "--", missing}, dir, 120s);
  ASSERT_FALSE(audited.timed_out) << audited.describe();
  EXPECT_EQ(audited.exit_code, 2) << audited.describe();
  expect_one_line_error(audited);
  const Outcome traced = run_command({cli(), "trace", "--", missing}, dir, 120s);
  ASSERT_FALSE(traced.timed_out) << traced.describe();
  EXPECT_EQ(traced.exit_code, 2) << traced.describe();
  expect_one_line_error(traced);
}

TEST(Robustness, ProgramWithoutCudaSaysSo) {
  SKIP_WITHOUT_DEVICE();
  Scratch dir;
  const std::string true_program = on_path("true");
  ASSERT_FALSE(true_program.empty()) << "no 'true' on PATH";
  const Outcome r = run_command({cli(), "trace", "--", true_program}, dir, 120s);
  ASSERT_FALSE(r.timed_out) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(lower(r.out + r.err).find("no cuda activity"), std::string::npos) << r.describe();
}

TEST(Robustness, TracePassesTheExitCodeOn) {
  SKIP_WITHOUT_DEVICE();
  Scratch dir;
  const Outcome r = run_command({cli(), "trace", "--", "sh", "-c", "exit 7"}, dir, 120s);
  ASSERT_FALSE(r.timed_out) << r.describe();
  EXPECT_EQ(r.exit_code, 7) << r.describe();
}

TEST(Robustness, CrashEndsTheTraceWithTheSignal) {
  SKIP_WITHOUT_DEVICE();
  for (const std::string suffix : {"", "_static"}) {
    Scratch dir;
    const Outcome segv = run_command({cli(), "trace", "--", app_path("crash" + suffix)}, dir, 180s);
    ASSERT_FALSE(segv.timed_out) << "trace hung on a crashing app\n" << segv.describe();
    EXPECT_EQ(segv.exit_code, 128 + SIGSEGV) << segv.describe();
    const Outcome aborted =
        run_command({cli(), "trace", "--", app_path("crash" + suffix), "--abort"}, dir, 180s);
    ASSERT_FALSE(aborted.timed_out) << "trace hung on an aborting app\n" << aborted.describe();
    EXPECT_EQ(aborted.exit_code, 128 + SIGABRT) << aborted.describe();
  }
}

TEST(Robustness, SigtermEndsTheTraceWithTheSignal) {
  SKIP_WITHOUT_DEVICE();
  for (const std::string suffix : {"", "_static"}) {
    Scratch dir;
    const Outcome traced = run_command({cli(), "trace", "--", app_path("sleeper" + suffix)}, dir, 180s);
    ASSERT_FALSE(traced.timed_out) << "trace hung on an app ended by SIGTERM\n" << traced.describe();
    EXPECT_EQ(traced.exit_code, 128 + SIGTERM) << traced.describe();
    const std::string said = lower(traced.out + traced.err);
    EXPECT_TRUE(said.find("signal") != std::string::npos || said.find("partial") != std::string::npos ||
                said.find("sigterm") != std::string::npos)
        << "the trace does not say it ended with a signal or is partial\n"
        << traced.describe();

    const Audit audited = audit({app_path("sleeper" + suffix)}, dir);
    ASSERT_FALSE(audited.run.timed_out) << audited.describe();
    ASSERT_TRUE(audited.parsed()) << audited.describe();
    EXPECT_EQ(app_exit_code(audited.report), 128 + SIGTERM) << audited.describe();
    EXPECT_TRUE(audited.report.contains("trace")) << audited.describe();
    EXPECT_TRUE(audited.run.exit_code == 0 || audited.run.exit_code == 1) << audited.describe();
  }
}

TEST(Robustness, ForkingAppIsAudited) {
  SKIP_WITHOUT_DEVICE();
  for (const std::string suffix : {"", "_static"}) {
    Scratch dir;
    const Audit a = audit({app_path("forker" + suffix)}, dir);
    ASSERT_FALSE(a.run.timed_out) << a.describe();
    ASSERT_TRUE(a.parsed()) << a.describe();
    EXPECT_EQ(app_exit_code(a.report), 0) << a.describe();
    EXPECT_TRUE(a.run.exit_code == 0 || a.run.exit_code == 1) << a.describe();
    EXPECT_TRUE(findings_of(a.report).empty())
        << "expected no finding, got " << text_of(rules_of(a.report)) << "\n"
        << a.describe();
  }
}

// --- Python: CuPy and PyTorch, run unmodified --------------------------------------------------

struct PythonCase {
  std::string script;  ///< in tests/apps/python/
  std::string module;  ///< what python3 must import
  std::string probe;   ///< python3 -c PROBE must exit 0
};

std::string python_case_name(const testing::TestParamInfo<PythonCase>& info) {
  return info.param.module;
}

void PrintTo(const PythonCase& c, std::ostream* os) {
  *os << c.script;
}

class PythonTraps : public testing::TestWithParam<PythonCase> {};

TEST_P(PythonTraps, PlantedAndRepaired) {
  SKIP_WITHOUT_DEVICE();
  const PythonCase& p = GetParam();
  Scratch dir;
  const std::string python = on_path("python3");
  if (python.empty()) GTEST_SKIP() << "skipped: no python3 on PATH";
  const Outcome probe = run_command({python, "-c", p.probe}, dir, 180s);
  if (probe.exit_code != 0)
    GTEST_SKIP() << "skipped: python3 cannot import " << p.module << " with a CUDA device ("
                 << probe.err.substr(0, 300) << ")";

  const std::set<std::string> planted = {"pageable-async-copy", "device-synchronize"};
  const Audit trapped = audit({python, python_script(p.script)}, dir);
  ASSERT_FALSE(trapped.run.timed_out) << trapped.describe();
  ASSERT_TRUE(trapped.parsed()) << trapped.describe();
  EXPECT_EQ(app_exit_code(trapped.report), 0) << "the script itself failed\n" << trapped.describe();
  const std::set<std::string> found = rules_of(trapped.report);
  for (const std::string& rule : planted) {
    EXPECT_TRUE(found.contains(rule)) << "missing " << rule << " in " << text_of(found) << "\n"
                                      << trapped.describe();
  }

  const Audit repaired = audit({python, python_script(p.script), "--repaired"}, dir);
  ASSERT_FALSE(repaired.run.timed_out) << repaired.describe();
  ASSERT_TRUE(repaired.parsed()) << repaired.describe();
  EXPECT_EQ(app_exit_code(repaired.report), 0) << "the script itself failed\n" << repaired.describe();
  const std::set<std::string> found_repaired = rules_of(repaired.report);
  for (const std::string& rule : planted) {
    EXPECT_FALSE(found_repaired.contains(rule))
        << rule << " in the repaired run: " << text_of(found_repaired) << "\n"
        << repaired.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Scripts, PythonTraps,
    testing::Values(PythonCase{"cupy_traps.py", "cupy",
                               "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0"},
                    PythonCase{"torch_traps.py", "torch", "import torch; assert torch.cuda.is_available()"}),
    python_case_name);

// --- multi-process jobs: one process per GPU, each named by its rank ------------------------------

// The audit of a two-rank job ran to its end and reports a process per
// rank, named after it: the jobs of every launcher below (a shell, mpirun,
// torchrun).
void expect_two_named_ranks(const Audit& a) {
  ASSERT_FALSE(a.run.timed_out) << a.describe();
  ASSERT_TRUE(a.parsed()) << a.describe();
  ASSERT_TRUE(a.report.contains("processes")) << a.describe();
  const json& processes = a.report["processes"];
  ASSERT_EQ(processes.size(), 2U) << a.describe();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(processes[rank]["name"], "rank" + std::to_string(rank)) << a.describe();
  }
}

TEST(MultiProcess, EachRankOfAJobIsAuditedAndNamed) {
  SKIP_WITHOUT_TWO_DEVICES();
  Scratch dir;
  const std::string app = app_path("clean_pipeline");
  const std::string job =
      "RANK=0 CUDA_VISIBLE_DEVICES=0 " + app + " & RANK=1 CUDA_VISIBLE_DEVICES=1 " + app + " & wait";
  const Audit a = audit({"/bin/sh", "-c", job}, dir);
  ASSERT_NO_FATAL_FAILURE(expect_two_named_ranks(a));
  for (int rank = 0; rank < 2; ++rank) {
    const json& p = a.report["processes"][rank];
    EXPECT_EQ(p["rank"], rank);
    EXPECT_GT(p["report"]["trace"]["ops"].get<int>(), 0) << a.describe();
    EXPECT_TRUE(findings_of(p["report"]).empty()) << text_of(rules_of(p["report"])) << "\n" << a.describe();
  }
  EXPECT_EQ(a.report["exit_code"], 0) << a.describe();

  // The trace joins them: each rank's streams are lanes of their own, on a GPU of their own.
  const std::string chrome = dir.file("job.json");
  const Outcome t =
      run_command({cli(), "trace", "--format", "json", "-o", chrome, "--", "/bin/sh", "-c", job}, dir);
  ASSERT_EQ(t.exit_code, 0) << t.describe();
  const json timeline = json::parse(read_file(chrome));
  std::set<std::string> prefixes;
  for (const json& stream : timeline["streams"]) {
    const std::string name = stream["name"];
    prefixes.insert(name.substr(0, name.find('.')));
  }
  EXPECT_EQ(prefixes, (std::set<std::string>{"rank0", "rank1"})) << timeline["streams"].dump();
}

// The same two ranks launched by Open MPI's mpirun (scripts/mpi-device-run.sh
// puts one on PATH on the lent machines): each rank is named by
// OMPI_COMM_WORLD_RANK and runs on the GPU of its local rank; the planted
// race is found in both, the clean app has no finding.
TEST(MultiProcess, MpirunRanksAreAuditedAndNamed) {
  SKIP_WITHOUT_TWO_DEVICES();
  Scratch dir;
  std::string mpirun = on_path("mpirun");
  if (mpirun.empty()) mpirun = on_path("mpirun.openmpi");
  if (mpirun.empty()) GTEST_SKIP() << "skipped: no mpirun on PATH";
  for (const std::string& name : {std::string("clean_pipeline"), std::string("race_kernels")}) {
    SCOPED_TRACE(name);
    const Audit a = audit({mpirun, "-np", "2", "/bin/sh", "-c",
                           "CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec \"$0\"", app_path(name)},
                          dir);
    ASSERT_NO_FATAL_FAILURE(expect_two_named_ranks(a));
    for (int rank = 0; rank < 2; ++rank) {
      const json& p = a.report["processes"][rank];
      const std::set<std::string> rules = rules_of(p["report"]);
      if (name == "clean_pipeline") {
        EXPECT_TRUE(findings_of(p["report"]).empty()) << text_of(rules) << "\n" << a.describe();
      } else {
        EXPECT_TRUE(rules.contains("race")) << text_of(rules) << "\n" << a.describe();
      }
    }
  }
}

// A DistributedDataParallel job under torchrun (examples/ddp_train.py, NCCL):
// every rank's all-reduces overlap its backward on NCCL's stream; with the
// all-reduce made synchronous on the compute stream (--serialize) each rank
// has a serialized-communication finding.
TEST(MultiProcess, TorchrunDdpCommunicationPerRank) {
  SKIP_WITHOUT_TWO_DEVICES();
  Scratch dir;
  const std::string python = on_path("python3");
  if (python.empty()) GTEST_SKIP() << "skipped: no python3 on PATH";
  const Outcome probe = run_command({python, "-c",
                                     "import torch, torch.distributed as d; assert torch.cuda.device_count() "
                                     "> 1 and d.is_nccl_available()"},
                                    dir, 180s);
  if (probe.exit_code != 0) GTEST_SKIP() << "skipped: python3 cannot run torch with NCCL on 2 GPUs";
  const std::string script = std::string(OVERLAP_SOURCE_DIR) + "/examples/ddp_train.py";
  for (const bool serialized : {false, true}) {
    std::vector<std::string> command = {python,
                                        "-m",
                                        "torch.distributed.run",
                                        "--standalone",
                                        "--nproc-per-node",
                                        "2",
                                        script,
                                        "--steps",
                                        "8",
                                        "--layers",
                                        "4"};
    if (serialized) command.emplace_back("--serialize");
    const Audit a = audit(command, dir, {"--fail-on", "error"});
    ASSERT_NO_FATAL_FAILURE(expect_two_named_ranks(a));
    for (int rank = 0; rank < 2; ++rank) {
      const json& r = a.report["processes"][rank]["report"];
      ASSERT_TRUE(r["communication"].is_object()) << a.describe();
      EXPECT_GT(r["communication"]["communication_kernels"].get<int>(), 0);
      const double overlap = r["communication"]["overlap_fraction"];
      const bool flagged = rules_of(r).contains("serialized-communication");
      if (serialized) {
        EXPECT_TRUE(flagged) << text_of(rules_of(r)) << "\n" << a.describe();
        EXPECT_LT(overlap, 0.05) << a.describe();
      } else {
        EXPECT_FALSE(flagged) << a.describe();
        EXPECT_GT(overlap, 0.2) << a.describe();
      }
    }
  }
}

}  // namespace
