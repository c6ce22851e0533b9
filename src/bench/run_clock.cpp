// run_clock: CUDA events on a clock stream around each run, and the host's clock beside them.
#include "run_clock.hpp"

namespace overlap::bench::detail {

double milliseconds_since(host_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(host_clock::now() - start).count();
}

run_clock::sample run_clock::time(const runner& run) {
  const auto host_start = host_clock::now();
  start_.record(stream_);
  run_info info = run(start_);
  end_.record(stream_);
  end_.synchronize();
  const double host_ms = milliseconds_since(host_start);
  return {end_.elapsed_since(start_), host_ms, info};
}

}  // namespace overlap::bench::detail
