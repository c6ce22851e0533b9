// app_copy_serialization -> `copy-engine-serialization` (info)
//
// Two arrays, a and b, of 64 MiB (and a few floats) each, in pinned memory.
// Hoping to double the upload bandwidth, the app uploads them on two streams
// at once, back to back:
//
//     cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, s1);
//     cudaMemcpyAsync(d_b, h_b, bytes, cudaMemcpyHostToDevice, s2);
//
// then runs y = 2x + 1 on each (a on s1, b on s2) and downloads both, back to
// back, the same way. One copy engine serves each direction, so the second
// upload queues behind the first: two streams move no more bytes per second
// than one. The audit reports it as information, not as a cost.
//
// --repaired: the same bytes and the same overlap, one stream per engine:
// both uploads on one stream, both kernels on another, both downloads on a
// third, handed over with events (the upload of b still overlaps the
// download of a). Both take about the same time.
#include "app_support.hpp"

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_copy_serialization");
  const bool repaired = args.repaired();

  const std::size_t n = app::default_elements;
  const std::size_t bytes = n * sizeof(float);
  float* h_a = app::alloc_pinned<float>(n);
  float* h_b = app::alloc_pinned<float>(n);
  float* h_a_out = app::alloc_pinned<float>(n);
  float* h_b_out = app::alloc_pinned<float>(n);
  float* d_a = app::alloc_device<float>(n);
  float* d_b = app::alloc_device<float>(n);
  float* d_a_out = app::alloc_device<float>(n);
  float* d_b_out = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(repaired ? 3 : 2, cudaStreamNonBlocking);
  std::vector<cudaEvent_t> events(repaired ? 4 : 0);
  for (cudaEvent_t& e : events) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  app::fill_random(h_a, n, 9);
  app::fill_random(h_b, n, 10);

  // Warm up first: a process's first copy and first launch pay one-time
  // set-up (milliseconds), which would separate the two uploads below.
  CHECK(cudaMemcpyAsync(d_a, h_a, sizeof(float), cudaMemcpyHostToDevice, streams[0]));
  app::launch_scale(d_a, d_a_out, 1, streams[0]);
  app::synchronize_streams(streams);

  const app::Timer timer;
  if (!repaired) {
    cudaStream_t s1 = streams[0];
    cudaStream_t s2 = streams[1];
    // The two uploads, back to back on two streams.
    CHECK(cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, s1));
    CHECK(cudaMemcpyAsync(d_b, h_b, bytes, cudaMemcpyHostToDevice, s2));
    app::launch_scale(d_a, d_a_out, n, s1);
    app::launch_scale(d_b, d_b_out, n, s2);
    CHECK(cudaMemcpyAsync(h_a_out, d_a_out, bytes, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaMemcpyAsync(h_b_out, d_b_out, bytes, cudaMemcpyDeviceToHost, s2));
  } else {
    cudaStream_t upload = streams[0];
    cudaStream_t compute = streams[1];
    cudaStream_t download = streams[2];
    cudaEvent_t a_uploaded = events[0];
    cudaEvent_t b_uploaded = events[1];
    cudaEvent_t a_computed = events[2];
    cudaEvent_t b_computed = events[3];
    CHECK(cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, upload));
    CHECK(cudaEventRecord(a_uploaded, upload));
    CHECK(cudaMemcpyAsync(d_b, h_b, bytes, cudaMemcpyHostToDevice, upload));
    CHECK(cudaEventRecord(b_uploaded, upload));
    CHECK(cudaStreamWaitEvent(compute, a_uploaded, 0));
    app::launch_scale(d_a, d_a_out, n, compute);
    CHECK(cudaEventRecord(a_computed, compute));
    CHECK(cudaStreamWaitEvent(compute, b_uploaded, 0));
    app::launch_scale(d_b, d_b_out, n, compute);
    CHECK(cudaEventRecord(b_computed, compute));
    CHECK(cudaStreamWaitEvent(download, a_computed, 0));
    CHECK(cudaMemcpyAsync(h_a_out, d_a_out, bytes, cudaMemcpyDeviceToHost, download));
    CHECK(cudaStreamWaitEvent(download, b_computed, 0));
    CHECK(cudaMemcpyAsync(h_b_out, d_b_out, bytes, cudaMemcpyDeviceToHost, download));
  }
  app::synchronize_streams(streams);
  const double elapsed = timer.ms();

  app::verify_scaled(h_a, h_a_out, n, "output a");
  app::verify_scaled(h_b, h_b_out, n, "output b");
  for (cudaEvent_t e : events) CHECK(cudaEventDestroy(e));
  app::destroy_streams(streams);
  for (float* d : {d_b_out, d_a_out, d_b, d_a}) app::free_device(d);
  for (float* h : {h_b_out, h_a_out, h_b, h_a}) app::free_pinned(h);
  args.print_ok(elapsed);
  return 0;
}
