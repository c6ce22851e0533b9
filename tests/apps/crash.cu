// app_crash: some CUDA work, then the process dies of a signal, as a program
// with a bug does: raise(SIGSEGV), or abort() (SIGABRT) with --abort.
// `overlap trace` must not hang on it and must exit with 128 + the signal
// (139, or 134 with --abort); the trace file has no footer (the tracer does
// not catch SIGSEGV or SIGABRT), so the trace is read as partial.
//
//   app_crash [--abort]
#include <sys/resource.h>

#include <csignal>

#include "app_support.hpp"

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_crash");
  const bool use_abort = args.flag("--abort");
  args.finish();
  // No core file: the core of a CUDA process can take gigabytes.
  rlimit core{};
  if (getrlimit(RLIMIT_CORE, &core) == 0) {
    core.rlim_cur = 0;
    (void)setrlimit(RLIMIT_CORE, &core);
  }

  app::run_small_pipeline(app::MiB + 4321, 14);
  std::fflush(stdout);
  if (use_abort) std::abort();
  std::raise(SIGSEGV);
  return 0;  // not reached: SIGSEGV's default action ends the process
}
