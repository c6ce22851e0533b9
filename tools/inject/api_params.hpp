// An API call's class (the `cls` of its call record) and the arguments that
// class records, read from CUPTI's parameter structs.
//
// CUPTI hands each callback `functionParams`, a pointer to a struct whose
// type depends on the callback id (generated_cuda_runtime_api_meta.h and
// generated_cuda_meta.h). The two describe functions (runtime_params.cpp,
// driver_params.cpp) are the only place that knows those layouts: one switch
// per API layer over the ids this library classifies, every other id being
// class `other`. `_ptsz`/`_ptds` entry points share their base function's
// layout and mark the call per-thread.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <array>
#include <cstdint>
#include <string_view>

namespace overlap::inject {

enum class CallClass : std::uint8_t {
  other,
  copy,
  memset,
  launch,
  record,
  wait,
  stream_sync,
  event_sync,
  device_sync,
  alloc,
  free,
  host_register,
  host_unregister,
  stream_create,
  stream_destroy,
  event_create,
  event_destroy,
  prefetch,  ///< cudaMemPrefetchAsync: managed memory moved in stream order
  attach,    ///< cudaStreamAttachMemAsync: managed memory's visibility, in stream order
};

/// The `cls` value ("stream_sync", "register", ...).
[[nodiscard]] std::string_view class_name(CallClass cls) noexcept;

/// Classes whose calls get a caller lookup at entry: copies, memsets,
/// synchronizations and memory management, the host-side costs a user looks
/// for in their code. Launches, records, waits and `other` calls are too
/// frequent to pay for a stack walk.
[[nodiscard]] bool wants_caller(CallClass cls) noexcept;

/// One side of a copy as the call states it.
enum class CopySide : std::uint8_t {
  unknown,  ///< the call's arguments do not say (a null descriptor)
  host,
  device,
  by_pointer,  ///< cudaMemcpyDefault, cuMemcpy, CU_MEMORYTYPE_UNIFIED: ask the driver
};

struct CallFields {
  CallClass cls = CallClass::other;
  bool per_thread = false;  ///< a `_ptsz`/`_ptds` entry point: the NULL stream is the per-thread one
  bool has_stream = false;  ///< `stream` applies (NULL then means a default stream)
  CUstream stream = nullptr;

  // copy, memset
  std::uint64_t dst = 0;
  std::uint64_t src = 0;
  std::uint64_t bytes = 0;
  CopySide src_side = CopySide::unknown;
  CopySide dst_side = CopySide::unknown;
  bool async = false;

  // record, wait, event_sync, event_create, event_destroy
  std::uint64_t event = 0;

  // alloc, free, host_register, host_unregister, prefetch, attach
  std::uint64_t ptr = 0;
  std::string_view memory;        ///< alloc/free: "device", "managed", "pinned", "async"
  std::string_view to;            ///< prefetch: "device" or "host", where the bytes go
  unsigned int attach_flags = 0;  ///< attach: cudaMemAttachGlobal/Host/Single

  // launch
  bool has_dims = false;
  std::array<std::uint32_t, 3> grid{};
  std::array<std::uint32_t, 3> block{};
  CUfunction function = nullptr;   ///< driver launches
  void** kernel_params = nullptr;  ///< driver launches (null in the `extra` form); runtime launches' `args`
  const void* host_function = nullptr;  ///< runtime launches: the kernel's host stub

  // stream_create
  CUstream created_stream = nullptr;
  unsigned int stream_flags = 0;
  int priority = 0;
};

/// Fills `fields` for the call `cbid` with parameters `params` (may be null).
/// With `outputs` false (at entry, or after a failed call) out-parameters
/// such as a created handle or an allocated pointer are left unread.
void describe_runtime_call(CUpti_CallbackId cbid, const void* params, bool outputs, CallFields& fields);
void describe_driver_call(CUpti_CallbackId cbid, const void* params, bool outputs, CallFields& fields);

}  // namespace overlap::inject
