// app_graph_shared_kernel -> `race` between two nodes of one graph that run
// the same kernel (kernels: possible, a warning; measured: an error)
//
// One captured graph, launched 4 times on one stream, whose three kernel
// nodes all run scale_kernel (y = 2x + 1): `first` y = f(x) on a branch,
// `other` w = f(x) on the main line, then `second` z = f(y) on the main
// line. Nothing orders `second` after `first`: it may read y while `first`
// writes it. The measuring run must tell the three nodes of each launch
// apart, although they share a kernel, from the very first launch: only
// then is the race proven, and `other` (which reads what `first` reads and
// writes nothing anyone touches) kept out of it.
//
// --repaired: the main line waits for the branch before `second`; z and w are
// checked.
#include "app_support.hpp"

namespace {

struct Buffers {
  float* x = nullptr;
  float* y = nullptr;
  float* z = nullptr;
  float* w = nullptr;
  std::size_t n = 0;
};

cudaGraph_t capture(const Buffers& b, cudaStream_t main_line, cudaStream_t branch, bool repaired) {
  cudaEvent_t forked = nullptr;
  cudaEvent_t joined = nullptr;
  CHECK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(main_line, cudaStreamCaptureModeThreadLocal));
  CHECK(cudaEventRecord(forked, main_line));
  CHECK(cudaStreamWaitEvent(branch, forked));
  app::launch_scale(b.x, b.y, b.n, branch);     // first
  app::launch_scale(b.x, b.w, b.n, main_line);  // other
  CHECK(cudaEventRecord(joined, branch));
  if (repaired) CHECK(cudaStreamWaitEvent(main_line, joined));
  // The race (without --repaired): nothing orders this after `first`.
  app::launch_scale(b.y, b.z, b.n, main_line);    // second
  CHECK(cudaStreamWaitEvent(main_line, joined));  // the join capture requires
  CHECK(cudaStreamEndCapture(main_line, &graph));
  CHECK(cudaEventDestroy(joined));
  CHECK(cudaEventDestroy(forked));
  return graph;
}

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_graph_shared_kernel");
  const bool repaired = args.repaired();
  constexpr int launches = 4;

  Buffers b;
  b.n = 4 * app::MiB / sizeof(float) + 1237;
  float* h_x = app::alloc_pinned<float>(b.n);
  float* h_z = app::alloc_pinned<float>(b.n);
  float* h_w = app::alloc_pinned<float>(b.n);
  b.x = app::alloc_device<float>(b.n);
  b.y = app::alloc_device<float>(b.n);
  b.z = app::alloc_device<float>(b.n);
  b.w = app::alloc_device<float>(b.n);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  app::fill_random(h_x, b.n, 31);
  CHECK(cudaMemcpyAsync(b.x, h_x, b.n * sizeof(float), cudaMemcpyHostToDevice, streams[0]));

  const app::Timer timer;
  cudaGraph_t graph = capture(b, streams[0], streams[1], repaired);
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < launches; ++i) CHECK(cudaGraphLaunch(exec, streams[0]));
  CHECK(cudaMemcpyAsync(h_z, b.z, b.n * sizeof(float), cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaMemcpyAsync(h_w, b.w, b.n * sizeof(float), cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaStreamSynchronize(streams[0]));
  app::verify_scaled(h_x, h_w, b.n, "w");
  if (repaired) {
    app::verify("z", h_z, b.n,
                [&](std::size_t i) { return app::scale_reference(app::scale_reference(h_x[i])); });
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  const double elapsed = timer.ms();

  app::destroy_streams(streams);
  for (float* d : {b.w, b.z, b.y, b.x}) app::free_device(d);
  app::free_pinned(h_w);
  app::free_pinned(h_z);
  app::free_pinned(h_x);
  args.print_ok(elapsed);
  return 0;
}
