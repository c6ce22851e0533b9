// app_lazy_module_load -> `lazy-module-load`
//
// Stream A runs a busy kernel of about 10 ms on a few SMs; while it runs,
// the host launches a small kernel on stream B, which could run at once on
// the SMs A leaves. That kernel lives in another translation unit
// (lazy_module_load_side.cu), so another module, never used before: with
// lazy module loading (the default since CUDA 12.2) the module loads inside
// that first launch call, and the load waits for the busy kernel. B's
// kernel starts only after A's, and the host is held in the launch as long.
//
// --repaired: the side kernel touched with cudaFuncGetAttributes in set-up
// (load_side()), which loads its module; B's kernel then runs beside A's.
#include "app_support.hpp"

cudaError_t launch_side(const std::uint32_t* x, std::uint32_t* y, std::size_t n, cudaStream_t stream);
cudaError_t load_side();

namespace {

constexpr std::size_t busy_elements = 4 * app::threads_per_block;
constexpr unsigned busy_blocks = 4;
constexpr std::uint32_t busy_iterations = 10'000'000;  // about 10 ms on an H100
constexpr std::size_t side_elements = (1 << 16) + 7;

template <typename T>
void copy(T* dst, const T* src, std::size_t n, cudaMemcpyKind kind, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), kind, stream));
  CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_lazy_module_load");
  const bool repaired = args.repaired();

  std::uint32_t* h_busy_in = app::alloc_pinned<std::uint32_t>(busy_elements);
  std::uint32_t* h_busy_out = app::alloc_pinned<std::uint32_t>(busy_elements);
  std::uint32_t* d_busy_in = app::alloc_device<std::uint32_t>(busy_elements);
  std::uint32_t* d_busy_out = app::alloc_device<std::uint32_t>(busy_elements);
  std::uint32_t* h_side_in = app::alloc_pinned<std::uint32_t>(side_elements);
  std::uint32_t* h_side_out = app::alloc_pinned<std::uint32_t>(side_elements);
  std::uint32_t* d_side_in = app::alloc_device<std::uint32_t>(side_elements);
  std::uint32_t* d_side_out = app::alloc_device<std::uint32_t>(side_elements);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  cudaStream_t a = streams[0];
  cudaStream_t b = streams[1];
  app::fill_random(h_busy_in, busy_elements, 21);
  app::fill_random(h_side_in, side_elements, 22);
  copy(d_busy_in, h_busy_in, busy_elements, cudaMemcpyHostToDevice, a);
  copy(d_side_in, h_side_in, side_elements, cudaMemcpyHostToDevice, b);
  // The busy kernel's module (this file's) is loaded before the work in both variants.
  app::launch_busy(d_busy_in, d_busy_out, busy_elements, 1, busy_blocks, a);
  CHECK(cudaStreamSynchronize(a));
  if (repaired) CHECK(load_side());

  const app::Timer timer;
  app::launch_busy(d_busy_in, d_busy_out, busy_elements, busy_iterations, busy_blocks, a);
  // The trap (unrepaired): this first launch into another module waits for the busy kernel.
  CHECK(launch_side(d_side_in, d_side_out, side_elements, b));
  CHECK(cudaStreamSynchronize(b));
  const double side_done = timer.ms();
  CHECK(cudaStreamSynchronize(a));
  const double elapsed = timer.ms();

  copy(h_busy_out, d_busy_out, busy_elements, cudaMemcpyDeviceToHost, a);
  copy(h_side_out, d_side_out, side_elements, cudaMemcpyDeviceToHost, b);
  app::verify("busy kernel output", h_busy_out, busy_elements,
              [&](std::size_t i) { return app::busy_reference(h_busy_in[i], busy_iterations); });
  app::verify("side kernel output", h_side_out, side_elements,
              [&](std::size_t i) { return h_side_in[i] * 3U + 1U; });
  std::printf("app_lazy_module_load: side kernel done after %.3f ms\n", side_done);
  app::destroy_streams(streams);
  app::free_device(d_side_out);
  app::free_device(d_side_in);
  app::free_pinned(h_side_out);
  app::free_pinned(h_side_in);
  app::free_device(d_busy_out);
  app::free_device(d_busy_in);
  app::free_pinned(h_busy_out);
  app::free_pinned(h_busy_in);
  args.print_ok(elapsed);
  return 0;
}
