// The seeds' code, as the baselines Pipeline is compared with: one stream
// doing the whole H2D, kernel and D2H, and their hand-written two-stream split.
#include "workload_bench.hpp"

namespace overlap::bench::detail {

void workload_bench::measure_baselines(workload_result& result) {
  cuda::stream& a = streams_[0];
  result.variants.push_back(measure_one(
      variant_kind::sequential, "sequential (1 stream)",
      [&](const cuda::event& start) {
        start.wait_on(a);
        issue_chunk(0, elements_, a, {"sequential H2D", "sequential D2H"});
        a.synchronize();
        return whole();
      },
      true));
  // Seed 001's code: two halves, each H2D, kernel, D2H on its own stream,
  // issued depth-first (all of half 0, then all of half 1).
  result.variants.push_back(measure_one(
      variant_kind::two_stream, "hand-written 2 streams",
      [&](const cuda::event& start) {
        const std::size_t half = elements_ / 2;
        for (cuda::stream& s : streams_) start.wait_on(s);
        for (int i = 0; i < 2; ++i) {
          const std::size_t offset = i == 0 ? 0 : half;
          const std::size_t count = i == 0 ? half : elements_ - half;
          issue_chunk(offset, count, streams_[i], {"two-stream H2D", "two-stream D2H"});
        }
        for (cuda::stream& s : streams_) s.synchronize();
        run_info info = whole(2, 2);
        info.chunk_bytes = half * sizeof(float);
        return info;
      },
      true));
}

}  // namespace overlap::bench::detail
