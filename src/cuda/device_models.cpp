// The device models Pipeline's planned chunking uses when the options give
// none: the built-in preset closest to the GPU, or its cached probe.
#include "overlap/cuda/device_models.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "overlap/cuda/error.hpp"

namespace overlap::cuda {

namespace {

int current_device() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice", "choosing the chunking model");
  return device;
}

cudaDeviceProp properties_of(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", "choosing the chunking model");
  return prop;
}

}  // namespace

std::string device_uuid(int device) {
  const cudaDeviceProp prop = properties_of(device);
  const auto* b = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);  // NOLINT: a byte view of the UUID
  std::string uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
    uuid += fmt::format("{:02x}", b[i]);
  }
  return uuid;
}

namespace {

std::string driver_text() {
  int driver = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion", "naming the cached model");
  return fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
}

}  // namespace

cached_model_key current_device_model_key() {
  return {device_uuid(current_device()), driver_text()};
}

cached_model_key host_model_key() {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount", "naming the cached host model");
  // FNV-1a over the UUIDs in device order: a short name for this set of GPUs
  // (eight UUIDs side by side would pass a file name's length limit).
  std::uint64_t hash = 14695981039346656037ULL;
  for (int d = 0; d < devices; ++d) {
    for (const char c : device_uuid(d) + ",") {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
  }
  return {fmt::format("host-{}gpus-{:016x}", devices, hash), driver_text()};
}

const DeviceModel& builtin_model_of_current_device() {
  static std::mutex mutex;
  static std::map<int, DeviceModel> by_device;  // node-based: references stay valid
  const int device = current_device();
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = by_device.find(device);
  if (found != by_device.end()) return found->second;
  // The h100 preset holds figures measured on an H100 (docs/hardware.md, overlap
  // probe); anything else gets the generic Hyper-Q model until it is probed.
  const std::string name = properties_of(device).name;
  const bool hopper = name.find("H100") != std::string::npos || name.find("H200") != std::string::npos;
  return by_device.emplace(device, DeviceModel::preset(hopper ? "h100" : "hyperq")).first->second;
}

const DeviceModel& cached_model_of_current_device() {
  static std::mutex mutex;
  static std::map<int, DeviceModel> by_device;  // only models found: a later probe is picked up
  const int device = current_device();
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = by_device.find(device);
  if (found != by_device.end()) return found->second;
  const cached_model_key key = current_device_model_key();
  std::optional<DeviceModel> model = load_cached_model(key);
  if (!model) {
    throw invalid_input(fmt::format(
        "model_source: no probed model is cached for {} ({}, driver {}) at {}: run `overlap probe --cache` "
        "on this machine first",
        properties_of(device).name, key.device_uuid, key.driver, cached_model_path(key).string()));
  }
  return by_device.emplace(device, std::move(*model)).first->second;
}

}  // namespace overlap::cuda
