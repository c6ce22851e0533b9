// app_forker: uses CUDA, forks a child that exits without touching CUDA,
// waits for it, and uses CUDA again (the same buffers and streams). A traced
// process that forks must not crash or hang the tracer, and the child must
// not write into (or over) the parent's trace. The child calls only
// async-signal-safe functions, as a child of a multithreaded process must
// until it execs.
//
// Expected from `overlap audit`: no finding; exit code 0.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "app_support.hpp"

namespace {

/// Forks a child that exits at once, and waits for it; exits the app on failure.
void fork_and_wait() {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("app_forker: fork");
    std::exit(3);
  }
  if (child == 0) _exit(0);
  int status = 0;
  pid_t waited = -1;
  do {
    waited = waitpid(child, &status, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited < 0) {
    std::perror("app_forker: waitpid");
    std::exit(3);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "app_forker: the child ended with status %d\n", status);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_forker");
  args.finish();

  const app::Timer timer;
  app::run_small_pipeline(4 * app::MiB + 4321, 16, 2, fork_and_wait);
  args.print_ok(timer.ms());
  return 0;
}
