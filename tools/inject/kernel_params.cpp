// Kernel names and pointer-sized arguments of launches (see kernel_params.hpp).
//
// Both driver queries run inside an API callback, under OwnDriverCalls so
// the callbacks they trigger are ignored. A parameter index past the last
// makes the query fail: that is how the number of parameters is found.
#include "kernel_params.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "tracer.hpp"

namespace overlap::inject {

namespace {

/// Per parameter: its size in bytes.
using Layout = std::vector<std::uint32_t>;

struct LayoutCache {
  std::mutex mutex;
  std::unordered_map<CUfunction, Layout> layouts;
};

LayoutCache& cache() {
  static auto* layouts = new LayoutCache;  // never destroyed: launches can come during exit
  return *layouts;
}

/// Far more parameters than a kernel can take (4 KiB of arguments at most).
constexpr std::size_t max_params = 4096;

Layout read_layout(CUfunction function) {
  const OwnDriverCalls own;
  Layout layout;
  std::size_t offset = 0;
  std::size_t size = 0;
  CUresult first = cuFuncGetParamInfo(function, 0, &offset, &size);
  bool as_kernel = false;
  if (first != CUDA_SUCCESS) {
    // Either a kernel without parameters or a CUkernel handle.
    auto* const kernel = reinterpret_cast<CUkernel>(function);
    if (cuKernelGetParamInfo(kernel, 0, &offset, &size) == CUDA_SUCCESS) {
      as_kernel = true;
      first = CUDA_SUCCESS;
    }
  }
  if (first != CUDA_SUCCESS) {
    if (first != CUDA_ERROR_INVALID_VALUE) (void)driver_ok(first, "cuFuncGetParamInfo");
    return layout;
  }
  layout.push_back(static_cast<std::uint32_t>(size));
  for (std::size_t i = 1; i < max_params; ++i) {
    const CUresult result =
        as_kernel ? cuKernelGetParamInfo(reinterpret_cast<CUkernel>(function), i, &offset, &size)
                  : cuFuncGetParamInfo(function, i, &offset, &size);
    if (result != CUDA_SUCCESS) break;
    layout.push_back(static_cast<std::uint32_t>(size));
  }
  return layout;
}

/// The range user-space addresses take on 64-bit Linux (x86-64: below
/// 2^47; AArch64: 2^48); below 2^32 lie sizes, counts and small offsets,
/// above 2^48 the bit patterns of most doubles.
bool looks_like_address(std::uint64_t value) {
  constexpr std::uint64_t lowest = std::uint64_t{1} << 32;
  constexpr std::uint64_t highest = std::uint64_t{1} << 48;
  return value >= lowest && value < highest;
}

/// The address-like 8-byte words of a struct parameter of `size` bytes.
void append_struct_words(const void* param, std::uint32_t size, std::vector<std::uint64_t>& out) {
  const auto* bytes = static_cast<const unsigned char*>(param);
  for (std::uint32_t at = 0; at + sizeof(std::uint64_t) <= size && out.size() < max_struct_words;
       at += sizeof(std::uint64_t)) {
    std::uint64_t value = 0;
    std::memcpy(&value, bytes + at, sizeof value);  // a struct's members are laid out at its alignment
    if (looks_like_address(value) && std::find(out.begin(), out.end(), value) == out.end())
      out.push_back(value);
  }
}

}  // namespace

void append_pointer_params(CUfunction function, void** kernel_params, PointerArgs& out) {
  if (function == nullptr || kernel_params == nullptr) return;
  LayoutCache& c = cache();
  const std::lock_guard lock(c.mutex);
  auto it = c.layouts.find(function);
  if (it == c.layouts.end()) it = c.layouts.emplace(function, read_layout(function)).first;
  const Layout& layout = it->second;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (kernel_params[i] == nullptr) continue;
    if (layout[i] == sizeof(std::uint64_t)) {
      std::uint64_t value = 0;
      std::memcpy(&value, kernel_params[i], sizeof value);  // arguments need not be 8-byte aligned
      if (value != 0) out.params.push_back(value);
    } else if (layout[i] > sizeof(std::uint64_t)) {
      append_struct_words(kernel_params[i], layout[i], out.in_structs);
    }
  }
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
  const OwnDriverCalls own;
  const char* name = nullptr;
  if (cuFuncGetName(&name, function) != CUDA_SUCCESS || name == nullptr) {
    if (cuKernelGetName(&name, reinterpret_cast<CUkernel>(function)) != CUDA_SUCCESS) name = nullptr;
  }
  if (name != nullptr) out.assign(name);
}

void forget_kernel_layouts() {
  LayoutCache& c = cache();
  const std::lock_guard lock(c.mutex);
  c.layouts.clear();
}

}  // namespace overlap::inject
