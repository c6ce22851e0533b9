// verify_output: every element, on all cores; the first wrong one is reported.
#include "output_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "host_parallel.hpp"

namespace overlap::bench::detail {

void verify_output(std::span<const float> in, std::span<const float> out, std::span<const float> reference,
                   tolerance allowed, const std::string& what) {
  const std::size_t n = out.size();
  // Each thread's range gets a slot for its first wrong index (n: none); the
  // smallest over the slots is the first wrong element of all.
  const unsigned threads = host_threads();
  std::vector<std::size_t> first_bad(threads + 1, n);
  const std::size_t per_thread = (n + threads - 1) / threads;
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    const std::size_t slot = per_thread == 0 ? 0 : begin / per_thread;
    for (std::size_t i = begin; i < end; ++i) {
      if (!within(out[i], reference[i], allowed)) {
        first_bad[slot] = i;
        return;
      }
    }
  });
  const std::size_t bad = *std::min_element(first_bad.begin(), first_bad.end());
  if (bad == n) return;
  throw wrong_output(fmt::format("{}: output[{}] = {:.9g}, expected {:.9g} (input {:.9g})", what, bad,
                                 out[bad], reference[bad], in[bad]),
                     bad);
}

}  // namespace overlap::bench::detail
