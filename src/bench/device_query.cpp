// query_device: what the report says about the GPU it ran on.
#include <cuda_runtime_api.h>

#include "overlap/bench/driver.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::bench {

device_info query_device() {
  int current = 0;
  cuda::check(cudaGetDevice(&current), "cudaGetDevice");
  return query_device(current);
}

device_info query_device(int ordinal) {
  device_info d;
  d.ordinal = ordinal;
  cudaDeviceProp properties{};
  cuda::check(cudaGetDeviceProperties(&properties, d.ordinal), "cudaGetDeviceProperties");
  d.name = properties.name;
  d.global_memory_bytes = properties.totalGlobalMem;
  const auto attribute = [&d](cudaDeviceAttr what, int& value, const char* name) {
    cuda::check(cudaDeviceGetAttribute(&value, what, d.ordinal), "cudaDeviceGetAttribute", name);
  };
  attribute(cudaDevAttrComputeCapabilityMajor, d.compute_major, "compute capability major");
  attribute(cudaDevAttrComputeCapabilityMinor, d.compute_minor, "compute capability minor");
  attribute(cudaDevAttrMultiProcessorCount, d.sm_count, "multiprocessor count");
  attribute(cudaDevAttrAsyncEngineCount, d.async_engine_count, "async engine count");
  cuda::check(cudaDriverGetVersion(&d.driver_version), "cudaDriverGetVersion");
  cuda::check(cudaRuntimeGetVersion(&d.runtime_version), "cudaRuntimeGetVersion");
  return d;
}

}  // namespace overlap::bench
