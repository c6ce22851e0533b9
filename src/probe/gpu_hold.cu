#include "gpu_hold.hpp"

namespace overlap::probe::detail {

namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(const volatile int* flag, unsigned long long timeout_ns) {
  const unsigned long long start = global_ns();
  while (*flag == 0 && global_ns() - start < timeout_ns) __nanosleep(256);
}

__global__ void empty_kernel() {}

__global__ void memory_stream_kernel(const float4* in, float4* out, std::size_t n4, unsigned passes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (unsigned p = 0; p < passes; ++p) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
         i += stride) {
      out[i] = in[i];
    }
  }
}

__global__ void timed_spin_kernel(unsigned long long* times, unsigned slot, unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) __nanosleep(128);
  times[2 * slot] = start;
  times[2 * slot + 1] = global_ns();
}

}  // namespace

gpu_hold::gpu_hold() {
  void* host = nullptr;
  check(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  flag_ = static_cast<volatile int*>(host);
  *flag_ = 0;
  void* device = nullptr;
  const cudaError_t status = cudaHostGetDevicePointer(&device, host, 0);
  if (status != cudaSuccess) {
    (void)cudaFreeHost(host);
    check(status, "cudaHostGetDevicePointer");
  }
  device_flag_ = static_cast<int*>(device);
}

gpu_hold::~gpu_hold() {
  release();
  (void)cudaDeviceSynchronize();  // no kernel may outlive its flag
  (void)cudaFreeHost(const_cast<int*>(flag_));
}

void gpu_hold::hold(cudaStream_t stream, double timeout_ms) {
  *flag_ = 0;
  hold_kernel<<<1, 1, 0, stream>>>(device_flag_, static_cast<unsigned long long>(timeout_ms * 1e6));
  check(cudaGetLastError(), "hold kernel launch");
}

void gpu_hold::release() noexcept {
  *flag_ = 1;
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 32, 0, stream>>>();
  check(cudaGetLastError(), "empty kernel launch");
}

void launch_memory_stream(const float* in, float* out, std::size_t n, unsigned passes, cudaStream_t stream) {
  int device = 0;
  int sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  memory_stream_kernel<<<static_cast<unsigned>(sms) * 4, 256, 0, stream>>>(
      reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), n / 4, passes);
  check(cudaGetLastError(), "memory kernel launch");
}

void launch_timed_spin(cudaStream_t stream, unsigned long long* times, unsigned slot, unsigned microseconds) {
  timed_spin_kernel<<<1, 32, 0, stream>>>(times, slot, 1000ULL * microseconds);
  check(cudaGetLastError(), "spin kernel launch");
}

owned_stream::owned_stream() {
  check(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}
owned_stream::~owned_stream() {
  (void)cudaStreamDestroy(handle);
}
owned_event::owned_event() {
  check(cudaEventCreate(&handle), "cudaEventCreate");
}
owned_event::~owned_event() {
  (void)cudaEventDestroy(handle);
}
owned_pinned::owned_pinned(std::size_t size) : bytes(size) {
  check(cudaMallocHost(&data, size), "cudaMallocHost");
}
owned_pinned::~owned_pinned() {
  (void)cudaFreeHost(data);
}
owned_device::owned_device(std::size_t size) : bytes(size) {
  check(cudaMalloc(&data, size), "cudaMalloc");
}
owned_device::~owned_device() {
  (void)cudaFree(data);
}

double elapsed_ms(const owned_event& from, const owned_event& to) {
  float ms = 0.0F;
  check(cudaEventElapsedTime(&ms, from.handle, to.handle), "cudaEventElapsedTime");
  return ms;
}

}  // namespace overlap::probe::detail
