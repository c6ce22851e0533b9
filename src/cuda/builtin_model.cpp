// The device model Pipeline's automatic chunking plans on when the options
// give none: the built-in preset closest to the GPU the run is on.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>

#include "overlap/cuda/error.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace overlap::cuda::detail {

const DeviceModel& builtin_model_of_current_device() {
  static std::mutex mutex;
  static std::map<int, DeviceModel> by_device;  // node-based: references stay valid
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice", "choosing the chunking model");
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = by_device.find(device);
  if (found != by_device.end()) return found->second;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", "choosing the chunking model");
  // The h100 preset holds figures measured on an H100 (HARDWARE.md, overlap
  // probe); anything else gets the generic Hyper-Q model until it is probed.
  const std::string name = prop.name;
  const bool hopper = name.find("H100") != std::string::npos || name.find("H200") != std::string::npos;
  return by_device.emplace(device, DeviceModel::preset(hopper ? "h100" : "hyperq")).first->second;
}

}  // namespace overlap::cuda::detail
