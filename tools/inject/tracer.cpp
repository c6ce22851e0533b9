// The process-wide tracer, per-thread state and error records (see tracer.hpp).
//
// Thread state is heap-allocated and reached through a thread_local pointer
// rather than being a thread_local object: a C++ thread_local with a
// destructor would be destroyed while other thread-exit code (another
// library's thread_local destructors, pthread key destructors) can still make
// CUDA calls that call back into us. The pointer is trivially destructible,
// and a pthread key frees the state after those have run.
#include "tracer.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#include <functional>
#include <mutex>
#include <unordered_set>

namespace overlap::inject {

namespace {

std::atomic<Tracer*> the_tracer{nullptr};

thread_local ThreadState* current_thread = nullptr;

void free_thread_state(void* state) {
  delete static_cast<ThreadState*>(state);
  current_thread = nullptr;
}

pthread_key_t thread_state_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    (void)pthread_key_create(&k, &free_thread_state);
    return k;
  }();
  return key;
}

/// Failures already reported, as (what, code) hashes: each is written once.
struct ReportedErrors {
  std::mutex mutex;
  std::unordered_set<std::uint64_t> seen;
};

ReportedErrors& reported_errors() {
  static auto* errors = new ReportedErrors;  // never destroyed: errors can come during exit
  return *errors;
}

}  // namespace

Tracer::Tracer(std::string path, bool with_callers) : writer(std::move(path)) {
  // This library's own frames are skipped by its file name, whatever the
  // file was renamed to, so look it up rather than assume libovl_inject.
  std::vector<std::string> skip;
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&on_api_callback), &self) != 0 && self.dli_fname != nullptr) {
    skip.emplace_back(module_basename(self.dli_fname));
  }
  if (with_callers) callers = std::make_unique<CallerResolver>(std::move(skip));
}

Tracer* tracer() noexcept {
  return the_tracer.load(std::memory_order_acquire);
}

void install_tracer(Tracer* t) noexcept {
  (void)thread_state_key();
  the_tracer.store(t, std::memory_order_release);
}

ThreadState::ThreadState() : tid(static_cast<std::uint64_t>(::syscall(SYS_gettid))) {
  // Sized once so building a record never allocates afterwards.
  constexpr std::size_t line_capacity = 4096;
  constexpr std::size_t name_capacity = 256;
  constexpr std::size_t ptrs_capacity = 64;
  line.reserve(line_capacity);
  kernel.reserve(name_capacity);
  ptrs.params.reserve(ptrs_capacity);
  ptrs.in_structs.reserve(max_struct_words);
}

ThreadState& thread_state() {
  if (current_thread == nullptr) {
    current_thread = new ThreadState;
    (void)pthread_setspecific(thread_state_key(), current_thread);
  }
  return *current_thread;
}

void write_line(std::string& line, std::uint64_t records) {
  if (Tracer* t = tracer()) t->writer.append(line, records);
  line.clear();
}

void report_error(std::string_view what, long code, std::string_view detail) {
  Tracer* t = tracer();
  if (t == nullptr) return;
  const std::uint64_t key =
      std::hash<std::string_view>{}(what) ^ (static_cast<std::uint64_t>(code) * 0x9E3779B97F4A7C15ULL);
  {
    ReportedErrors& errors = reported_errors();
    const std::lock_guard lock(errors.mutex);
    if (!errors.seen.insert(key).second) return;
  }
  std::string message(what);
  message.append(" failed");
  if (!detail.empty()) {
    message.append(": ");
    message.append(detail);
  }
  message.append(" (");
  message.append(std::to_string(code));
  message.append(")");
  std::string line;
  JsonLine(line, "error").string("message", message).finish();
  t->writer.append(line);
}

std::string_view cupti_result_text(CUptiResult result) noexcept {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) return "unknown CUPTI error";
  return text;
}

bool cupti_ok(CUptiResult result, std::string_view what) {
  if (result == CUPTI_SUCCESS) return true;
  report_error(what, static_cast<long>(result), cupti_result_text(result));
  return false;
}

bool driver_ok(CUresult result, std::string_view what) {
  if (result == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  {
    const OwnDriverCalls own;
    if (cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  }
  report_error(what, static_cast<long>(result), name != nullptr ? name : "CUDA driver error");
  return false;
}

std::uint64_t monotonic_ns() noexcept {
  timespec now{};
  (void)::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000U + static_cast<std::uint64_t>(now.tv_nsec);
}

std::uint64_t timestamp() noexcept {
  std::uint64_t now = 0;
  if (cuptiGetTimestamp(&now) != CUPTI_SUCCESS) return 0;
  return now;
}

}  // namespace overlap::inject
