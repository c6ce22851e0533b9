// describe_runtime_call: the CUDA runtime's entry points (see api_params.hpp).
//
// Every case names the parameter struct of its base entry point
// (generated_cuda_runtime_api_meta.h); the `_ptsz`/`_ptds` variants are
// generated from the same prototype and have the same layout. Pointers the
// app passed (a copy descriptor, an out-parameter) are checked for null
// before use: CUPTI reports calls that the API is about to reject, and a
// callback must never fault where the API would only have returned an error.
#include <cuda_runtime_api.h>

#include "api_params.hpp"
#include "param_setters.hpp"

namespace overlap::inject {

namespace {

using namespace params;

#define RT(name) CUPTI_RUNTIME_TRACE_CBID_##name

/// The removed runtime entry point cudaStreamDestroy (v3020): its callback
/// id remains, its parameter struct left CUDA 13's headers.
struct RemovedStreamDestroyParams {
  cudaStream_t stream;
};

Sides sides_of(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return {CopySide::host, CopySide::host};
    case cudaMemcpyHostToDevice: return {CopySide::host, CopySide::device};
    case cudaMemcpyDeviceToHost: return {CopySide::device, CopySide::host};
    case cudaMemcpyDeviceToDevice: return {CopySide::device, CopySide::device};
    default: return {CopySide::by_pointer, CopySide::by_pointer};  // cudaMemcpyDefault
  }
}

void runtime_3d_copy(CallFields& f, const cudaMemcpy3DParms* p) {
  f.cls = CallClass::copy;
  f.has_stream = true;
  if (p == nullptr) return;
  const Sides sides = sides_of(p->kind);
  const std::uint64_t bytes = p->extent.width * p->extent.height * p->extent.depth;
  set_copy(f, p->dstArray != nullptr ? address(p->dstArray) : address(p->dstPtr.ptr),
           p->srcArray != nullptr ? address(p->srcArray) : address(p->srcPtr.ptr), bytes, sides);
}

void runtime_3d_peer_copy(CallFields& f, const cudaMemcpy3DPeerParms* p) {
  f.cls = CallClass::copy;
  f.has_stream = true;
  if (p == nullptr) return;
  const std::uint64_t bytes = p->extent.width * p->extent.height * p->extent.depth;
  set_copy(f, p->dstArray != nullptr ? address(p->dstArray) : address(p->dstPtr.ptr),
           p->srcArray != nullptr ? address(p->srcArray) : address(p->srcPtr.ptr), bytes, device_to_device);
}

std::string_view location_name(cudaMemLocationType type) {
  switch (type) {
    case cudaMemLocationTypeDevice: return "device";
    case cudaMemLocationTypeHost:
    case cudaMemLocationTypeHostNuma:
    case cudaMemLocationTypeHostNumaCurrent: return "host";
    default: return "";
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-function-size): one flat case per entry point reads best
void describe_runtime_call(CUpti_CallbackId cbid, const void* params, bool outputs, CallFields& f) {
  // Calls without arguments may come without a parameter struct.
  if (cbid == RT(cudaDeviceSynchronize_v3020) || cbid == RT(cudaThreadSynchronize_v3020)) {
    f.cls = CallClass::device_sync;
    return;
  }
  if (params == nullptr) return;
  switch (cbid) {
    // --- copies
    case RT(cudaMemcpy_v3020):
    case RT(cudaMemcpy_ptds_v7000): {
      const auto& p = args<cudaMemcpy_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpy_ptds_v7000);
      set_copy(f, address(p.dst), address(p.src), p.count, sides_of(p.kind));
      break;
    }
    case RT(cudaMemcpyAsync_v3020):
    case RT(cudaMemcpyAsync_ptsz_v7000): {
      const auto& p = args<cudaMemcpyAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpyAsync_ptsz_v7000);
      set_copy(f, address(p.dst), address(p.src), p.count, sides_of(p.kind));
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemcpy2D_v3020):
    case RT(cudaMemcpy2D_ptds_v7000): {
      const auto& p = args<cudaMemcpy2D_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpy2D_ptds_v7000);
      set_copy(f, address(p.dst), address(p.src), std::uint64_t{p.width} * p.height, sides_of(p.kind));
      break;
    }
    case RT(cudaMemcpy2DAsync_v3020):
    case RT(cudaMemcpy2DAsync_ptsz_v7000): {
      const auto& p = args<cudaMemcpy2DAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpy2DAsync_ptsz_v7000);
      set_copy(f, address(p.dst), address(p.src), std::uint64_t{p.width} * p.height, sides_of(p.kind));
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemcpy3D_v3020):
    case RT(cudaMemcpy3D_ptds_v7000): {
      f.per_thread = cbid == RT(cudaMemcpy3D_ptds_v7000);
      runtime_3d_copy(f, args<cudaMemcpy3D_v3020_params>(params).p);
      break;
    }
    case RT(cudaMemcpy3DAsync_v3020):
    case RT(cudaMemcpy3DAsync_ptsz_v7000): {
      const auto& p = args<cudaMemcpy3DAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpy3DAsync_ptsz_v7000);
      runtime_3d_copy(f, p.p);
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemcpyToSymbol_v3020):
    case RT(cudaMemcpyToSymbol_ptds_v7000): {
      // The symbol's host-side address: the record does not look up its device address.
      const auto& p = args<cudaMemcpyToSymbol_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpyToSymbol_ptds_v7000);
      set_copy(f, address(p.symbol) + p.offset, address(p.src), p.count,
               {sides_of(p.kind).src, CopySide::device});
      break;
    }
    case RT(cudaMemcpyToSymbolAsync_v3020):
    case RT(cudaMemcpyToSymbolAsync_ptsz_v7000): {
      const auto& p = args<cudaMemcpyToSymbolAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpyToSymbolAsync_ptsz_v7000);
      set_copy(f, address(p.symbol) + p.offset, address(p.src), p.count,
               {sides_of(p.kind).src, CopySide::device});
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemcpyFromSymbol_v3020):
    case RT(cudaMemcpyFromSymbol_ptds_v7000): {
      const auto& p = args<cudaMemcpyFromSymbol_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpyFromSymbol_ptds_v7000);
      set_copy(f, address(p.dst), address(p.symbol) + p.offset, p.count,
               {CopySide::device, sides_of(p.kind).dst});
      break;
    }
    case RT(cudaMemcpyFromSymbolAsync_v3020):
    case RT(cudaMemcpyFromSymbolAsync_ptsz_v7000): {
      const auto& p = args<cudaMemcpyFromSymbolAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemcpyFromSymbolAsync_ptsz_v7000);
      set_copy(f, address(p.dst), address(p.symbol) + p.offset, p.count,
               {CopySide::device, sides_of(p.kind).dst});
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemcpyPeer_v4000): {
      const auto& p = args<cudaMemcpyPeer_v4000_params>(params);
      set_copy(f, address(p.dst), address(p.src), p.count, device_to_device);
      break;
    }
    case RT(cudaMemcpyPeerAsync_v4000): {
      const auto& p = args<cudaMemcpyPeerAsync_v4000_params>(params);
      set_copy(f, address(p.dst), address(p.src), p.count, device_to_device);
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemcpy3DPeer_v4000):
    case RT(cudaMemcpy3DPeer_ptds_v7000): {
      f.per_thread = cbid == RT(cudaMemcpy3DPeer_ptds_v7000);
      runtime_3d_peer_copy(f, args<cudaMemcpy3DPeer_v4000_params>(params).p);
      break;
    }
    case RT(cudaMemcpy3DPeerAsync_v4000):
    case RT(cudaMemcpy3DPeerAsync_ptsz_v7000): {
      const auto& p = args<cudaMemcpy3DPeerAsync_v4000_params>(params);
      f.per_thread = cbid == RT(cudaMemcpy3DPeerAsync_ptsz_v7000);
      runtime_3d_peer_copy(f, p.p);
      set_async(f, p.stream);
      break;
    }

    // --- memsets
    case RT(cudaMemset_v3020):
    case RT(cudaMemset_ptds_v7000): {
      const auto& p = args<cudaMemset_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemset_ptds_v7000);
      set_memset(f, address(p.devPtr), p.count);
      break;
    }
    case RT(cudaMemsetAsync_v3020):
    case RT(cudaMemsetAsync_ptsz_v7000): {
      const auto& p = args<cudaMemsetAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemsetAsync_ptsz_v7000);
      set_memset(f, address(p.devPtr), p.count);
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemset2D_v3020):
    case RT(cudaMemset2D_ptds_v7000): {
      const auto& p = args<cudaMemset2D_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemset2D_ptds_v7000);
      set_memset(f, address(p.devPtr), std::uint64_t{p.width} * p.height);
      break;
    }
    case RT(cudaMemset2DAsync_v3020):
    case RT(cudaMemset2DAsync_ptsz_v7000): {
      const auto& p = args<cudaMemset2DAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemset2DAsync_ptsz_v7000);
      set_memset(f, address(p.devPtr), std::uint64_t{p.width} * p.height);
      set_async(f, p.stream);
      break;
    }
    case RT(cudaMemset3D_v3020):
    case RT(cudaMemset3D_ptds_v7000): {
      const auto& p = args<cudaMemset3D_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemset3D_ptds_v7000);
      set_memset(f, address(p.pitchedDevPtr.ptr),
                 std::uint64_t{p.extent.width} * p.extent.height * p.extent.depth);
      break;
    }
    case RT(cudaMemset3DAsync_v3020):
    case RT(cudaMemset3DAsync_ptsz_v7000): {
      const auto& p = args<cudaMemset3DAsync_v3020_params>(params);
      f.per_thread = cbid == RT(cudaMemset3DAsync_ptsz_v7000);
      set_memset(f, address(p.pitchedDevPtr.ptr),
                 std::uint64_t{p.extent.width} * p.extent.height * p.extent.depth);
      set_async(f, p.stream);
      break;
    }

    // --- launches (the kernel's name and pointer arguments come from the
    // driver launch nested in them, see api_callbacks.cpp)
    case RT(cudaLaunchKernel_v7000):
    case RT(cudaLaunchKernel_ptsz_v7000):
    case RT(cudaLaunchCooperativeKernel_v9000):
    case RT(cudaLaunchCooperativeKernel_ptsz_v9000): {
      // cudaLaunchCooperativeKernel has cudaLaunchKernel's parameter list.
      const auto& p = args<cudaLaunchKernel_v7000_params>(params);
      f.per_thread =
          cbid == RT(cudaLaunchKernel_ptsz_v7000) || cbid == RT(cudaLaunchCooperativeKernel_ptsz_v9000);
      set_stream(f, CallClass::launch, p.stream);
      set_dims(f, p.gridDim.x, p.gridDim.y, p.gridDim.z, p.blockDim.x, p.blockDim.y, p.blockDim.z);
      f.host_function = p.func;
      f.kernel_params = p.args;
      break;
    }
    case RT(cudaLaunchKernelExC_v11060):
    case RT(cudaLaunchKernelExC_ptsz_v11060): {
      const auto& p = args<cudaLaunchKernelExC_v11060_params>(params);
      f.per_thread = cbid == RT(cudaLaunchKernelExC_ptsz_v11060);
      f.cls = CallClass::launch;
      if (p.config != nullptr) {
        const cudaLaunchConfig_t& c = *p.config;
        set_stream(f, CallClass::launch, c.stream);
        set_dims(f, c.gridDim.x, c.gridDim.y, c.gridDim.z, c.blockDim.x, c.blockDim.y, c.blockDim.z);
      }
      f.host_function = p.func;
      f.kernel_params = p.args;
      break;
    }

    // --- events and synchronization
    case RT(cudaEventRecord_v3020):
    case RT(cudaEventRecord_ptsz_v7000): {
      const auto& p = args<cudaEventRecord_v3020_params>(params);
      f.per_thread = cbid == RT(cudaEventRecord_ptsz_v7000);
      set_event(f, CallClass::record, p.event);
      set_stream(f, CallClass::record, p.stream);
      break;
    }
    case RT(cudaEventRecordWithFlags_v11010):
    case RT(cudaEventRecordWithFlags_ptsz_v11010): {
      const auto& p = args<cudaEventRecordWithFlags_v11010_params>(params);
      f.per_thread = cbid == RT(cudaEventRecordWithFlags_ptsz_v11010);
      set_event(f, CallClass::record, p.event);
      set_stream(f, CallClass::record, p.stream);
      break;
    }
    case RT(cudaStreamWaitEvent_v3020):
    case RT(cudaStreamWaitEvent_ptsz_v7000): {
      const auto& p = args<cudaStreamWaitEvent_v3020_params>(params);
      f.per_thread = cbid == RT(cudaStreamWaitEvent_ptsz_v7000);
      set_event(f, CallClass::wait, p.event);
      set_stream(f, CallClass::wait, p.stream);
      break;
    }
    case RT(cudaStreamSynchronize_v3020):
    case RT(cudaStreamSynchronize_ptsz_v7000): {
      f.per_thread = cbid == RT(cudaStreamSynchronize_ptsz_v7000);
      set_stream(f, CallClass::stream_sync, args<cudaStreamSynchronize_v3020_params>(params).stream);
      break;
    }
    case RT(cudaEventSynchronize_v3020):
      set_event(f, CallClass::event_sync, args<cudaEventSynchronize_v3020_params>(params).event);
      break;
    case RT(cudaStreamQuery_v3020):
    case RT(cudaStreamQuery_ptsz_v7000): {
      // As cudaEventQuery: a ready answer orders the host after the stream's work.
      f.per_thread = cbid == RT(cudaStreamQuery_ptsz_v7000);
      set_stream(f, CallClass::other, args<cudaStreamQuery_v3020_params>(params).stream);
      break;
    }
    case RT(cudaEventQuery_v3020):
      // Not a synchronization (it may answer "not ready"), but a ready answer
      // orders what the host does next after the event's work: the event is kept.
      set_event(f, CallClass::other, args<cudaEventQuery_v3020_params>(params).event);
      break;

    // --- memory
    case RT(cudaMalloc_v3020): {
      const auto& p = args<cudaMalloc_v3020_params>(params);
      set_alloc(f, "device", p.devPtr, outputs, p.size);
      break;
    }
    case RT(cudaMallocPitch_v3020): {
      const auto& p = args<cudaMallocPitch_v3020_params>(params);
      const std::uint64_t pitch = outputs && p.pitch != nullptr ? *p.pitch : p.width;
      set_alloc(f, "device", p.devPtr, outputs, pitch * p.height);
      break;
    }
    case RT(cudaMallocManaged_v6000): {
      const auto& p = args<cudaMallocManaged_v6000_params>(params);
      set_alloc(f, "managed", p.devPtr, outputs, p.size);
      break;
    }
    case RT(cudaMallocHost_v3020): {
      const auto& p = args<cudaMallocHost_v3020_params>(params);
      set_alloc(f, "pinned", p.ptr, outputs, p.size);
      break;
    }
    case RT(cudaHostAlloc_v3020): {
      const auto& p = args<cudaHostAlloc_v3020_params>(params);
      set_alloc(f, "pinned", p.pHost, outputs, p.size);
      break;
    }
    case RT(cudaMallocAsync_v11020):
    case RT(cudaMallocAsync_ptsz_v11020): {
      const auto& p = args<cudaMallocAsync_v11020_params>(params);
      f.per_thread = cbid == RT(cudaMallocAsync_ptsz_v11020);
      set_alloc(f, "async", p.devPtr, outputs, p.size);
      set_stream(f, CallClass::alloc, p.hStream);
      break;
    }
    case RT(cudaMallocFromPoolAsync_v11020):
    case RT(cudaMallocFromPoolAsync_ptsz_v11020): {
      const auto& p = args<cudaMallocFromPoolAsync_v11020_params>(params);
      f.per_thread = cbid == RT(cudaMallocFromPoolAsync_ptsz_v11020);
      set_alloc(f, "async", p.ptr, outputs, p.size);
      set_stream(f, CallClass::alloc, p.stream);
      break;
    }
    case RT(cudaFree_v3020):
      set_free(f, "device", address(args<cudaFree_v3020_params>(params).devPtr));
      break;
    case RT(cudaFreeHost_v3020):
      set_free(f, "pinned", address(args<cudaFreeHost_v3020_params>(params).ptr));
      break;
    case RT(cudaFreeAsync_v11020):
    case RT(cudaFreeAsync_ptsz_v11020): {
      const auto& p = args<cudaFreeAsync_v11020_params>(params);
      f.per_thread = cbid == RT(cudaFreeAsync_ptsz_v11020);
      set_free(f, "async", address(p.devPtr));
      set_stream(f, CallClass::free, p.hStream);
      break;
    }
    case RT(cudaHostRegister_v4000): {
      const auto& p = args<cudaHostRegister_v4000_params>(params);
      f.cls = CallClass::host_register;
      f.ptr = address(p.ptr);
      f.bytes = p.size;
      break;
    }
    // --- managed memory in stream order
    case RT(cudaMemPrefetchAsync_v12020):
    case RT(cudaMemPrefetchAsync_ptsz_v12020): {
      const auto& p = args<cudaMemPrefetchAsync_v12020_params>(params);
      f.per_thread = cbid == RT(cudaMemPrefetchAsync_ptsz_v12020);
      set_prefetch(f, address(p.devPtr), p.count, location_name(p.location.type), p.stream);
      break;
    }
    case RT(cudaMemPrefetchBatchAsync_v13000):
    case RT(cudaMemPrefetchBatchAsync_ptsz_v13000): {
      const auto& p = args<cudaMemPrefetchBatchAsync_v13000_params>(params);
      f.per_thread = cbid == RT(cudaMemPrefetchBatchAsync_ptsz_v13000);
      const BatchExtent batch = batch_extent(p.dptrs, p.sizes, p.count);
      const bool located = p.prefetchLocs != nullptr && p.numPrefetchLocs > 0;
      set_prefetch(f, batch.first, batch.bytes, located ? location_name(p.prefetchLocs[0].type) : "",
                   p.stream);
      break;
    }
    case RT(cudaStreamAttachMemAsync_v6000):
    case RT(cudaStreamAttachMemAsync_ptsz_v7000): {
      const auto& p = args<cudaStreamAttachMemAsync_v6000_params>(params);
      f.per_thread = cbid == RT(cudaStreamAttachMemAsync_ptsz_v7000);
      set_attach(f, address(p.devPtr), p.length, p.flags, p.stream);
      break;
    }
    case RT(cudaHostUnregister_v4000):
      f.cls = CallClass::host_unregister;
      f.ptr = address(args<cudaHostUnregister_v4000_params>(params).ptr);
      break;

    // --- streams and events
    case RT(cudaStreamCreate_v3020): {
      const auto& p = args<cudaStreamCreate_v3020_params>(params);
      f.cls = CallClass::stream_create;
      if (outputs && p.pStream != nullptr) f.created_stream = *p.pStream;
      break;
    }
    case RT(cudaStreamCreateWithFlags_v5000): {
      const auto& p = args<cudaStreamCreateWithFlags_v5000_params>(params);
      f.cls = CallClass::stream_create;
      f.stream_flags = p.flags;
      if (outputs && p.pStream != nullptr) f.created_stream = *p.pStream;
      break;
    }
    case RT(cudaStreamCreateWithPriority_v5050): {
      const auto& p = args<cudaStreamCreateWithPriority_v5050_params>(params);
      f.cls = CallClass::stream_create;
      f.stream_flags = p.flags;
      f.priority = p.priority;
      if (outputs && p.pStream != nullptr) f.created_stream = *p.pStream;
      break;
    }
    case RT(cudaStreamDestroy_v3020):
      set_stream(f, CallClass::stream_destroy, args<RemovedStreamDestroyParams>(params).stream);
      break;
    case RT(cudaStreamDestroy_v5050):
      set_stream(f, CallClass::stream_destroy, args<cudaStreamDestroy_v5050_params>(params).stream);
      break;
    case RT(cudaEventCreate_v3020): {
      const auto& p = args<cudaEventCreate_v3020_params>(params);
      f.cls = CallClass::event_create;
      if (outputs && p.event != nullptr) f.event = address(*p.event);
      break;
    }
    case RT(cudaEventCreateWithFlags_v3020): {
      const auto& p = args<cudaEventCreateWithFlags_v3020_params>(params);
      f.cls = CallClass::event_create;
      if (outputs && p.event != nullptr) f.event = address(*p.event);
      break;
    }
    case RT(cudaEventDestroy_v3020):
      set_event(f, CallClass::event_destroy, args<cudaEventDestroy_v3020_params>(params).event);
      break;
    default: break;
  }
}

#undef RT

}  // namespace overlap::inject
