// describe_driver_call: the CUDA driver's entry points (see api_params.hpp).
//
// Every case names the parameter struct of its base entry point
// (generated_cuda_meta.h); the `_ptds`/`_ptsz` variants are generated from
// the same prototype and have the same layout. Only the current (`_v2`)
// entry points of functions that had a 32-bit version are classified: the
// old ones are what cuda.h's macros no longer name. Descriptors the app
// passed are checked for null before use.
#include "api_params.hpp"
#include "param_setters.hpp"

namespace overlap::inject {

namespace {

using namespace params;

#define DRV(name) CUPTI_DRIVER_TRACE_CBID_##name

CopySide side_of(CUmemorytype type) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: return CopySide::host;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: return CopySide::device;
    default: return CopySide::by_pointer;  // CU_MEMORYTYPE_UNIFIED
  }
}

template <typename Descriptor>
std::uint64_t source_address(const Descriptor& d) {
  switch (d.srcMemoryType) {
    case CU_MEMORYTYPE_HOST: return address(d.srcHost);
    case CU_MEMORYTYPE_ARRAY: return address(d.srcArray);
    default: return d.srcDevice;
  }
}

template <typename Descriptor>
std::uint64_t destination_address(const Descriptor& d) {
  switch (d.dstMemoryType) {
    case CU_MEMORYTYPE_HOST: return address(d.dstHost);
    case CU_MEMORYTYPE_ARRAY: return address(d.dstArray);
    default: return d.dstDevice;
  }
}

/// cuMemcpy2D/3D/3DPeer descriptors: the same field names, 3D adds a depth.
template <typename Descriptor>
void driver_descriptor_copy(CallFields& f, const Descriptor* d) {
  f.cls = CallClass::copy;
  f.has_stream = true;
  if (d == nullptr) return;
  std::uint64_t bytes = d->WidthInBytes * d->Height;
  if constexpr (requires { d->Depth; }) bytes *= d->Depth;
  set_copy(f, destination_address(*d), source_address(*d), bytes,
           {side_of(d->srcMemoryType), side_of(d->dstMemoryType)});
}

std::string_view location_name(CUmemLocationType type) {
  switch (type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return "device";
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return "host";
    default: return "";
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-function-size): one flat case per entry point reads best
void describe_driver_call(CUpti_CallbackId cbid, const void* params, bool outputs, CallFields& f) {
  // cuCtxSynchronize takes no arguments and may come without a parameter
  // struct; the v2 entry point's context argument is not recorded.
  if (cbid == DRV(cuCtxSynchronize) || cbid == DRV(cuCtxSynchronize_v2)) {
    f.cls = CallClass::device_sync;
    return;
  }
  if (params == nullptr) return;
  switch (cbid) {
    // --- copies: unified addressing (cuMemcpy), or a direction in the name
    case DRV(cuMemcpy):
    case DRV(cuMemcpy_ptds): {
      const auto& p = args<cuMemcpy_params>(params);
      f.per_thread = cbid == DRV(cuMemcpy_ptds);
      set_copy(f, p.dst, p.src, p.ByteCount, {CopySide::by_pointer, CopySide::by_pointer});
      break;
    }
    case DRV(cuMemcpyAsync):
    case DRV(cuMemcpyAsync_ptsz): {
      const auto& p = args<cuMemcpyAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyAsync_ptsz);
      set_copy(f, p.dst, p.src, p.ByteCount, {CopySide::by_pointer, CopySide::by_pointer});
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemcpyHtoD_v2):
    case DRV(cuMemcpyHtoD_v2_ptds): {
      const auto& p = args<cuMemcpyHtoD_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyHtoD_v2_ptds);
      set_copy(f, p.dstDevice, address(p.srcHost), p.ByteCount, {CopySide::host, CopySide::device});
      break;
    }
    case DRV(cuMemcpyHtoDAsync_v2):
    case DRV(cuMemcpyHtoDAsync_v2_ptsz): {
      const auto& p = args<cuMemcpyHtoDAsync_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyHtoDAsync_v2_ptsz);
      set_copy(f, p.dstDevice, address(p.srcHost), p.ByteCount, {CopySide::host, CopySide::device});
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemcpyDtoH_v2):
    case DRV(cuMemcpyDtoH_v2_ptds): {
      const auto& p = args<cuMemcpyDtoH_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyDtoH_v2_ptds);
      set_copy(f, address(p.dstHost), p.srcDevice, p.ByteCount, {CopySide::device, CopySide::host});
      break;
    }
    case DRV(cuMemcpyDtoHAsync_v2):
    case DRV(cuMemcpyDtoHAsync_v2_ptsz): {
      const auto& p = args<cuMemcpyDtoHAsync_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyDtoHAsync_v2_ptsz);
      set_copy(f, address(p.dstHost), p.srcDevice, p.ByteCount, {CopySide::device, CopySide::host});
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemcpyDtoD_v2):
    case DRV(cuMemcpyDtoD_v2_ptds): {
      const auto& p = args<cuMemcpyDtoD_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyDtoD_v2_ptds);
      set_copy(f, p.dstDevice, p.srcDevice, p.ByteCount, device_to_device);
      break;
    }
    case DRV(cuMemcpyDtoDAsync_v2):
    case DRV(cuMemcpyDtoDAsync_v2_ptsz): {
      const auto& p = args<cuMemcpyDtoDAsync_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyDtoDAsync_v2_ptsz);
      set_copy(f, p.dstDevice, p.srcDevice, p.ByteCount, device_to_device);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemcpy2D_v2):
    case DRV(cuMemcpy2D_v2_ptds):
    case DRV(cuMemcpy2DUnaligned_v2):
    case DRV(cuMemcpy2DUnaligned_v2_ptds): {
      f.per_thread = cbid == DRV(cuMemcpy2D_v2_ptds) || cbid == DRV(cuMemcpy2DUnaligned_v2_ptds);
      driver_descriptor_copy(f, args<cuMemcpy2D_v2_params>(params).pCopy);
      break;
    }
    case DRV(cuMemcpy2DAsync_v2):
    case DRV(cuMemcpy2DAsync_v2_ptsz): {
      const auto& p = args<cuMemcpy2DAsync_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpy2DAsync_v2_ptsz);
      driver_descriptor_copy(f, p.pCopy);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemcpy3D_v2):
    case DRV(cuMemcpy3D_v2_ptds): {
      f.per_thread = cbid == DRV(cuMemcpy3D_v2_ptds);
      driver_descriptor_copy(f, args<cuMemcpy3D_v2_params>(params).pCopy);
      break;
    }
    case DRV(cuMemcpy3DAsync_v2):
    case DRV(cuMemcpy3DAsync_v2_ptsz): {
      const auto& p = args<cuMemcpy3DAsync_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemcpy3DAsync_v2_ptsz);
      driver_descriptor_copy(f, p.pCopy);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemcpyPeer):
    case DRV(cuMemcpyPeer_ptds): {
      const auto& p = args<cuMemcpyPeer_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyPeer_ptds);
      set_copy(f, p.dstDevice, p.srcDevice, p.ByteCount, device_to_device);
      break;
    }
    case DRV(cuMemcpyPeerAsync):
    case DRV(cuMemcpyPeerAsync_ptsz): {
      const auto& p = args<cuMemcpyPeerAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemcpyPeerAsync_ptsz);
      set_copy(f, p.dstDevice, p.srcDevice, p.ByteCount, device_to_device);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemcpy3DPeer):
    case DRV(cuMemcpy3DPeer_ptds): {
      f.per_thread = cbid == DRV(cuMemcpy3DPeer_ptds);
      driver_descriptor_copy(f, args<cuMemcpy3DPeer_params>(params).pCopy);
      break;
    }
    case DRV(cuMemcpy3DPeerAsync):
    case DRV(cuMemcpy3DPeerAsync_ptsz): {
      const auto& p = args<cuMemcpy3DPeerAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemcpy3DPeerAsync_ptsz);
      driver_descriptor_copy(f, p.pCopy);
      set_async(f, p.hStream);
      break;
    }

    // --- memsets: N elements of 1, 2 or 4 bytes, or Width x Height of them
    case DRV(cuMemsetD8_v2):
    case DRV(cuMemsetD8_v2_ptds): {
      const auto& p = args<cuMemsetD8_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD8_v2_ptds);
      set_memset(f, p.dstDevice, p.N);
      break;
    }
    case DRV(cuMemsetD16_v2):
    case DRV(cuMemsetD16_v2_ptds): {
      const auto& p = args<cuMemsetD16_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD16_v2_ptds);
      set_memset(f, p.dstDevice, std::uint64_t{p.N} * 2);
      break;
    }
    case DRV(cuMemsetD32_v2):
    case DRV(cuMemsetD32_v2_ptds): {
      const auto& p = args<cuMemsetD32_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD32_v2_ptds);
      set_memset(f, p.dstDevice, std::uint64_t{p.N} * 4);
      break;
    }
    case DRV(cuMemsetD2D8_v2):
    case DRV(cuMemsetD2D8_v2_ptds): {
      const auto& p = args<cuMemsetD2D8_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD2D8_v2_ptds);
      set_memset(f, p.dstDevice, std::uint64_t{p.Width} * p.Height);
      break;
    }
    case DRV(cuMemsetD2D16_v2):
    case DRV(cuMemsetD2D16_v2_ptds): {
      const auto& p = args<cuMemsetD2D16_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD2D16_v2_ptds);
      set_memset(f, p.dstDevice, std::uint64_t{p.Width} * 2 * p.Height);
      break;
    }
    case DRV(cuMemsetD2D32_v2):
    case DRV(cuMemsetD2D32_v2_ptds): {
      const auto& p = args<cuMemsetD2D32_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD2D32_v2_ptds);
      set_memset(f, p.dstDevice, std::uint64_t{p.Width} * 4 * p.Height);
      break;
    }
    case DRV(cuMemsetD8Async):
    case DRV(cuMemsetD8Async_ptsz): {
      const auto& p = args<cuMemsetD8Async_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD8Async_ptsz);
      set_memset(f, p.dstDevice, p.N);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemsetD16Async):
    case DRV(cuMemsetD16Async_ptsz): {
      const auto& p = args<cuMemsetD16Async_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD16Async_ptsz);
      set_memset(f, p.dstDevice, std::uint64_t{p.N} * 2);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemsetD32Async):
    case DRV(cuMemsetD32Async_ptsz): {
      const auto& p = args<cuMemsetD32Async_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD32Async_ptsz);
      set_memset(f, p.dstDevice, std::uint64_t{p.N} * 4);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemsetD2D8Async):
    case DRV(cuMemsetD2D8Async_ptsz): {
      const auto& p = args<cuMemsetD2D8Async_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD2D8Async_ptsz);
      set_memset(f, p.dstDevice, std::uint64_t{p.Width} * p.Height);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemsetD2D16Async):
    case DRV(cuMemsetD2D16Async_ptsz): {
      const auto& p = args<cuMemsetD2D16Async_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD2D16Async_ptsz);
      set_memset(f, p.dstDevice, std::uint64_t{p.Width} * 2 * p.Height);
      set_async(f, p.hStream);
      break;
    }
    case DRV(cuMemsetD2D32Async):
    case DRV(cuMemsetD2D32Async_ptsz): {
      const auto& p = args<cuMemsetD2D32Async_params>(params);
      f.per_thread = cbid == DRV(cuMemsetD2D32Async_ptsz);
      set_memset(f, p.dstDevice, std::uint64_t{p.Width} * 4 * p.Height);
      set_async(f, p.hStream);
      break;
    }

    // --- launches
    case DRV(cuLaunchKernel):
    case DRV(cuLaunchKernel_ptsz): {
      const auto& p = args<cuLaunchKernel_params>(params);
      f.per_thread = cbid == DRV(cuLaunchKernel_ptsz);
      set_stream(f, CallClass::launch, p.hStream);
      set_dims(f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ);
      f.function = p.f;
      f.kernel_params = p.kernelParams;
      break;
    }
    case DRV(cuLaunchCooperativeKernel):
    case DRV(cuLaunchCooperativeKernel_ptsz): {
      const auto& p = args<cuLaunchCooperativeKernel_params>(params);
      f.per_thread = cbid == DRV(cuLaunchCooperativeKernel_ptsz);
      set_stream(f, CallClass::launch, p.hStream);
      set_dims(f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ);
      f.function = p.f;
      f.kernel_params = p.kernelParams;
      break;
    }
    case DRV(cuLaunchKernelEx):
    case DRV(cuLaunchKernelEx_ptsz): {
      const auto& p = args<cuLaunchKernelEx_params>(params);
      f.per_thread = cbid == DRV(cuLaunchKernelEx_ptsz);
      f.cls = CallClass::launch;
      if (p.config != nullptr) {
        const CUlaunchConfig& c = *p.config;
        set_stream(f, CallClass::launch, c.hStream);
        set_dims(f, c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ);
      }
      f.function = p.f;
      f.kernel_params = p.kernelParams;
      break;
    }

    // --- events and synchronization
    case DRV(cuEventRecord):
    case DRV(cuEventRecord_ptsz): {
      const auto& p = args<cuEventRecord_params>(params);
      f.per_thread = cbid == DRV(cuEventRecord_ptsz);
      set_event(f, CallClass::record, p.hEvent);
      set_stream(f, CallClass::record, p.hStream);
      break;
    }
    case DRV(cuEventRecordWithFlags):
    case DRV(cuEventRecordWithFlags_ptsz): {
      const auto& p = args<cuEventRecordWithFlags_params>(params);
      f.per_thread = cbid == DRV(cuEventRecordWithFlags_ptsz);
      set_event(f, CallClass::record, p.hEvent);
      set_stream(f, CallClass::record, p.hStream);
      break;
    }
    case DRV(cuStreamWaitEvent):
    case DRV(cuStreamWaitEvent_ptsz): {
      const auto& p = args<cuStreamWaitEvent_params>(params);
      f.per_thread = cbid == DRV(cuStreamWaitEvent_ptsz);
      set_event(f, CallClass::wait, p.hEvent);
      set_stream(f, CallClass::wait, p.hStream);
      break;
    }
    case DRV(cuStreamSynchronize):
    case DRV(cuStreamSynchronize_ptsz): {
      f.per_thread = cbid == DRV(cuStreamSynchronize_ptsz);
      set_stream(f, CallClass::stream_sync, args<cuStreamSynchronize_params>(params).hStream);
      break;
    }
    case DRV(cuEventSynchronize):
      set_event(f, CallClass::event_sync, args<cuEventSynchronize_params>(params).hEvent);
      break;
    case DRV(cuStreamQuery):
    case DRV(cuStreamQuery_ptsz): {
      f.per_thread = cbid == DRV(cuStreamQuery_ptsz);
      set_stream(f, CallClass::other, args<cuStreamQuery_params>(params).hStream);  // as cudaStreamQuery
      break;
    }
    case DRV(cuEventQuery):
      set_event(f, CallClass::other, args<cuEventQuery_params>(params).hEvent);  // as cudaEventQuery
      break;

    // --- memory
    case DRV(cuMemAlloc_v2): {
      const auto& p = args<cuMemAlloc_v2_params>(params);
      set_device_alloc(f, "device", p.dptr, outputs, p.bytesize);
      break;
    }
    case DRV(cuMemAllocPitch_v2): {
      const auto& p = args<cuMemAllocPitch_v2_params>(params);
      const std::uint64_t pitch = outputs && p.pPitch != nullptr ? *p.pPitch : p.WidthInBytes;
      set_device_alloc(f, "device", p.dptr, outputs, pitch * p.Height);
      break;
    }
    case DRV(cuMemAllocManaged): {
      const auto& p = args<cuMemAllocManaged_params>(params);
      set_device_alloc(f, "managed", p.dptr, outputs, p.bytesize);
      break;
    }
    case DRV(cuMemAllocHost_v2): {
      const auto& p = args<cuMemAllocHost_v2_params>(params);
      set_alloc(f, "pinned", p.pp, outputs, p.bytesize);
      break;
    }
    case DRV(cuMemHostAlloc): {
      const auto& p = args<cuMemHostAlloc_params>(params);
      set_alloc(f, "pinned", p.pp, outputs, p.bytesize);
      break;
    }
    case DRV(cuMemAllocAsync):
    case DRV(cuMemAllocAsync_ptsz): {
      const auto& p = args<cuMemAllocAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemAllocAsync_ptsz);
      set_device_alloc(f, "async", p.dptr, outputs, p.bytesize);
      set_stream(f, CallClass::alloc, p.hStream);
      break;
    }
    case DRV(cuMemAllocFromPoolAsync):
    case DRV(cuMemAllocFromPoolAsync_ptsz): {
      const auto& p = args<cuMemAllocFromPoolAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemAllocFromPoolAsync_ptsz);
      set_device_alloc(f, "async", p.dptr, outputs, p.bytesize);
      set_stream(f, CallClass::alloc, p.hStream);
      break;
    }
    case DRV(cuMemFree_v2): set_free(f, "device", args<cuMemFree_v2_params>(params).dptr); break;
    case DRV(cuMemFreeHost): set_free(f, "pinned", address(args<cuMemFreeHost_params>(params).p)); break;
    case DRV(cuMemFreeAsync):
    case DRV(cuMemFreeAsync_ptsz): {
      const auto& p = args<cuMemFreeAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemFreeAsync_ptsz);
      set_free(f, "async", p.dptr);
      set_stream(f, CallClass::free, p.hStream);
      break;
    }
    case DRV(cuMemHostRegister):
    case DRV(cuMemHostRegister_v2): {
      // The v1 and v2 entry points take the same arguments.
      const auto& p = args<cuMemHostRegister_v2_params>(params);
      f.cls = CallClass::host_register;
      f.ptr = address(p.p);
      f.bytes = p.bytesize;
      break;
    }
    case DRV(cuMemHostUnregister):
      f.cls = CallClass::host_unregister;
      f.ptr = address(args<cuMemHostUnregister_params>(params).p);
      break;

    // --- managed memory in stream order
    case DRV(cuMemPrefetchAsync):
    case DRV(cuMemPrefetchAsync_ptsz): {
      const auto& p = args<cuMemPrefetchAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemPrefetchAsync_ptsz);
      set_prefetch(f, p.devPtr, p.count, p.dstDevice == CU_DEVICE_CPU ? "host" : "device", p.hStream);
      break;
    }
    case DRV(cuMemPrefetchAsync_v2):
    case DRV(cuMemPrefetchAsync_v2_ptsz): {
      const auto& p = args<cuMemPrefetchAsync_v2_params>(params);
      f.per_thread = cbid == DRV(cuMemPrefetchAsync_v2_ptsz);
      set_prefetch(f, p.devPtr, p.count, location_name(p.location.type), p.hStream);
      break;
    }
    case DRV(cuMemPrefetchBatchAsync):
    case DRV(cuMemPrefetchBatchAsync_ptsz): {
      const auto& p = args<cuMemPrefetchBatchAsync_params>(params);
      f.per_thread = cbid == DRV(cuMemPrefetchBatchAsync_ptsz);
      const BatchExtent batch = batch_extent(p.dptrs, p.sizes, p.count);
      const bool located = p.prefetchLocs != nullptr && p.numPrefetchLocs > 0;
      set_prefetch(f, batch.first, batch.bytes, located ? location_name(p.prefetchLocs[0].type) : "",
                   p.hStream);
      break;
    }
    case DRV(cuStreamAttachMemAsync):
    case DRV(cuStreamAttachMemAsync_ptsz): {
      const auto& p = args<cuStreamAttachMemAsync_params>(params);
      f.per_thread = cbid == DRV(cuStreamAttachMemAsync_ptsz);
      set_attach(f, p.dptr, p.length, p.flags, p.hStream);
      break;
    }

    // --- streams and events
    case DRV(cuStreamCreate): {
      const auto& p = args<cuStreamCreate_params>(params);
      f.cls = CallClass::stream_create;
      f.stream_flags = p.Flags;
      if (outputs && p.phStream != nullptr) f.created_stream = *p.phStream;
      break;
    }
    case DRV(cuStreamCreateWithPriority): {
      const auto& p = args<cuStreamCreateWithPriority_params>(params);
      f.cls = CallClass::stream_create;
      f.stream_flags = p.flags;
      f.priority = p.priority;
      if (outputs && p.phStream != nullptr) f.created_stream = *p.phStream;
      break;
    }
    case DRV(cuStreamDestroy):
    case DRV(cuStreamDestroy_v2):
      set_stream(f, CallClass::stream_destroy, args<cuStreamDestroy_v2_params>(params).hStream);
      break;
    case DRV(cuEventCreate): {
      const auto& p = args<cuEventCreate_params>(params);
      f.cls = CallClass::event_create;
      if (outputs && p.phEvent != nullptr) f.event = address(*p.phEvent);
      break;
    }
    case DRV(cuEventDestroy):
    case DRV(cuEventDestroy_v2):
      set_event(f, CallClass::event_destroy, args<cuEventDestroy_v2_params>(params).hEvent);
      break;
    default: break;
  }
}

#undef DRV

}  // namespace overlap::inject
