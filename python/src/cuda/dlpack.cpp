// DLPack for a stage's chunk views: DeviceArray.__dlpack__ asks for a
// nanobind ndarray over the chunk's device memory and hands on its capsule.
// Made only when a consumer asks (torch.from_dlpack, cupy.from_dlpack):
// __cuda_array_interface__ needs none of this.
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"

namespace nb = nanobind;

namespace overlap::python {
namespace {

// NumPy's type string ("<f4", "|u1", "<c8", "|b1") as a DLPack dtype.
nb::dlpack::dtype dtype_of(const std::string& typestr) {
  if (typestr.size() < 3) throw invalid_input("dtype: '" + typestr + "' is not a NumPy type string");
  if (typestr[0] == '>') throw invalid_input("dtype: big-endian '" + typestr + "' cannot go to the GPU");
  const int bytes = std::stoi(typestr.substr(2));
  nb::dlpack::dtype result{};
  result.bits = static_cast<std::uint8_t>(bytes * 8);
  result.lanes = 1;
  switch (typestr[1]) {
    case 'f': result.code = static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float); break;
    case 'i': result.code = static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int); break;
    case 'u': result.code = static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt); break;
    case 'c': result.code = static_cast<std::uint8_t>(nb::dlpack::dtype_code::Complex); break;
    case 'b': result.code = static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bool); break;
    default: throw invalid_input("dtype: '" + typestr + "' has no DLPack equivalent");
  }
  return result;
}

}  // namespace

void bind_dlpack(nb::module_& module) {
  module.def(
      "dlpack_view",
      [](std::uintptr_t pointer, std::size_t size, const std::string& typestr) {
        int device = 0;
        cuda::check(cudaGetDevice(&device), "cudaGetDevice", "a chunk's DLPack view");
        const std::size_t shape[1] = {size};
        // The owner frees nothing: the view lives as long as the stage call,
        // as the ring slot does. Writable, as PyTorch requires.
        // Python hands over device addresses as integers.
        void* data = reinterpret_cast<void*>(pointer);  // NOLINT(performance-no-int-to-ptr)
        const nb::capsule owner(data, [](void*) noexcept {});
        return nb::cast(nb::ndarray<nb::array_api, nb::device::cuda>(
            data, 1, shape, owner, nullptr, dtype_of(typestr), nb::device::cuda::value, device));
      },
      nb::arg("pointer"), nb::arg("size"), nb::arg("typestr"),
      "A DLPack-capable view of `size` elements of device memory at `pointer`.");
}

}  // namespace overlap::python
