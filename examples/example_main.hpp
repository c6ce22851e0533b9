// The main() of every example: run it where there is a GPU, say
// "skipped: no CUDA device" (ctest's skip marker) and succeed where there is
// none, and turn an error into one line and exit 1.
#pragma once

#include <cstdio>
#include <exception>

#include "overlap/cuda/error.hpp"

namespace example {

/// Returns what `run` returns (0: verified), 0 without a device, 1 on an exception.
inline int main_on_gpu(int (*run)()) {
  if (overlap::cuda::device_count() == 0) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace example
