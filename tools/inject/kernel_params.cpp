// Kernel names and pointer-sized arguments of launches (see kernel_params.hpp).
//
// Both driver queries run inside an API callback, under OwnDriverCalls so
// the callbacks they trigger are ignored. A parameter index past the last
// makes the query fail: that is how the number of parameters is found.
#include "kernel_params.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "param_layout.hpp"
#include "tracer.hpp"

namespace overlap::inject {

namespace {

/// Per parameter: its size in bytes.
using Layout = std::vector<std::uint32_t>;

struct LayoutCache {
  std::mutex mutex;
  std::unordered_map<CUfunction, Layout> layouts;
  // Names too: each query is a driver call that CUPTI reports back to this
  // library, and capture loops launch the same kernel thousands of times.
  std::unordered_map<CUfunction, std::string> names;
};

LayoutCache& cache() {
  static auto* layouts = new LayoutCache;  // never destroyed: launches can come during exit
  return *layouts;
}

Layout read_layout(CUfunction function) {
  const OwnDriverCalls own;
  CUresult failure = CUDA_SUCCESS;
  Layout layout = read_param_layout(function, failure);
  if (failure != CUDA_SUCCESS) (void)driver_ok(failure, "cuFuncGetParamInfo");
  return layout;
}

}  // namespace

void append_pointer_params(CUfunction function, void** kernel_params, PointerArgs& out) {
  if (function == nullptr || kernel_params == nullptr) return;
  LayoutCache& c = cache();
  const std::lock_guard lock(c.mutex);
  auto it = c.layouts.find(function);
  if (it == c.layouts.end()) it = c.layouts.emplace(function, read_layout(function)).first;
  append_argument_values(it->second, kernel_params, out);
}

bool append_runtime_pointer_params(const void* host_function, void** args, PointerArgs& out) {
  if (host_function == nullptr || args == nullptr) return false;
  using GetFuncBySymbol = cudaError_t (*)(cudaFunction_t*, const void*);
  using LastError = cudaError_t (*)();
  // The shared runtime the process loaded, if any (a static one is not visible).
  static const auto get_function =
      reinterpret_cast<GetFuncBySymbol>(::dlsym(RTLD_DEFAULT, "cudaGetFuncBySymbol"));
  static const auto peek_error = reinterpret_cast<LastError>(::dlsym(RTLD_DEFAULT, "cudaPeekAtLastError"));
  static const auto take_error = reinterpret_cast<LastError>(::dlsym(RTLD_DEFAULT, "cudaGetLastError"));
  if (get_function == nullptr || peek_error == nullptr || take_error == nullptr) return false;
  cudaFunction_t function = nullptr;
  {
    const OwnDriverCalls own;  // also hides the runtime calls below from the callbacks
    // A failure would leave its error for the app's next cudaGetLastError:
    // ask only when none is pending, and take back the one this causes.
    if (peek_error() != cudaSuccess) return false;
    if (get_function(&function, host_function) != cudaSuccess) {
      (void)take_error();
      return false;
    }
  }
  append_pointer_params(reinterpret_cast<CUfunction>(function), args, out);
  return true;
}

void read_kernel_name(CUfunction function, std::string& out) {
  out.clear();
  if (function == nullptr) return;
  LayoutCache& c = cache();
  const std::lock_guard lock(c.mutex);
  auto it = c.names.find(function);
  if (it == c.names.end()) {
    const OwnDriverCalls own;
    const char* name = nullptr;
    if (cuFuncGetName(&name, function) != CUDA_SUCCESS || name == nullptr) {
      if (cuKernelGetName(&name, reinterpret_cast<CUkernel>(function)) != CUDA_SUCCESS) name = nullptr;
    }
    if (name == nullptr) return;  // not cached: a later launch asks again
    it = c.names.emplace(function, name).first;
  }
  out = it->second;
}

void forget_kernel_layouts() {
  LayoutCache& c = cache();
  const std::lock_guard lock(c.mutex);
  c.layouts.clear();
  c.names.clear();
}

}  // namespace overlap::inject
