// A module in which no kernel prints (cubin_calls_test).
__global__ void add_one(int* out) {
  out[threadIdx.x] += 1;
}
