// app_race_copy -> `race` (seed: PyTorch's data-loading side stream)
//
// A training-style loop over 8 batches. A side stream prefetches the next
// batch: it uploads batch b + 1 into its slot of d_x while the main stream
// computes batch b (y = 2x + 1, downloaded on the main stream). Both streams
// are non-blocking, and the main stream never waits for the side stream:
// the kernel that reads batch b may run before its upload is done. The
// audit must name the copy and the kernel. y is not checked in this
// variant: its value depends on timing.
//
// --repaired (fixed): cudaEventRecord(uploaded, side) after each upload and
// cudaStreamWaitEvent(main, uploaded) before the kernel that reads it; y is
// checked.
#include "app_support.hpp"

namespace {

constexpr std::size_t batches = 8;
constexpr std::size_t batch_elements = app::MiB + 4321;  // about 4 MiB of floats
constexpr std::size_t batch_bytes = batch_elements * sizeof(float);

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_race_copy");
  const bool repaired = args.repaired();

  const std::size_t n = batches * batch_elements;
  float* h_x = app::alloc_pinned<float>(n);
  float* h_y = app::alloc_pinned<float>(n);
  float* d_x = app::alloc_device<float>(n);  // one slot per batch
  float* d_y = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  cudaStream_t main_stream = streams[0];
  cudaStream_t side_stream = streams[1];
  cudaEvent_t uploaded = nullptr;
  CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  app::fill_random(h_x, n, 13);

  const auto upload = [&](std::size_t batch) {
    const std::size_t offset = batch * batch_elements;
    CHECK(cudaMemcpyAsync(d_x + offset, h_x + offset, batch_bytes, cudaMemcpyHostToDevice, side_stream));
  };
  const app::Timer timer;
  upload(0);
  for (std::size_t b = 0; b < batches; ++b) {
    const std::size_t offset = b * batch_elements;
    if (repaired) {
      CHECK(cudaEventRecord(uploaded, side_stream));
      CHECK(cudaStreamWaitEvent(main_stream, uploaded, 0));
    }
    // The race (without --repaired): nothing orders this after batch b's upload.
    app::launch_scale(d_x + offset, d_y + offset, batch_elements, main_stream);
    CHECK(cudaMemcpyAsync(h_y + offset, d_y + offset, batch_bytes, cudaMemcpyDeviceToHost, main_stream));
    if (b + 1 < batches) upload(b + 1);  // prefetch the next batch while this one computes
  }
  app::synchronize_streams(streams);
  const double elapsed = timer.ms();

  if (repaired) app::verify_scaled(h_x, h_y, n);
  CHECK(cudaEventDestroy(uploaded));
  app::destroy_streams(streams);
  app::free_device(d_y);
  app::free_device(d_x);
  app::free_pinned(h_y);
  app::free_pinned(h_x);
  args.print_ok(elapsed);
  return 0;
}
