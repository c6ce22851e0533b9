// The CUPTI callback: runtime and driver API calls become `call` records;
// resource events announce contexts (for device records), module unloads and
// the nodes, clones and instantiations of CUDA graphs (graphs.hpp).
//
// An API call is seen twice, at entry and at exit. The entry of the app's
// call (the outermost on its thread) takes the caller's return addresses, if
// its class wants them, then the start time; its exit takes the end time and
// writes the record. The runtime calls the driver, and CUPTI reports those
// nested calls too: they are not the app's calls, so they are not written;
// when their correlation id differs from the app call's they get an `alias`
// record (device work may carry theirs), and the driver launch nested in a
// runtime launch is where the kernel's name and pointer arguments are read.
// The driver calls this library makes itself (pointer, stream and kernel
// queries) are marked with OwnDriverCalls and ignored here. Tracing starts
// inside cuInit, often in the middle of the app's first runtime call: that
// call's exit comes without an entry and is written with the tracing start
// as its start (see begin_inside_runtime_call).
#include <cuda_runtime_api.h>

#include <string>

#include "api_params.hpp"
#include "devices.hpp"
#include "graphs.hpp"
#include "kernel_params.hpp"
#include "printing_kernels.hpp"
#include "streams.hpp"
#include "trace_names.hpp"
#include "tracer.hpp"

namespace overlap::inject {

namespace {

bool is_driver_launch(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: return true;
    default: return false;
  }
}

CallFields describe(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, bool outputs) {
  CallFields fields;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    describe_runtime_call(cbid, params, outputs, fields);
  } else {
    describe_driver_call(cbid, params, outputs, fields);
  }
  return fields;
}

/// Where a pointer of a unified-addressing copy lives, asked of the driver.
MemorySide resolve(CopySide side, std::uint64_t pointer) {
  switch (side) {
    case CopySide::unknown: return MemorySide::unknown;
    case CopySide::host: return MemorySide::host;
    case CopySide::device: return MemorySide::device;
    case CopySide::by_pointer: break;
  }
  if (pointer == 0) return MemorySide::unknown;  // a null pointer is nobody's memory
  unsigned int type = 0;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE is written as an unsigned int
  CUresult result = CUDA_SUCCESS;
  {
    const OwnDriverCalls own;
    result = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer);
  }
  if (result == CUDA_SUCCESS) return type == CU_MEMORYTYPE_HOST ? MemorySide::host : MemorySide::device;
  if (result == CUDA_ERROR_INVALID_VALUE)
    return MemorySide::host;  // memory CUDA does not know: pageable host memory
  (void)driver_ok(result, "cuPointerGetAttribute(MEMORY_TYPE)");
  return MemorySide::unknown;
}

/// The kernel's name and pointer arguments, from a driver launch's parameters.
void take_launch_info(ThreadState& ts, const CallFields& fields, const char* symbol_name) {
  ts.launch_seen = true;
  if (symbol_name != nullptr) {
    ts.kernel.assign(symbol_name);
  } else {
    read_kernel_name(fields.function, ts.kernel);
  }
  ts.ptrs.clear();
  ts.has_ptrs = fields.function != nullptr && fields.kernel_params != nullptr;  // no ptrs in the `extra` form
  if (ts.has_ptrs) append_pointer_params(fields.function, fields.kernel_params, ts.ptrs);
}

void write_alias(ThreadState& ts, std::uint32_t corr, std::uint32_t of) {
  JsonLine(ts.line, "alias").number("corr", corr).number("of", of).finish();
  write_line(ts.line);
}

void push(ThreadState& ts, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::uint32_t corr) {
  if (ts.depth < static_cast<int>(ts.open.size()))
    ts.open[static_cast<std::size_t>(ts.depth)] = {corr, domain, cbid};
  ++ts.depth;
}

/// The open call standing for the app's call that was in flight when tracing began.
bool is_placeholder(const OpenCall& call) {
  return call.domain == CUPTI_CB_DOMAIN_INVALID;
}

void on_enter(Tracer& tracer, ThreadState& ts, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
              const CUpti_CallbackData& cb) {
  // The runtime makes no runtime calls of its own: one arriving over the
  // placeholder alone means that call is over (its exit went unseen).
  if (ts.depth == 1 && is_placeholder(ts.open[0]) && domain == CUPTI_CB_DOMAIN_RUNTIME_API) ts.depth = 0;
  if (ts.depth > 0) {  // made by the runtime (or driver) on behalf of the app's call
    const OpenCall& outer = ts.open[0];
    if (!is_placeholder(outer) && cb.correlationId != outer.corr && cb.correlationId != ts.last_alias) {
      write_alias(ts, cb.correlationId, outer.corr);
      ts.last_alias = cb.correlationId;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && outer.domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        ts.outer_class == CallClass::launch && is_driver_launch(cbid)) {
      take_launch_info(ts, describe(domain, cbid, cb.functionParams, false), cb.symbolName);
    }
    push(ts, domain, cbid, cb.correlationId);
    return;
  }
  const CallFields fields = describe(domain, cbid, cb.functionParams, false);
  ts.outer_class = fields.cls;
  ts.launch_seen = false;
  ts.has_ptrs = false;
  ts.last_alias = 0;
  ts.entry_stream.reset();
  ts.frames.count = 0;
  if (fields.cls == CallClass::stream_destroy)
    ts.entry_stream = stream_id(cb.context, fields.stream, fields.per_thread);
  // The stack walk comes before the start time, so it is not counted as the call's own time.
  if (tracer.callers && wants_caller(fields.cls)) capture_frames(ts.frames);
  ts.start = timestamp();
  push(ts, domain, cbid, cb.correlationId);
}

int call_status(CUpti_CallbackDomain domain, const CUpti_CallbackData& cb) {
  if (cb.functionReturnValue == nullptr) return 0;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return static_cast<int>(*static_cast<const cudaError_t*>(cb.functionReturnValue));
  return static_cast<int>(*static_cast<const CUresult*>(cb.functionReturnValue));
}

void write_class_fields(JsonLine& line, ThreadState& ts, const CallFields& f,
                        std::optional<std::uint32_t> stream, std::optional<std::uint32_t> created) {
  const auto put_stream = [&] {
    if (stream) line.number("stream", *stream);
  };
  switch (f.cls) {
    case CallClass::copy:
      line.number("dst", f.dst).number("src", f.src).number("bytes", f.bytes);
      line.string("kind", copy_kind_name(resolve(f.src_side, f.src), resolve(f.dst_side, f.dst)));
      put_stream();
      line.boolean("async", f.async);
      break;
    case CallClass::memset:
      line.number("dst", f.dst).number("bytes", f.bytes);
      put_stream();
      line.boolean("async", f.async);
      break;
    case CallClass::launch:
      put_stream();
      if (!ts.kernel.empty()) line.string("kernel", ts.kernel);
      if (f.has_dims) {
        line.triple("grid", f.grid[0], f.grid[1], f.grid[2])
            .triple("block", f.block[0], f.block[1], f.block[2]);
      }
      if (ts.has_ptrs) {
        line.numbers("ptrs", ts.ptrs.params);
        if (!ts.ptrs.in_structs.empty()) line.numbers("sptrs", ts.ptrs.in_structs);
      }
      break;
    case CallClass::record:
    case CallClass::wait:
      line.number("event", f.event);
      put_stream();
      break;
    case CallClass::stream_sync:
    case CallClass::stream_destroy: put_stream(); break;
    case CallClass::event_sync:
    case CallClass::event_create:
    case CallClass::event_destroy: line.number("event", f.event); break;
    case CallClass::alloc:
      if (f.ptr != 0) line.number("ptr", f.ptr);  // none when the allocation failed
      line.number("bytes", f.bytes).string("memory", f.memory);
      put_stream();
      break;
    case CallClass::free:
      line.number("ptr", f.ptr).string("memory", f.memory);
      put_stream();
      break;
    case CallClass::prefetch:
      line.number("ptr", f.ptr).number("bytes", f.bytes);
      if (!f.to.empty()) line.string("to", f.to);
      put_stream();
      break;
    case CallClass::attach:
      line.number("ptr", f.ptr).number("bytes", f.bytes).number("flags", f.attach_flags);
      put_stream();
      break;
    case CallClass::host_register: line.number("ptr", f.ptr).number("bytes", f.bytes); break;
    case CallClass::host_unregister: line.number("ptr", f.ptr); break;
    case CallClass::stream_create:
      if (created) line.number("stream", *created);
      break;
    case CallClass::device_sync: break;
    case CallClass::other:  // event and stream queries
      if (f.event != 0) line.number("event", f.event);
      put_stream();
      break;
  }
}

void write_call(Tracer& tracer, ThreadState& ts, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                const CUpti_CallbackData& cb) {
  std::uint64_t end = timestamp();
  write_queued_devices();  // announced by resource callbacks since the last call
  if (cb.context != nullptr) enable_migrations_once();

  const int status = call_status(domain, cb);
  const CallFields f = describe(domain, cbid, cb.functionParams, status == 0);
  // The context is read at exit: a call that initializes the runtime has none at entry.
  std::optional<std::uint32_t> stream;
  if (f.cls == CallClass::stream_destroy) {
    stream = ts.entry_stream;
  } else if (f.has_stream) {
    stream = stream_id(cb.context, f.stream, f.per_thread);
    if (stream) note_stream_used(*stream, f.stream, f.per_thread);
  }
  std::optional<std::uint32_t> created;
  if (f.cls == CallClass::stream_create && status == 0 && f.created_stream != nullptr) {
    created = stream_id(cb.context, f.created_stream, false);
  }
  if (f.cls == CallClass::launch && !ts.launch_seen) {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      take_launch_info(ts, f, cb.symbolName);  // a launch the app made through the driver (CuPy)
    } else {                                   // no driver launch was seen inside this runtime launch
      ts.kernel.assign(cb.symbolName != nullptr ? cb.symbolName : "");
      ts.ptrs.clear();
      ts.has_ptrs = status == 0 && append_runtime_pointer_params(f.host_function, f.kernel_params, ts.ptrs);
    }
  } else if (f.cls != CallClass::launch) {
    ts.kernel.clear();
  }
  const std::string* caller =
      tracer.callers && ts.frames.count > 0 ? tracer.callers->first_app_frame(ts.frames) : nullptr;

  // One clock, but never a record the converter must reject.
  const std::uint64_t start = ts.start != 0 ? ts.start : end;
  if (end < start) end = start;

  std::string& text = ts.line;
  text.clear();
  JsonLine line(text, "call");
  line.number("corr", cb.correlationId)
      .string("api", api_base_name(cb.functionName != nullptr ? cb.functionName : "unknown"))
      .string("layer", domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "rt" : "drv")
      .string("cls", class_name(f.cls))
      .number("tid", ts.tid)
      .number("start", start)
      .number("end", end)
      .number("status", status);
  if (caller != nullptr) line.string("caller", *caller);
  write_class_fields(line, ts, f, stream, created);
  line.finish();
  write_line(text);

  if (created) note_stream_created(*created, f.created_stream, f.stream_flags, f.priority);
}

/// The app's call that was in flight when tracing began, at its exit: its
/// start is unknown, the tracing start stands for it.
void write_call_begun_before_tracing(Tracer& tracer, ThreadState& ts, CUpti_CallbackDomain domain,
                                     CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  ts.depth = 0;
  ts.start = tracer.start_time;
  ts.frames.count = 0;
  ts.launch_seen = false;
  ts.has_ptrs = false;
  ts.entry_stream.reset();
  write_call(tracer, ts, domain, cbid, cb);
  write_pending_graph_records(ts);
}

void on_exit(Tracer& tracer, ThreadState& ts, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
             const CUpti_CallbackData& cb) {
  // A runtime call is always the app's; a driver exit without an entry is
  // cuInit's (it loaded this library) or one made by the runtime.
  const bool unmatched_runtime_exit = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (ts.depth == 0) {
    if (unmatched_runtime_exit) write_call_begun_before_tracing(tracer, ts, domain, cbid, cb);
    return;
  }
  if (ts.depth > static_cast<int>(ts.open.size())) {
    --ts.depth;  // too deep to be remembered; never the app's call
    return;
  }
  // Normally the innermost open call; if an exit went missing, the one that matches.
  int index = ts.depth - 1;
  while (index >= 0 && (ts.open[static_cast<std::size_t>(index)].corr != cb.correlationId ||
                        ts.open[static_cast<std::size_t>(index)].domain != domain)) {
    --index;
  }
  if (index < 0) {
    if (unmatched_runtime_exit && is_placeholder(ts.open[0]))
      write_call_begun_before_tracing(tracer, ts, domain, cbid, cb);
    return;
  }
  ts.depth = index;
  if (index == 0) {
    write_call(tracer, ts, domain, cbid, cb);
    write_pending_graph_records(ts);  // the graph nodes and instantiations the call made
  }
}

void on_resource(ThreadState& ts, CUpti_CallbackId cbid, const CUpti_ResourceData& data) {
  if (is_graph_resource(cbid)) {
    if (data.resourceDescriptor != nullptr)
      on_graph_resource(ts, cbid, *static_cast<const CUpti_GraphData*>(data.resourceDescriptor));
    return;
  }
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED: note_context_created(data.context); break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: note_context_destroyed(data.context); break;
    case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING: forget_kernel_layouts(); break;
    case CUPTI_CBID_RESOURCE_MODULE_LOADED:
      if (data.resourceDescriptor != nullptr)
        note_module_loaded(*static_cast<const CUpti_ModuleResourceData*>(data.resourceDescriptor));
      break;
    default: break;
  }
}

}  // namespace

void begin_inside_runtime_call() {
  ThreadState& ts = thread_state();
  ts.depth = 1;
  ts.open[0] = OpenCall{};  // corr 0, domain INVALID: the placeholder
  ts.outer_class = CallClass::other;
}

void CUPTIAPI on_api_callback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* data) {
  Tracer* current = tracer();
  if (current == nullptr || data == nullptr || current->writer.finished()) return;
  try {
    ThreadState& ts = thread_state();
    // This library's own driver calls are not the app's; but what they cause
    // is: cuFuncGetParamInfo on a kernel not yet loaded loads its module
    // (lazy loading), and that load's resource event is the only one it gets.
    const bool module_load = domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED;
    if (ts.own_driver_calls > 0 && !module_load) return;
    const RunningCallback running(*current);
    const CostTimer cost(*current, current->costs.api_ns, current->costs.api_callbacks);
    switch (domain) {
      case CUPTI_CB_DOMAIN_RUNTIME_API:
      case CUPTI_CB_DOMAIN_DRIVER_API: {
        const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
        if (cb.callbackSite == CUPTI_API_ENTER) {
          on_enter(*current, ts, domain, cbid, cb);
        } else {
          on_exit(*current, ts, domain, cbid, cb);
        }
        break;
      }
      case CUPTI_CB_DOMAIN_RESOURCE:
        on_resource(ts, cbid, *static_cast<const CUpti_ResourceData*>(data));
        break;
      default: break;
    }
  } catch (...) {
    current->writer.count_lost(1);  // out of memory: this record is lost, the app goes on
  }
}

}  // namespace overlap::inject
