// Numba's matrix in two halves as a cuda::Graph: each half is uploaded,
// processed and downloaded on its own, but the second half's kernel reads
// the last row the first half's kernel wrote.
//
// The dependency is written as data, not as a stream order: the bottom
// kernel declares that it reads that one boundary row of the output, so the
// Graph orders it after the top kernel with one event wait, while the
// uploads and downloads of the two halves still overlap. (Issued on one
// stream per half with no wait, as in examples/check/numba-dependency-racy.yaml, the bottom
// kernel could read the row before it is written: `overlap check` finds
// that race.) The example prints the predicted and the measured timelines,
// checks every element against the host and exits 1 on a wrong one.
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

constexpr std::size_t rows = 2049, cols = 2051;  // 16 MiB of floats, odd both ways
constexpr std::size_t top = rows / 2;            // rows [0, top) are the first half

// Rows [first, last): out = in * 2 + 1, plus, for the second half, the
// output's row first - 1 (written by the first half's kernel). Inputs are
// multiples of 0.25 in [-1024, 1024), so every result is exact in float.
__global__ void rows_kernel(const float* in, float* out, std::size_t first, std::size_t last, bool boundary) {
  const std::size_t count = (last - first) * cols;
  for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < count;
       k += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t i = first * cols + k;
    float v = in[i] * 2.0F + 1.0F;
    if (boundary) v += out[(first - 1) * cols + k % cols];
    out[i] = v;
  }
}

int run_example() {
  const overlap::cuda::stream s;
  overlap::cuda::pinned_buffer<float> h_in(rows * cols), h_out(rows * cols);
  overlap::cuda::device_buffer<float> in(rows * cols, s), out(rows * cols, s);
  s.synchronize();
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> quarter(-4096, 4095);
  for (std::size_t i = 0; i < rows * cols; ++i) h_in[i] = static_cast<float>(quarter(rng)) * 0.25F;

  const auto top_half = [&](stream_view st) {
    rows_kernel<<<264, 256, 0, st.get()>>>(in.data(), out.data(), 0, top, false);
  };
  const auto bottom_half = [&](stream_view st) {
    rows_kernel<<<264, 256, 0, st.get()>>>(in.data(), out.data(), top, rows, true);
  };

  overlap::cuda::Graph g;
  const auto hi = g.buffer("h_in", h_in), ho = g.buffer("h_out", h_out);
  const auto bi = g.buffer("in", in), bo = g.buffer("out", out);
  const std::size_t top_elements = top * cols;
  const std::size_t bottom_elements = (rows - top) * cols;
  g.copy("upload top", bi.elements(0, top_elements), hi.elements(0, top_elements));
  g.copy("upload bottom", bi.elements(top_elements, bottom_elements),
         hi.elements(top_elements, bottom_elements));
  g.kernel("top", top_half, {reads(bi.elements(0, top_elements)), writes(bo.elements(0, top_elements))},
           {graph_example::time_alone(top_half), 1.0});
  g.kernel("bottom", bottom_half,
           {reads(bi.elements(top_elements, bottom_elements)), reads(bo.elements((top - 1) * cols, cols)),
            writes(bo.elements(top_elements, bottom_elements))},
           {graph_example::time_alone(bottom_half), 1.0});
  g.copy("download top", ho.elements(0, top_elements), bo.elements(0, top_elements));
  g.copy("download bottom", ho.elements(top_elements, bottom_elements),
         bo.elements(top_elements, bottom_elements));

  (void)g.run(s);  // makes the streams and events, loads the kernel
  s.synchronize();
  for (std::size_t i = 0; i < rows * cols; ++i) h_out[i] = -1.0F;
  const overlap::cuda::graph_run_report measured = g.run(s, overlap::cuda::recording::on);
  graph_example::print_timelines(g, measured);

  std::size_t wrong = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      float expected = h_in[i] * 2.0F + 1.0F;
      if (r >= top) expected += h_in[(top - 1) * cols + c] * 2.0F + 1.0F;
      if (h_out[i] != expected) ++wrong;
    }
  }
  if (wrong > 0) {
    std::printf("FAILED: %zu of %zu elements wrong\n", wrong, rows * cols);
    return 1;
  }
  std::printf("verified: all %zu elements exact\n", rows * cols);
  return 0;
}

}  // namespace

int main() {
  return example::main_on_gpu(run_example);
}
