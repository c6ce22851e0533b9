// PyTorch's branch model as a cuda::Graph: one input, two independent
// kernels reading it on side branches, a third joining their results.
//
// In PyTorch the side branches run on torch.cuda.Stream()s with
// wait_stream() calls written by hand; here each kernel declares what it
// reads and writes, and the Graph finds that the branches are independent,
// puts them on different streams and issues one event wait where the join
// needs it. Each kernel uses a quarter of the SMs, so the branches really
// run side by side. The example prints the predicted and the measured
// timelines, checks every output element against the host and exits 1 on a
// wrong one.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <random>

#include "example_main.hpp"
#include "graph_example.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/task_graph.hpp"

namespace {

using overlap::cuda::reads;
using overlap::cuda::stream_view;
using overlap::cuda::writes;

constexpr std::size_t n = (std::size_t{1} << 22) + 3;  // 16 MiB of floats, and a remainder
constexpr unsigned branch_blocks = 33;                 // a quarter of an H100's 132 SMs

// out = x * a + b over a grid-stride loop. The inputs are multiples of 0.25
// in [-1024, 1024): every result here is exact in float, so the host's
// reference matches bit for bit whatever the device fuses.
__global__ void affine_kernel(const float* x, float* out, std::size_t count, float a, float b) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = x[i] * a + b;
}

__global__ void add_kernel(const float* left, const float* right, float* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = left[i] + right[i];
}

int run_example() {
  const overlap::cuda::stream s;
  overlap::cuda::pinned_buffer<float> h_x(n), h_y(n);
  overlap::cuda::device_buffer<float> x(n, s), left(n, s), right(n, s), y(n, s);
  s.synchronize();
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> quarter(-4096, 4095);
  for (std::size_t i = 0; i < n; ++i) h_x[i] = static_cast<float>(quarter(rng)) * 0.25F;

  const auto left_branch = [&](stream_view st) {
    affine_kernel<<<branch_blocks, 256, 0, st.get()>>>(x.data(), left.data(), n, 2.0F, 1.0F);
  };
  const auto right_branch = [&](stream_view st) {
    affine_kernel<<<branch_blocks, 256, 0, st.get()>>>(x.data(), right.data(), n, 0.5F, -3.0F);
  };
  const auto join = [&](stream_view st) {
    add_kernel<<<branch_blocks * 4, 256, 0, st.get()>>>(left.data(), right.data(), y.data(), n);
  };
  const double branch_share = branch_blocks / 132.0;

  overlap::cuda::Graph g;
  const auto hx = g.buffer("h_x", h_x), hy = g.buffer("h_y", h_y);
  const auto bx = g.buffer("x", x), bl = g.buffer("left", left), br = g.buffer("right", right),
             by = g.buffer("y", y);
  g.copy("upload", bx.all(), hx.all());
  g.kernel("left", left_branch, {reads(bx.all()), writes(bl.all())},
           {graph_example::time_alone(left_branch), branch_share});
  g.kernel("right", right_branch, {reads(bx.all()), writes(br.all())},
           {graph_example::time_alone(right_branch), branch_share});
  g.kernel("join", join, {reads(bl.all()), reads(br.all()), writes(by.all())},
           {graph_example::time_alone(join), 1.0});
  g.copy("download", hy.all(), by.all());

  (void)g.run(s);  // makes the streams and events, loads the kernels
  s.synchronize();
  for (std::size_t i = 0; i < n; ++i) h_y[i] = -1.0F;
  const overlap::cuda::graph_run_report measured = g.run(s, overlap::cuda::recording::on);
  graph_example::print_timelines(g, measured);

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float expected = (h_x[i] * 2.0F + 1.0F) + (h_x[i] * 0.5F - 3.0F);
    if (h_y[i] != expected) ++wrong;
  }
  if (wrong > 0) {
    std::printf("FAILED: %zu of %zu elements wrong\n", wrong, n);
    return 1;
  }
  std::printf("verified: all %zu elements exact\n", n);
  return 0;
}

}  // namespace

int main() {
  return example::main_on_gpu(run_example);
}
