// app_legacy_default_stream -> `legacy-default-stream`
//
// The clean pipeline (64 MiB, 16 chunks and a remainder, depth-first on 4
// streams, 16 passes), but on BLOCKING streams (cudaStreamCreate), and each
// chunk also uploads its side table, 256 floats that the kernel adds
// (y = 2x + table[i % 256]), with
//
//     cudaMemcpyAsync(d_table, h_table, bytes, cudaMemcpyHostToDevice, 0);
//
// on the legacy default stream. That copy waits for all earlier work on the
// blocking streams and holds back all later work on them, so every chunk
// drains the pipeline: the chunks run one after another instead of
// overlapping (about 2x slower on an H100).
//
// --repaired: the table upload on its chunk's stream.
#include "app_support.hpp"

namespace {

constexpr std::size_t table_size = 256;
constexpr std::size_t passes = 16;

}  // namespace

/// y = 2x + table[i % table_size].
__global__ void offset_kernel(const float* x, const float* table, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = 2.0F * x[i] + table[i % table_size];
}

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_legacy_default_stream");
  const bool repaired = args.repaired();

  const std::size_t n = app::default_elements;
  const std::vector<app::Chunk> plan = app::split(n, 16);
  float* h_in = app::alloc_pinned<float>(n);
  float* h_out = app::alloc_pinned<float>(n);
  float* h_table = app::alloc_pinned<float>(plan.size() * table_size);  // one table per chunk
  float* d_in = app::alloc_device<float>(n);
  float* d_out = app::alloc_device<float>(n);
  float* d_table = app::alloc_device<float>(plan.size() * table_size);
  // Blocking streams, as cudaStreamCreate makes them: they synchronize with
  // the legacy default stream.
  const std::vector<cudaStream_t> streams = app::create_streams(4, cudaStreamDefault);
  app::fill_random(h_in, n, 2);
  app::fill_random(h_table, plan.size() * table_size, 3);

  const app::Timer timer;
  for (std::size_t pass = 0; pass < passes; ++pass) {
    for (std::size_t k = 0; k < plan.size(); ++k) {
      const app::Chunk& c = plan[k];
      cudaStream_t stream = streams[k % streams.size()];
      float* table = d_table + k * table_size;
      const std::size_t table_bytes = table_size * sizeof(float);
      if (repaired) {
        CHECK(cudaMemcpyAsync(table, h_table + k * table_size, table_bytes, cudaMemcpyHostToDevice, stream));
      } else {
        // The trap: stream 0 is the legacy default stream.
        CHECK(cudaMemcpyAsync(table, h_table + k * table_size, table_bytes, cudaMemcpyHostToDevice, 0));
      }
      CHECK(cudaMemcpyAsync(d_in + c.offset, h_in + c.offset, c.bytes(), cudaMemcpyHostToDevice, stream));
      offset_kernel<<<app::blocks_for(c.count), app::threads_per_block, 0, stream>>>(
          d_in + c.offset, table, d_out + c.offset, c.count);
      CHECK(cudaGetLastError());
      CHECK(cudaMemcpyAsync(h_out + c.offset, d_out + c.offset, c.bytes(), cudaMemcpyDeviceToHost, stream));
    }
  }
  app::synchronize_streams(streams);
  const double elapsed = timer.ms();

  for (std::size_t k = 0; k < plan.size(); ++k) {
    const app::Chunk& c = plan[k];
    const float* table = h_table + k * table_size;
    app::verify("output", h_out + c.offset, c.count,
                [&](std::size_t i) { return 2.0F * h_in[c.offset + i] + table[i % table_size]; });
  }
  app::destroy_streams(streams);
  app::free_device(d_table);
  app::free_device(d_out);
  app::free_device(d_in);
  app::free_pinned(h_table);
  app::free_pinned(h_out);
  app::free_pinned(h_in);
  args.print_ok(elapsed);
  return 0;
}
