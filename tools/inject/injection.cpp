// InitializeInjection, the library's only exported symbol, and the end of a
// trace: atexit, SIGINT/SIGTERM and fork.
//
// The CUDA driver loads this library from CUDA_INJECTION64_PATH at the first
// CUDA call and calls InitializeInjection once. It opens the trace file,
// writes the header, subscribes to CUPTI and installs the exit paths. Nothing
// here may end or disturb the app: if CUPTI is taken (another profiler) or
// fails, the file gets an error record and a footer, stderr gets one line,
// and the app runs on untraced. At exit the device work still in CUPTI's
// buffers is flushed and the footer written; on SIGINT/SIGTERM the same is
// done (best effort) before the signal is passed on, so the app's exit
// status does not change. A forked child never writes its parent's file.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "devices.hpp"
#include "env_record.hpp"
#include "record_writer.hpp"
#include "tracer.hpp"

namespace overlap::inject {

namespace {

/// The process that owns the trace file; 0 when this run is not traced.
std::atomic<pid_t> traced_pid{0};
std::atomic<bool> finalizing{false};

struct sigaction previous_sigint {};
struct sigaction previous_sigterm {};

/// mkdir -p: each missing level of `path` (errors are left to open() to report).
void make_directories(const std::string& path) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    (void)::mkdir(path.substr(0, slash).c_str(), 0755);
  }
  (void)::mkdir(path.c_str(), 0755);
}

bool env_equals(const char* name, std::string_view value) {
  const char* set = std::getenv(name);
  return set != nullptr && value == set;
}

std::string exe_path() {
  std::array<char, 4096> buffer{};
  const ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  return n > 0 ? std::string(buffer.data(), static_cast<std::size_t>(n)) : std::string();
}

/// The command line, arguments separated by spaces (the script a Python
/// process runs is only visible here); at most 1 KiB.
std::string command_line() {
  std::string text;
  std::FILE* file = std::fopen("/proc/self/cmdline", "rb");
  if (file == nullptr) return text;
  constexpr std::size_t max_length = 1024;
  std::array<char, max_length> buffer{};
  const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file);
  std::fclose(file);
  text.assign(buffer.data(), n);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

void write_header(Tracer& t) {
  std::uint32_t cupti_version = 0;
  (void)cupti_ok(cuptiGetVersion(&cupti_version), "cuptiGetVersion");
  std::string line;
  JsonLine(line, "header")
      .number("version", trace_format_version)
      .number("pid", ::getpid())
      .string("exe", exe_path())
      .string("cmdline", command_line())
      .number("cupti", cupti_version)
      .number("start", t.start_time)
      .finish();
  // Read here, inside the first CUDA call (cuInit): before any context, so
  // what the driver will use for the connections the streams share.
  append_env_record(line, [](const char* name) -> const char* {
    return std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once, at start-up
  });
  t.writer.append(line, 2);
}

/// OVERLAP_TRACE_STATS=1: where the tracer's time went, on stderr at exit.
void print_costs(const Tracer& t, std::uint64_t exit_ns) {
  const auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e6; };
  const std::uint64_t calls = t.costs.api_callbacks.load();
  (void)std::fprintf(
      stderr,
      "overlap: tracer costs: %llu API callbacks %.1f ms (%.2f us each); %llu activity buffers "
      "%.1f ms; at exit (flush, last records, footer) %.1f ms; %llu records written\n",
      static_cast<unsigned long long>(calls), ms(t.costs.api_ns.load()),
      calls > 0 ? ms(t.costs.api_ns.load()) * 1e3 / static_cast<double>(calls) : 0.0,
      static_cast<unsigned long long>(t.costs.activity_buffers.load()), ms(t.costs.activity_ns.load()),
      ms(exit_ns), static_cast<unsigned long long>(t.writer.records_written()));
}

/// Flushes CUPTI and writes the footer, once. From a signal handler the
/// writer only try-locks, and CUPTI is asked to flush only if no callback of
/// this library is running (the signal may have interrupted one inside CUPTI).
void finalize(std::string_view reason, bool from_signal) {
  Tracer* t = tracer();
  if (t == nullptr || ::getpid() != traced_pid.load()) return;  // untraced, or a forked child
  if (finalizing.exchange(true)) return;
  const std::uint64_t started = t->costs.counted ? monotonic_ns() : 0;
  if (from_signal) t->writer.set_signal_mode(true);
  if (!from_signal || t->callbacks_running.load() == 0) flush_activity(/*forced=*/true);
  if (!from_signal) write_queued_devices();
  (void)t->writer.finish(reason, activity_records_dropped(!from_signal), from_signal);
  if (started != 0 && !from_signal) print_costs(*t, monotonic_ns() - started);
}

void at_exit() {
  finalize("exit", false);
}

const struct sigaction& previous_action(int sig) {
  return sig == SIGINT ? previous_sigint : previous_sigterm;
}

/// The app (Python, say) installed its own handler before this library's.
bool app_handles(const struct sigaction& action) {
  if ((action.sa_flags & SA_SIGINFO) != 0) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

void on_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const struct sigaction& previous = previous_action(sig);
  if (!app_handles(previous)) {
    // The signal ends the process: finish the file, then let the default
    // action happen (raised now, delivered when this handler returns).
    std::array<char, 32> reason{"signal "};
    const auto written = std::to_chars(reason.data() + 7, reason.data() + reason.size(), sig);
    finalize(std::string_view(reason.data(), static_cast<std::size_t>(written.ptr - reason.data())), true);
    (void)::sigaction(sig, &previous, nullptr);
    (void)::raise(sig);
  } else {
    // The app may go on running: save what is buffered, leave the footer to
    // exit, and hand the signal to the app's handler.
    if (Tracer* t = tracer(); t != nullptr && ::getpid() == traced_pid.load())
      t->writer.flush(/*from_signal=*/true);
    if ((previous.sa_flags & SA_SIGINFO) != 0) {
      previous.sa_sigaction(sig, info, context);
    } else {
      previous.sa_handler(sig);
    }
  }
  errno = saved_errno;
}

void install_signal_handlers() {
  for (const int sig : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    // Ignored (nohup, a shell's background job): the app does not die of it, nothing to do.
    if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN) continue;
    (sig == SIGINT ? previous_sigint : previous_sigterm) = current;
    struct sigaction ours {};
    ours.sa_sigaction = &on_signal;
    ours.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
    sigemptyset(&ours.sa_mask);
    sigaddset(&ours.sa_mask, SIGINT);  // one flush at a time
    sigaddset(&ours.sa_mask, SIGTERM);
    (void)::sigaction(sig, &ours, nullptr);
  }
}

void before_fork() {
  if (Tracer* t = tracer()) t->writer.before_fork();
}

void after_fork_in_parent() {
  if (Tracer* t = tracer()) t->writer.after_fork_in_parent();
}

void after_fork_in_child() {
  if (Tracer* t = tracer()) t->writer.after_fork_in_child();
}

/// A CUPTI set-up step that failed.
struct SetupFailure {
  std::string_view what;
  CUptiResult result;
};

std::optional<SetupFailure> enable_callbacks(CUpti_SubscriberHandle subscriber) {
  for (const auto domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    const CUptiResult result = cuptiEnableDomain(1, subscriber, domain);
    if (result != CUPTI_SUCCESS) return SetupFailure{"cuptiEnableDomain", result};
  }
  // Only the resource events used; module loads name the kernels that
  // print (printing_kernels.hpp); the graph events give each graph's nodes
  // and edges (graphs.hpp).
  for (const auto cbid : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                          CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
                          CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                          CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS,
                          CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED}) {
    (void)cupti_ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid),
                   "cuptiEnableCallback(RESOURCE)");
  }
  return std::nullopt;
}

/// Ends an untraced run's file: an error record, the footer, one line on stderr.
void give_up(Tracer& t, const SetupFailure& failure, std::string_view holder) {
  std::string detail(cupti_result_text(failure.result));
  std::string stderr_line;
  if (failure.result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    detail.append(": CUPTI is already in use by another profiler or tool");
    if (!holder.empty()) {
      detail.append(" (");
      detail.append(holder);
      detail.append(")");
    }
    stderr_line = "overlap: CUPTI is already in use by another profiler or tool; this run is not traced\n";
  } else {
    stderr_line = "overlap: ";
    stderr_line.append(failure.what);
    stderr_line.append(" failed (");
    stderr_line.append(cupti_result_text(failure.result));
    stderr_line.append("); this run is not traced\n");
  }
  report_error(failure.what, static_cast<long>(failure.result), detail);
  (void)t.writer.finish("not traced", 0, false);
  (void)std::fputs(stderr_line.c_str(), stderr);
}

/// cuptiSubscribe_v2 where the CUPTI in the process has it (it names the
/// tool that holds CUPTI), else cuptiSubscribe. Looked up rather than linked:
/// the process may already hold an older libcupti.so.13 (a Python wheel's),
/// which the loader then uses for this library too.
CUptiResult subscribe(CUpti_SubscriberHandle& subscriber, std::array<char, 128>& holder) {
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
  using SubscribeV2 =
      CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*);
  if (auto* v2 = reinterpret_cast<SubscribeV2>(::dlsym(RTLD_DEFAULT, "cuptiSubscribe_v2"))) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "overlap";
    params.oldSubscriberName = holder.data();
    params.oldSubscriberSize = holder.size();
    const CUptiResult result = v2(&subscriber, &on_api_callback, nullptr, &params);
    holder.back() = '\0';
    return result;
  }
#endif
  return cuptiSubscribe(&subscriber, &on_api_callback, nullptr);
}

void start_tracing() {
  const char* directory = std::getenv("OVERLAP_TRACE_DIR");
  const std::string dir = directory != nullptr ? directory : "";
  if (!dir.empty()) make_directories(dir);
  const bool callers = !env_equals("OVERLAP_TRACE_CALLERS", "0");
  auto* t = new Tracer(RecordWriter::path_for(dir, ::getpid()), callers);  // never deleted once installed
  t->costs.counted = env_equals("OVERLAP_TRACE_STATS", "1");
  std::string error;
  if (!t->writer.open(error)) {
    (void)std::fprintf(stderr, "overlap: cannot create the trace file %s (%s); this run is not traced\n",
                       t->writer.path().c_str(), error.c_str());
    delete t;
    return;
  }
  traced_pid.store(::getpid());
  t->start_time = timestamp();
  install_tracer(t);
  write_header(*t);
  t->writer.flush();  // a file with a header even if the process dies early
  {
    // This runs inside cuInit. If the runtime called it (from the app's
    // first runtime call), the calls until that call's exit are the
    // runtime's. (backtrace() also loads libgcc_s here, not in a CUDA call.)
    RawFrames frames;
    capture_frames(frames);
    CallerResolver probe;
    CallerResolver& resolver = t->callers ? *t->callers : probe;
    if (resolver.inside_cuda_runtime(frames)) begin_inside_runtime_call();
  }

  CUpti_SubscriberHandle subscriber = nullptr;
  std::array<char, 128> holder{};  // CUPTI names the tool that holds it, if one does
  const CUptiResult subscribed = subscribe(subscriber, holder);
  if (subscribed != CUPTI_SUCCESS) {
    give_up(*t, {"cuptiSubscribe", subscribed}, holder.data());
    return;
  }
  std::optional<SetupFailure> failure = enable_callbacks(subscriber);
  if (!failure) {
    if (const CUptiResult registered = start_activity_tracing(); registered != CUPTI_SUCCESS) {
      failure = SetupFailure{"cuptiActivityRegisterCallbacks", registered};
    }
  }
  if (failure) {
    (void)cuptiUnsubscribe(subscriber);
    give_up(*t, *failure, {});
    return;
  }
  if (std::atexit(&at_exit) != 0) report_error("atexit", 0, "the trace will have no footer at exit");
  if (::pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child) != 0) {
    report_error("pthread_atfork", 0, "a forked child could write into this file");
  }
  if (!env_equals("OVERLAP_TRACE_NO_SIGNALS", "1")) install_signal_handlers();
}

}  // namespace

}  // namespace overlap::inject

/// Called by the CUDA driver once, at the first CUDA call of the process.
/// Always returns 1: the app runs whether or not it is traced.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> called{false};
  if (called.exchange(true)) return 1;
  try {
    overlap::inject::start_tracing();
  } catch (...) {
    (void)std::fputs("overlap: the tracer could not start (out of memory); this run is not traced\n", stderr);
  }
  return 1;
}
