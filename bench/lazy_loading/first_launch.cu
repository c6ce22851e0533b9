// Which first launches wait for the work in flight under lazy module
// loading: a busy kernel on stream a, then five first launches on stream b,
// of kernels either in this translation unit (the module already loaded by
// the busy kernel) or in other_module.cu (a module of its own, compiled
// without -rdc). Prints the slowest first-launch call and their sum.
//   nvcc -arch=sm_90 -O2 first_launch.cu other_module.cu -o first_launch
//   ./first_launch same; ./first_launch other; CUDA_MODULE_LOADING=EAGER ./first_launch other
// (bench/RESULTS.md, "lazy-module-load": 0.063 ms same, 1.916 ms other, 0.012 ms EAGER.)
#include <chrono>
#include <cstdint>
#include <cstdio>
void launch_side(int i, const std::uint32_t* x, std::uint32_t* y, std::size_t n, cudaStream_t s);
template <int I>
__global__ void same_kernel(const std::uint32_t* x, std::uint32_t* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = x[i] * static_cast<std::uint32_t>(I + 2) + 1U;
}
__global__ void busy(std::uint32_t* out, std::uint32_t it) {
  std::uint32_t v = threadIdx.x;
  for (std::uint32_t k = 0; k < it; ++k) v = v * 1664525U + 1013904223U;
  out[threadIdx.x] = v;
}
int main(int argc, char** argv) {
  const bool other_module = argc > 1 && argv[1][0] == 'o';
  std::uint32_t *x, *y, *o;
  size_t n = 1 << 16;
  cudaMalloc(&x, n * 4);
  cudaMalloc(&y, n * 4);
  cudaMalloc(&o, 4096);
  cudaStream_t a, b;
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  busy<<<4, 256, 0, a>>>(o, 1);
  cudaStreamSynchronize(a);
  double worst = 0, total = 0;
  for (int i = 0; i < 5; ++i) {
    busy<<<4, 256, 0, a>>>(o, 2000000);
    auto t0 = std::chrono::steady_clock::now();
    if (other_module)
      launch_side(i, x, y, n, b);
    else
      switch (i) {
        case 0: same_kernel<0><<<16, 256, 0, b>>>(x, y, n); break;
        case 1: same_kernel<1><<<16, 256, 0, b>>>(x, y, n); break;
        case 2: same_kernel<2><<<16, 256, 0, b>>>(x, y, n); break;
        case 3: same_kernel<3><<<16, 256, 0, b>>>(x, y, n); break;
        default: same_kernel<4><<<16, 256, 0, b>>>(x, y, n);
      }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    worst = ms > worst ? ms : worst;
    total += ms;
    cudaStreamSynchronize(b);
    cudaStreamSynchronize(a);
  }
  printf("%s module: first-launch calls worst %.3f ms, total %.3f ms, status %s\n",
         other_module ? "other" : "same", worst, total, cudaGetErrorString(cudaGetLastError()));
}
