// CuPy's multiply-add-sum as a cuda::Graph: c = a * b and d = a + b are
// independent, then one reduction sums both results.
//
// In CuPy, `with cupy.cuda.Stream():` blocks put the multiply and the add on
// their own streams and the sum needs a hand-written wait on each; here each
// node declares its data, and the Graph runs the two uploads and the two
// elementwise kernels on separate streams, clears the sum (a memset node)
// beside them, and issues only the waits the reduction needs. The example
// prints the predicted and the measured timelines, checks every element of
// c and d and the sum against the host, and exits 1 on a wrong one.
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

constexpr std::size_t n = (std::size_t{1} << 21) + 7;  // 16 MiB of doubles per array, and a remainder
constexpr unsigned half_gpu = 66;                      // blocks: half of an H100's 132 SMs

__global__ void multiply_kernel(const double* a, const double* b, double* c, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    c[i] = a[i] * b[i];
}

__global__ void add_kernel(const double* a, const double* b, double* d, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    d[i] = a[i] + b[i];
}

// sum += c[i] + d[i]. The inputs are integers below 1000, so every partial
// sum is an integer below 2^53: exact in any order, atomics included.
__global__ void sum_kernel(const double* c, const double* d, double* sum, std::size_t count) {
  __shared__ double partial[256];
  double local = 0.0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    local += c[i] + d[i];
  partial[threadIdx.x] = local;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

int run_example() {
  const overlap::cuda::stream s;
  overlap::cuda::pinned_buffer<double> h_a(n), h_b(n), h_c(n), h_d(n), h_sum(1);
  overlap::cuda::device_buffer<double> a(n, s), b(n, s), c(n, s), d(n, s), sum(1, s);
  s.synchronize();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(1, 999);
  for (std::size_t i = 0; i < n; ++i) {
    h_a[i] = value(rng);
    h_b[i] = value(rng);
  }

  const auto multiply = [&](stream_view st) {
    multiply_kernel<<<half_gpu, 256, 0, st.get()>>>(a.data(), b.data(), c.data(), n);
  };
  const auto add = [&](stream_view st) {
    add_kernel<<<half_gpu, 256, 0, st.get()>>>(a.data(), b.data(), d.data(), n);
  };
  const auto reduce = [&](stream_view st) {
    sum_kernel<<<half_gpu * 2, 256, 0, st.get()>>>(c.data(), d.data(), sum.data(), n);
  };

  overlap::cuda::Graph g;
  const auto ha = g.buffer("h_a", h_a), hb = g.buffer("h_b", h_b), hc = g.buffer("h_c", h_c),
             hd = g.buffer("h_d", h_d), hs = g.buffer("h_sum", h_sum);
  const auto ba = g.buffer("a", a), bb = g.buffer("b", b), bc = g.buffer("c", c), bd = g.buffer("d", d),
             bs = g.buffer("sum", sum);
  g.copy("upload a", ba.all(), ha.all());
  g.copy("upload b", bb.all(), hb.all());
  g.memset("clear sum", bs.all(), 0);
  g.kernel("multiply", multiply, {reads(ba.all()), reads(bb.all()), writes(bc.all())},
           {graph_example::time_alone(multiply), 0.5});
  g.kernel("add", add, {reads(ba.all()), reads(bb.all()), writes(bd.all())},
           {graph_example::time_alone(add), 0.5});
  g.kernel("sum", reduce, {reads(bc.all()), reads(bd.all()), writes(bs.all())},
           {graph_example::time_alone(reduce), 1.0});
  g.copy("download c", hc.all(), bc.all());
  g.copy("download d", hd.all(), bd.all());
  g.copy("download sum", hs.all(), bs.all());

  (void)g.run(s);  // makes the streams and events, loads the kernels
  s.synchronize();
  h_sum[0] = -1.0;
  const overlap::cuda::graph_run_report measured = g.run(s, overlap::cuda::recording::on);
  graph_example::print_timelines(g, measured);

  std::size_t wrong = 0;
  double expected_sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double product = h_a[i] * h_b[i];
    const double total = h_a[i] + h_b[i];
    if (h_c[i] != product) ++wrong;
    if (h_d[i] != total) ++wrong;
    expected_sum += product + total;
  }
  if (h_sum[0] != expected_sum) {
    std::printf("FAILED: sum %.0f, expected %.0f\n", h_sum[0], expected_sum);
    return 1;
  }
  if (wrong > 0) {
    std::printf("FAILED: %zu of %zu elements wrong\n", wrong, 2 * n);
    return 1;
  }
  std::printf("verified: all %zu elements of c and d exact, sum %.0f exact\n", 2 * n, expected_sum);
  return 0;
}

}  // namespace

int main() {
  return example::main_on_gpu(run_example);
}
