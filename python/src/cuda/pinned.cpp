// Page-locked host memory as a NumPy array: overlap.pinned_empty views these
// bytes with the dtype and shape asked for. The array owns the allocation
// (freed with cudaFreeHost when the last view goes), so it can outlive the
// Pipeline that uses it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>

#include "bindings.hpp"
#include "overlap/cuda/memory.hpp"

namespace nb = nanobind;

namespace overlap::python {

void bind_pinned(nb::module_& module) {
  module.def(
      "pinned_bytes",
      [](std::size_t bytes) {
        void* data = cuda::detail::allocate_pinned(bytes, cudaHostAllocDefault);
        nb::capsule owner(data, [](void* pointer) noexcept { cuda::detail::free_pinned(pointer); });
        const std::size_t shape[1] = {bytes};
        return nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(data, 1, shape, owner);
      },
      nb::arg("bytes"), "`bytes` page-locked bytes (cudaHostAlloc) as a uint8 NumPy array; bytes > 0.");
  module.def(
      "is_pinned",
      [](std::uintptr_t pointer) {
        // Python hands over host addresses as integers (ndarray.ctypes.data).
        return cuda::is_pinned(reinterpret_cast<const void*>(pointer));  // NOLINT(performance-no-int-to-ptr)
      },
      nb::arg("pointer"),
      "True when host memory at `pointer` is page-locked (allocated or registered with CUDA).");
}

}  // namespace overlap::python
