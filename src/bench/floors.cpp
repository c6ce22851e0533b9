// What no schedule beats. The transfer-bound floor is the link's: its peak
// rates, measured by a size sweep in this run (link_sweep.cpp); beside it
// the chunked floor, what no chunked pipeline beats (link_floor.hpp). The
// whole-buffer copies (H2D alone, D2H alone, both at once) are measured for
// information: their times include each copy's start-up. The kernel alone
// is the compute-bound floor, and the simulator's kernel cost in the report.
#include "link_sweep.hpp"
#include "overlap/cuda/error.hpp"
#include "workload_bench.hpp"

namespace overlap::bench::detail {

void workload_bench::measure_floors(workload_result& result) {
  if (workload_.kind == workload_kind::transfer_bound) {
    announce_("floor: the link's peak rates (size sweep)");
    result.link = measure_link_floor(config_.link, bytes_, bytes_);
  }
  cuda::stream& a = streams_[0];
  cuda::stream& b = streams_[1];
  result.floors.push_back(measure_one(
      variant_kind::floor_h2d, "whole buffer: H2D alone",
      [&](const cuda::event& start) {
        start.wait_on(a);
        copy(d_in_.data(), in_.data(), bytes_, cudaMemcpyHostToDevice, a, "floor H2D");
        a.synchronize();
        return whole();
      },
      false));
  result.floors.push_back(measure_one(
      variant_kind::floor_d2h, "whole buffer: D2H alone",
      [&](const cuda::event& start) {
        start.wait_on(a);
        copy(out_.data(), d_out_.data(), bytes_, cudaMemcpyDeviceToHost, a, "floor D2H");
        a.synchronize();
        return whole();
      },
      false));
  result.floors.push_back(measure_one(
      variant_kind::floor_both_directions, "whole buffer: both directions",
      [&](const cuda::event& start) {
        start.wait_on(a);
        start.wait_on(b);
        copy(d_in_.data(), in_.data(), bytes_, cudaMemcpyHostToDevice, a, "floor H2D, both directions");
        copy(out_.data(), d_out_.data(), bytes_, cudaMemcpyDeviceToHost, b, "floor D2H, both directions");
        a.synchronize();
        b.synchronize();
        return whole(2);
      },
      false));
  result.floors.push_back(measure_one(variant_kind::floor_kernel, "floor: kernel alone",
                                      kernel_alone(a, "input for the kernel floor"), false));
  if (result.link && result.link->points.size() >= 2) {
    result.link->chunked = make_chunked_floor(result.link->points, bytes_, bytes_,
                                              result.floor(variant_kind::floor_kernel).device_ms.median);
  }
}

runner workload_bench::kernel_alone(cuda::stream& s, const char* what) {
  // The kernel's input must be the real data: sin/cos time depends on it a little.
  copy(d_in_.data(), in_.data(), bytes_, cudaMemcpyHostToDevice, s, what);
  s.synchronize();
  return [this, &s](const cuda::event& start) {
    start.wait_on(s);
    launch(d_in_.data(), d_out_.data(), elements_, s.get());
    s.synchronize();
    return whole();
  };
}

}  // namespace overlap::bench::detail
