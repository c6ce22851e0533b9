// Kernels for cubin_calls_test: built with `nvcc -cubin`, never run. Each
// kernel's name says whether it reaches printf; the helpers are kept out of
// line so that the call graph has a path of more than one edge.
#include <cstdio>

__device__ __noinline__ void say(int value) {
  printf("value %d\n", value);
}
__device__ __noinline__ void relay(int value) {
  say(value + 1);
}
__device__ __noinline__ int twice(int value) {
  return 2 * value;
}

__global__ void prints_directly(const int* in) {
  printf("first %d\n", in[0]);
}
__global__ void prints_through_two_calls(const int* in) {
  if (in[0] > 0) relay(in[1]);
}
__global__ void quiet_with_a_call(int* out) {
  out[threadIdx.x] = twice(static_cast<int>(threadIdx.x));
}
__global__ void quiet(int* out) {
  out[threadIdx.x] += 1;
}
