// app_graph_serialized -> `graph-serialized-nodes`
//
// A graph captured from one stream holds two busy kernels on different
// buffers, each of 4 blocks (a few of the GPU's SMs): stream capture chains
// them, so every launch of the graph (8 in all) runs the second after the
// first, although they touch no common bytes and would fit the GPU
// together. The audit must name the edge between them.
//
// --repaired: the second kernel is captured on a second stream forked from
// the first before the first kernel and joined back after it, so the graph
// has no edge between them and they run at once. Both outputs are checked.
#include "app_support.hpp"

namespace {

constexpr std::size_t elements = 4 * app::threads_per_block;
constexpr unsigned blocks = 4;
constexpr std::uint32_t iterations = 1'000'000;  // about 1 ms on an H100
constexpr int launches = 8;

struct Pair {
  std::uint32_t* in = nullptr;
  std::uint32_t* out = nullptr;
};

cudaGraph_t capture(const Pair& first, const Pair& second, cudaStream_t main_line, cudaStream_t branch,
                    bool repaired) {
  cudaEvent_t forked = nullptr;
  cudaEvent_t joined = nullptr;
  CHECK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(main_line, cudaStreamCaptureModeThreadLocal));
  cudaStream_t second_stream = main_line;
  if (repaired) {
    CHECK(cudaEventRecord(forked, main_line));
    CHECK(cudaStreamWaitEvent(branch, forked));
    second_stream = branch;
  }
  app::launch_busy(first.in, first.out, elements, iterations, blocks, main_line);
  // The trap (without --repaired): on the capturing stream, this waits for the first kernel.
  app::launch_busy(second.in, second.out, elements, iterations, blocks, second_stream);
  if (repaired) {
    CHECK(cudaEventRecord(joined, branch));
    CHECK(cudaStreamWaitEvent(main_line, joined));
  }
  CHECK(cudaStreamEndCapture(main_line, &graph));
  CHECK(cudaEventDestroy(joined));
  CHECK(cudaEventDestroy(forked));
  return graph;
}

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_graph_serialized");
  const bool repaired = args.repaired();

  std::uint32_t* h_in = app::alloc_pinned<std::uint32_t>(2 * elements);
  std::uint32_t* h_out = app::alloc_pinned<std::uint32_t>(2 * elements);
  const Pair first{app::alloc_device<std::uint32_t>(elements), app::alloc_device<std::uint32_t>(elements)};
  const Pair second{app::alloc_device<std::uint32_t>(elements), app::alloc_device<std::uint32_t>(elements)};
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  app::fill_random(h_in, 2 * elements, 31);
  const std::size_t bytes = elements * sizeof(std::uint32_t);
  CHECK(cudaMemcpyAsync(first.in, h_in, bytes, cudaMemcpyHostToDevice, streams[0]));
  CHECK(cudaMemcpyAsync(second.in, h_in + elements, bytes, cudaMemcpyHostToDevice, streams[0]));
  // The busy kernel's module loads here, before the graph is captured and run.
  app::launch_busy(first.in, first.out, elements, 1, blocks, streams[0]);
  CHECK(cudaStreamSynchronize(streams[0]));

  cudaGraph_t graph = capture(first, second, streams[0], streams[1], repaired);
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const app::Timer timer;
  for (int i = 0; i < launches; ++i) CHECK(cudaGraphLaunch(exec, streams[0]));
  CHECK(cudaStreamSynchronize(streams[0]));
  const double elapsed = timer.ms();

  CHECK(cudaMemcpyAsync(h_out, first.out, bytes, cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaMemcpyAsync(h_out + elements, second.out, bytes, cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaStreamSynchronize(streams[0]));
  app::verify("busy kernels' output", h_out, 2 * elements,
              [&](std::size_t i) { return app::busy_reference(h_in[i], iterations); });
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  app::destroy_streams(streams);
  for (const Pair& p : {second, first}) {
    app::free_device(p.out);
    app::free_device(p.in);
  }
  app::free_pinned(h_out);
  app::free_pinned(h_in);
  args.print_ok(elapsed);
  return 0;
}
