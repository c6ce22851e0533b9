// app_stream_ordered_free -> `race`
//
// A loop of 8 batches with stream-ordered memory: each batch's device buffer
// comes from cudaMallocAsync on the compute stream, the copy stream uploads
// the batch into it, the compute stream scales it (y = 2x + 1, into a
// buffer of its own) after waiting for the upload, and frees it with
// cudaFreeAsync. The copy stream, after waiting for the kernel, downloads y
// and reads the batch's input back to check it; the compute stream frees
// the input without waiting for that read: the pool may hand the bytes to
// the next batch's allocation while the copy stream still reads them. The
// audit must name the read-back copy and the free.
//
// The pool keeps what is freed (release threshold: all of it), as
// frameworks' pools do, so the late read finds the bytes mapped (with the
// default threshold of 0 the driver may unmap them: the read then faults).
//
// --repaired: the compute stream waits for the copy stream's last read
// before it frees the buffer.
#include "app_support.hpp"

namespace {

constexpr std::size_t batches = 8;
constexpr std::size_t batch_elements = app::MiB + 1234;

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_stream_ordered_free");
  const bool repaired = args.repaired();

  const std::size_t n = batches * batch_elements;
  float* h_x = app::alloc_pinned<float>(n);
  float* h_y = app::alloc_pinned<float>(n);
  float* h_echo = app::alloc_pinned<float>(n);  // each batch's input, read back from the device
  float* d_y = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  cudaStream_t compute = streams[0];
  cudaStream_t copy = streams[1];
  cudaEvent_t uploaded = nullptr;
  cudaEvent_t scaled = nullptr;
  cudaEvent_t read_back = nullptr;
  CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&scaled, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&read_back, cudaEventDisableTiming));
  app::fill_random(h_x, n, 17);
  cudaMemPool_t pool = nullptr;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  std::uint64_t keep_all = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));

  const app::Timer timer;
  for (std::size_t b = 0; b < batches; ++b) {
    const std::size_t offset = b * batch_elements;
    const std::size_t bytes = batch_elements * sizeof(float);
    float* d_x = nullptr;
    CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d_x), bytes, compute));
    CHECK(cudaEventRecord(uploaded, compute));  // the allocation is ready
    CHECK(cudaStreamWaitEvent(copy, uploaded));
    CHECK(cudaMemcpyAsync(d_x, h_x + offset, bytes, cudaMemcpyHostToDevice, copy));
    CHECK(cudaEventRecord(uploaded, copy));
    CHECK(cudaStreamWaitEvent(compute, uploaded));
    app::launch_scale(d_x, d_y + offset, batch_elements, compute);
    CHECK(cudaEventRecord(scaled, compute));
    CHECK(cudaStreamWaitEvent(copy, scaled));
    CHECK(cudaMemcpyAsync(h_y + offset, d_y + offset, bytes, cudaMemcpyDeviceToHost, copy));
    CHECK(cudaMemcpyAsync(h_echo + offset, d_x, bytes, cudaMemcpyDeviceToHost, copy));
    if (repaired) {
      CHECK(cudaEventRecord(read_back, copy));
      CHECK(cudaStreamWaitEvent(compute, read_back));
    }
    // The trap (unrepaired): the copy stream may still be reading d_x.
    CHECK(cudaFreeAsync(d_x, compute));
  }
  CHECK(cudaStreamSynchronize(compute));
  CHECK(cudaStreamSynchronize(copy));
  const double elapsed = timer.ms();

  app::verify_scaled(h_x, h_y, n);
  // The read-back is right only where nothing reused the bytes first: checked when repaired.
  if (repaired) app::verify("read-back input", h_echo, n, [&](std::size_t i) { return h_x[i]; });
  CHECK(cudaEventDestroy(read_back));
  CHECK(cudaEventDestroy(scaled));
  CHECK(cudaEventDestroy(uploaded));
  app::destroy_streams(streams);
  app::free_device(d_y);
  app::free_pinned(h_echo);
  app::free_pinned(h_y);
  app::free_pinned(h_x);
  args.print_ok(elapsed);
  return 0;
}
