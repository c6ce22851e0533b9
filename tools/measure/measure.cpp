// libovl_measure.so: measures the bytes each kernel launch reads and writes,
// with the Compute Sanitizer API, for `overlap audit --accesses measured`.
//
// The Compute Sanitizer API takes CUPTI's one callback subscriber, so it
// cannot run beside the tracer (libovl_inject.so) in one process: `overlap`
// runs the app twice, first preloaded with this library alone (the
// measuring run), then traced, and joins the two (src/trace/measured_run.cpp)
// by the order of launches of each kernel and of allocations of each size.
//
// Every module is patched as it loads so that each global-memory access of
// its kernels calls patches.cu, which merges it into the launch's
// AccessTable. A table is given to each launch at its start (zeroed on the
// launch's stream, ahead of the kernel; a graph's kernel nodes on the graph
// launch's stream) and read back once the launch is
// known to have finished: when the app synchronizes its stream or context,
// before a stream or context is destroyed, and at exit. Tables are reused;
// when too many launches are waiting to be read (OVERLAP_MEASURE_PENDING,
// default 2048, about 80 MiB of device memory), the oldest half are read at
// once, which waits for them: the measuring run is slower anyway, and the
// memory stays bounded whatever the app does.
//
// It writes OVERLAP_TRACE_DIR/accesses.PID.jsonl (docs/trace-format.md, under
// `accesses`): the app's allocations and frees, and each launch's
// kernel, address-like argument values (read from the launch call's
// argument array: the join anchors ranges to them) and intervals, all
// numbered in the order they happened.
#include <fcntl.h>
#include <sanitizer.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "access_intervals.hpp"
#include "access_table.hpp"
#include "generated_cuda_meta.h"
#include "generated_cuda_runtime_api_meta.h"
#include "param_layout.hpp"
#include "pointer_args.hpp"
#include "record_writer.hpp"

// The patches' fatbinary, linked in by patches_image.S.
extern "C" const unsigned char overlap_measure_patches[];

namespace overlap::measure {

namespace {

/// The patch functions and the instructions each is called before.
struct PatchPoint {
  Sanitizer_InstructionId instruction;
  const char* function;
};
constexpr PatchPoint patch_points[] = {
    {SANITIZER_INSTRUCTION_BLOCK_ENTER, "OverlapBlockEnter"},
    {SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "OverlapGlobalAccess"},
    {SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "OverlapMemcpyAsync"},
    {SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "OverlapBulkGlobalToShared"},
    {SANITIZER_INSTRUCTION_BULK_COPY_SHARED_TO_GLOBAL, "OverlapBulkSharedToGlobal"},
    {SANITIZER_INSTRUCTION_BULK_REDUCTION_SHARED_TO_GLOBAL, "OverlapBulkReductionToGlobal"},
};

std::size_t pending_limit() {
  const char* set =
      std::getenv("OVERLAP_MEASURE_PENDING");  // NOLINT(concurrency-mt-unsafe): read once, at start
  if (set == nullptr) return 2048;
  const long value = std::strtol(set, nullptr, 10);
  return value >= 2 ? static_cast<std::size_t>(value) : 2048;
}

/// A launch whose table has not been read yet.
struct PendingLaunch {
  CUcontext context = nullptr;
  Sanitizer_StreamHandle stream = nullptr;
  AccessTable* table = nullptr;  ///< device memory
  std::uint64_t seq = 0;
  std::string kernel;
  inject::PointerArgs args;  ///< its address-like argument values, which the join anchors ranges to
  bool graph = false;        ///< a kernel node of a graph launch
  /// A graph node's: the directory in which its grid finds `table`.
  GridDirectory* directory = nullptr;
  std::uint64_t grid = 0;  ///< a graph node's grid id
  unsigned entry = 0;      ///< and its entry's slot in `directory`
  /// A graph node not told apart from another node of its launch (no room
  /// in the directory, or accesses that found no entry): not measured.
  bool shared = false;
  /// A graph node whose grid never found its entry: not measured.
  bool unseen = false;
};

/// A graph launch whose kernel nodes are being set up.
struct GraphLaunch {
  CUgraphExec exec = nullptr;
  std::uint32_t id = 0;
  bool operator==(const GraphLaunch&) const = default;
};

/// The argument array of the launch call in progress on this thread, seen
/// at the call's entry (the runtime's, then the driver's it makes), for the
/// launch callback that comes inside it.
thread_local void** launch_arguments = nullptr;
/// Set while this library calls the driver itself (parameter layouts).
thread_local bool own_driver_calls = false;

/// The graph launch calls, at whose exit the measuring run waits for the
/// graph they launched (Measurer::on_callback).
constexpr std::pair<Sanitizer_CallbackDomain, Sanitizer_CallbackId> graph_launch_calls[] = {
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaGraphLaunch},
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaGraphLaunch_ptsz},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuGraphLaunch},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuGraphLaunch_ptsz},
};

bool is_graph_launch(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid) {
  return std::any_of(std::begin(graph_launch_calls), std::end(graph_launch_calls),
                     [&](const auto& call) { return call.first == domain && call.second == cbid; });
}

/// The first seq a graph launch call in progress on this thread may give its
/// kernel nodes (set at the outermost call's entry).
thread_local std::optional<std::uint64_t> graph_launch_from;

/// The runtime and driver launch calls whose argument arrays are read.
constexpr std::pair<Sanitizer_CallbackDomain, Sanitizer_CallbackId> launch_calls[] = {
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel},
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel_ptsz},
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchKernelExC},
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchKernelExC_ptsz},
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchCooperativeKernel},
    {SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchCooperativeKernel_ptsz},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernel},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx_ptsz},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchCooperativeKernel},
    {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchCooperativeKernel_ptsz},
};

/// The argument array of launch call `cbid` of `domain` with parameters `params`.
void** arguments_of(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* params) {
  if (domain == SANITIZER_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel:
        return static_cast<const cudaLaunchKernel_v7000_params*>(params)->args;
      case SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel_ptsz:
        return static_cast<const cudaLaunchKernel_ptsz_v7000_params*>(params)->args;
      case SANITIZER_CBID_RUNTIME_API_cudaLaunchKernelExC:
        return static_cast<const cudaLaunchKernelExC_v11060_params*>(params)->args;
      case SANITIZER_CBID_RUNTIME_API_cudaLaunchKernelExC_ptsz:
        return static_cast<const cudaLaunchKernelExC_ptsz_v11060_params*>(params)->args;
      case SANITIZER_CBID_RUNTIME_API_cudaLaunchCooperativeKernel:
        return static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(params)->args;
      case SANITIZER_CBID_RUNTIME_API_cudaLaunchCooperativeKernel_ptsz:
        return static_cast<const cudaLaunchCooperativeKernel_ptsz_v9000_params*>(params)->args;
      default: return nullptr;
    }
  }
  switch (cbid) {
    case SANITIZER_CBID_DRIVER_API_cuLaunchKernel:
      return static_cast<const cuLaunchKernel_params*>(params)->kernelParams;
    case SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz:
      return static_cast<const cuLaunchKernel_ptsz_params*>(params)->kernelParams;
    case SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx:
      return static_cast<const cuLaunchKernelEx_params*>(params)->kernelParams;
    case SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx_ptsz:
      return static_cast<const cuLaunchKernelEx_ptsz_params*>(params)->kernelParams;
    case SANITIZER_CBID_DRIVER_API_cuLaunchCooperativeKernel:
      return static_cast<const cuLaunchCooperativeKernel_params*>(params)->kernelParams;
    case SANITIZER_CBID_DRIVER_API_cuLaunchCooperativeKernel_ptsz:
      return static_cast<const cuLaunchCooperativeKernel_ptsz_params*>(params)->kernelParams;
    default: return nullptr;
  }
}

/// Which of the app's allocations a trace's allocation calls match
/// (measured_run.cpp): module globals and the runtime's own memory are none.
const char* allocation_kind(Sanitizer_CallbackId cbid, std::uint32_t flags) {
  constexpr std::uint32_t internal =
      SANITIZER_MEMORY_FLAG_MODULE | SANITIZER_MEMORY_FLAG_CG_RUNTIME | SANITIZER_MEMORY_FLAG_CNP;
  if ((flags & internal) != 0) return nullptr;
  switch (cbid) {
    case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC: return "device";
    case SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC: return "async";
    case SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC: return "host";
    default: return nullptr;
  }
}

class Measurer {
 public:
  /// Writes to the file descriptor `out` (unbuffered: a forked child that
  /// exits must not write the parent's buffered records a second time).
  explicit Measurer(int out)
      : out_(out), owner_(::getpid()), limit_(pending_limit()), scratch_(std::make_unique<AccessTable>()) {
    std::string line;
    inject::JsonLine(line, "measure").number("version", 1).number("pid", ::getpid()).finish();
    write(line);
  }

  void on_callback(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data) {
    if (domain == SANITIZER_CB_DOMAIN_DRIVER_API || domain == SANITIZER_CB_DOMAIN_RUNTIME_API) {
      if (own_driver_calls) return;
      const auto& call = *static_cast<const Sanitizer_CallbackData*>(data);
      if (is_graph_launch(domain, cbid)) {
        graph_launch(call.callbackSite == SANITIZER_API_ENTER);
        return;
      }
      // A driver launch made by a runtime launch passes the same arguments;
      // its exit ends the launch, whose callback came inside it.
      launch_arguments = call.callbackSite == SANITIZER_API_ENTER
                             ? arguments_of(domain, cbid, call.functionParams)
                             : nullptr;
    } else if (domain == SANITIZER_CB_DOMAIN_RESOURCE) {
      on_resource(cbid, data);
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_BEGIN) {
      const auto& launch = *static_cast<const Sanitizer_LaunchData*>(data);
      launch_begin(launch, launch.hStream, launch_arguments, nullptr);
    } else if (domain == SANITIZER_CB_DOMAIN_GRAPHS && cbid == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN) {
      graph_node_launch(*static_cast<const Sanitizer_GraphNodeLaunchData*>(data));
    } else if (domain == SANITIZER_CB_DOMAIN_GRAPHS && cbid == SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATED) {
      graph_exec_created(*static_cast<const Sanitizer_GraphExecData*>(data));
    } else if (domain == SANITIZER_CB_DOMAIN_SYNCHRONIZE) {
      const auto& sync = *static_cast<const Sanitizer_SynchronizeData*>(data);
      const std::lock_guard lock(mutex_);
      if (cbid == SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED) {
        read_where([&](const PendingLaunch& p) { return p.stream == sync.hStream; });
      } else if (cbid == SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED) {
        read_where([&](const PendingLaunch& p) { return p.context == sync.context; });
      }
    }
  }

  /// Reads every table still pending and ends the file.
  void finish() {
    const std::lock_guard lock(mutex_);
    if (finished_ || ::getpid() != owner_) return;  // a forked child leaves the parent's launches alone
    finished_ = true;
    read_where([](const PendingLaunch&) { return true; });
    std::string line;
    inject::JsonLine(line, "end")
        .number("launches", stats_.launches)
        .number("unmeasured", stats_.skipped)
        .number("read_early", stats_.read_early)
        .finish();
    write(line);
  }

 private:
  void on_resource(Sanitizer_CallbackId cbid, const void* data) {
    switch (cbid) {
      case SANITIZER_CBID_RESOURCE_MODULE_LOADED: {
        const auto& m = *static_cast<const Sanitizer_ResourceModuleData*>(data);
        patch(m.context, m.module);
        break;
      }
      // Kernels loaded lazily later are patched by the API itself, from the
      // instructions registered above: patching the module again then
      // leaves them unpatched (seen on an H100, CUDA 13.0).
      case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC:
      case SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC:
      case SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC: {
        const auto& m = *static_cast<const Sanitizer_ResourceMemoryData*>(data);
        const char* kind = allocation_kind(cbid, m.flags);
        if (kind == nullptr) break;
        const std::lock_guard lock(mutex_);
        std::string line;
        inject::JsonLine(line, "alloc")
            .number("seq", next_seq_++)
            .number("ptr", m.address)
            .number("bytes", m.size)
            .string("kind", kind)
            .finish();
        write(line);
        break;
      }
      case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE:
      case SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC:
      case SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE: {
        const auto& m = *static_cast<const Sanitizer_ResourceMemoryData*>(data);
        const std::lock_guard lock(mutex_);
        std::string line;
        inject::JsonLine(line, "free").number("seq", next_seq_++).number("ptr", m.address).finish();
        write(line);
        break;
      }
      case SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
        const std::lock_guard lock(mutex_);
        layouts_.clear();  // its functions' handles may be reused
        break;
      }
      case SANITIZER_CBID_RESOURCE_STREAM_DESTROY_STARTING: {
        const auto& st = *static_cast<const Sanitizer_ResourceStreamData*>(data);
        const std::lock_guard lock(mutex_);
        read_where([&](const PendingLaunch& p) { return p.stream == st.hStream; });
        break;
      }
      case SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
        const auto& c = *static_cast<const Sanitizer_ResourceContextData*>(data);
        const std::lock_guard lock(mutex_);
        read_where([&](const PendingLaunch& p) { return p.context == c.context; });
        for (AccessTable* t : spare_[c.context]) (void)sanitizerFree(c.context, t);
        spare_.erase(c.context);
        setup_streams_.erase(c.context);  // destroyed with the context
        std::erase_if(directories_, [&](const auto& d) {
          if (d.second.context != c.context) return false;
          (void)sanitizerFree(c.context, d.second.device);
          return true;
        });
        patched_contexts_.erase(c.context);
        break;
      }
      default: break;
    }
  }

  void patch(CUcontext context, CUmodule module) {
    const std::lock_guard lock(mutex_);
    if (!patched_contexts_.contains(context)) {
      if (!ok(sanitizerAddPatches(overlap_measure_patches, context), "sanitizerAddPatches")) return;
      patched_contexts_.insert(context);
    }
    for (const PatchPoint& point : patch_points) {
      (void)ok(sanitizerPatchInstructions(point.instruction, module, point.function),
               "sanitizerPatchInstructions");
    }
    (void)ok(sanitizerPatchModule(module), "sanitizerPatchModule");
  }

  // A graph launch call's entry and exit. A kernel's callback data is read
  // while its grids run, not when they are submitted: were the next graph
  // launch's nodes to hand their kernels new tables while this launch still
  // runs, its grids would write into those (seen on an H100: a long node of
  // the first of four back-to-back launches measured nothing). So the
  // measuring run waits for the kernel nodes each call launched as it
  // returns, and reads their tables (the app runs slower there, as it does
  // anyway). Only those: a launch into a capturing stream runs nothing, and
  // reading on that stream would break the capture.
  void graph_launch(bool entering) {
    const std::lock_guard lock(mutex_);
    if (entering) {
      if (!graph_launch_from) graph_launch_from = next_seq_;
      return;
    }
    if (!graph_launch_from) return;  // the runtime call's exit, after the driver call's
    const std::uint64_t from = *graph_launch_from;
    graph_launch_from.reset();
    read_where([&](const PendingLaunch& p) { return p.graph && p.seq >= from; });
  }

  // A kernel node of a graph being launched: measured as a launch, its
  // table read with the graph launch's stream (the node runs on one of the
  // driver's), its arguments the node's own. Graph uploads set nothing up:
  // the launch that follows does.
  //
  // What a node needs is written before its callback returns, on a stream
  // of this library's, not on the graph launch's stream ahead of the
  // graph: in a graph's first launch under lazy module loading, nodes ran
  // while the callbacks of later ones were still writing there (seen on an
  // H100: a node's accesses found no table, and others' tables were zeroed
  // after they ran).
  //
  // A launch's callback data does not tell a graph's nodes apart: the
  // nodes a graph launch runs on one stream all took the table set last
  // for that stream (seen on an H100 and an H200, CUDA 13.0). So the node's
  // kernel holds a directory (access_table.hpp) in which the node's grid
  // finds its table.
  void graph_node_launch(const Sanitizer_GraphNodeLaunchData& node) {
    if (node.isGraphUpload != 0) return;
    if (node.nodeType == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      // Its memory, so that the kernels' accesses to it are known. The
      // address stays the graph's while it lives: a free node's free is not
      // written (its callback may come before the nodes that run before it).
      const std::lock_guard lock(mutex_);
      std::string line;
      inject::JsonLine(line, "alloc")
          .number("seq", next_seq_++)
          .number("ptr", node.memAllocData.address)
          .number("bytes", node.memAllocData.size)
          .string("kind", "graph")
          .finish();
      write(line);
      return;
    }
    if (node.nodeType != CU_GRAPH_NODE_TYPE_KERNEL) return;
    CUDA_KERNEL_NODE_PARAMS params{};
    own_driver_calls = true;
    const bool known = cuGraphKernelNodeGetParams(node.node, &params) == CUDA_SUCCESS;
    own_driver_calls = false;
    const GraphLaunch graph{node.graphExec, node.launchId};
    launch_begin(node.launchData, node.launchData.hApiStream, known ? params.kernelParams : nullptr, &graph);
  }

  /// The start of a launch, or of a kernel node of `graph`.
  void launch_begin(const Sanitizer_LaunchData& launch, Sanitizer_StreamHandle stream, void** arguments,
                    const GraphLaunch* graph) {
    const std::lock_guard lock(mutex_);
    if (!exit_hook_) {
      // Registered now, after the CUDA runtime's own exit handler (which
      // came with its first call): handlers run in reverse, so the tables
      // are read before the runtime tears the context down.
      exit_hook_ = true;
      (void)std::atexit(&finish_at_exit);
    }
    const std::uint64_t seq = next_seq_++;
    if (!patched_contexts_.contains(launch.context)) {  // its patches could not load
      ++stats_.skipped;
      return;
    }
    if (pending_.size() >= limit_) {
      const auto oldest = static_cast<std::ptrdiff_t>(pending_.size() / 2);
      stats_.read_early += static_cast<std::uint64_t>(oldest);
      read_range(pending_.begin(), pending_.begin() + oldest);
    }
    AccessTable* table = take_table(launch.context);
    PendingLaunch pending{
        launch.context,  stream, table, seq, launch.functionName != nullptr ? launch.functionName : "", {},
        graph != nullptr};
    // A launch's table is zeroed on its stream, ahead of it; a graph node's
    // before the callback returns (graph_node_launch says why).
    const Sanitizer_StreamHandle setup = graph != nullptr ? setup_stream(launch.context) : stream;
    const auto link = [&] {
      return graph != nullptr
                 ? file_in_directory(launch, setup, *graph, pending) &&
                       ok(sanitizerStreamSynchronize(setup), "sanitizerStreamSynchronize")
                 : ok(sanitizerSetLaunchCallbackData(launch.hLaunch, launch.function, launch.hStream, table),
                      "sanitizerSetLaunchCallbackData");
    };
    if (table == nullptr || (graph != nullptr && setup == nullptr) ||
        !ok(sanitizerMemset(table, 0, sizeof(AccessTable), setup), "sanitizerMemset") || !link()) {
      if (table != nullptr) spare_[launch.context].push_back(table);
      ++stats_.skipped;
      return;
    }
    if (arguments != nullptr)
      inject::append_argument_values(layout_of(launch.function), arguments, pending.args);
    pending_.push_back(std::move(pending));
    ++stats_.launches;
  }

  /// A kernel's directory of its graph nodes' tables, and what the host
  /// wrote into it for the launch it serves now.
  struct Directory {
    GridDirectory* device = nullptr;
    CUcontext context = nullptr;
    GraphLaunch serving;
    std::vector<std::uint64_t> keys;  ///< the entries' keys, as written
  };

  /// This library's stream in `context`, for writes that must land before
  /// the callback returns (made the first time; null where that failed).
  Sanitizer_StreamHandle setup_stream(CUcontext context) {
    auto it = setup_streams_.find(context);
    if (it != setup_streams_.end()) return it->second;
    own_driver_calls = true;
    CUstream created = nullptr;
    Sanitizer_StreamHandle handle = nullptr;
    if (cuCtxPushCurrent(context) == CUDA_SUCCESS) {
      if (cuStreamCreate(&created, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) created = nullptr;
      CUcontext popped = nullptr;
      (void)cuCtxPopCurrent(&popped);
    }
    own_driver_calls = false;
    if (created == nullptr ||
        !ok(sanitizerGetStreamHandle(context, created, &handle), "sanitizerGetStreamHandle"))
      return nullptr;
    setup_streams_.emplace(context, handle);
    return handle;
  }

  /// The directory of `function` (of `context`), made and handed to the
  /// kernel the first time (zeroed on `stream`, which the caller
  /// synchronizes); null where that failed.
  Directory* directory_of(CUfunction function, CUcontext context, Sanitizer_StreamHandle stream) {
    auto [it, created] = directories_.try_emplace(function);
    if (!created) return &it->second;
    void* memory = nullptr;
    // The kernel holds the directory for good, so when the driver reads a
    // kernel's data does not matter.
    if (!ok(sanitizerAlloc(context, &memory, sizeof(GridDirectory)), "sanitizerAlloc") ||
        !ok(sanitizerMemset(memory, 0, sizeof(GridDirectory), stream), "sanitizerMemset") ||
        !ok(sanitizerSetCallbackData(function, memory), "sanitizerSetCallbackData")) {
      if (memory != nullptr) (void)sanitizerFree(context, memory);
      directories_.erase(it);
      return nullptr;
    }
    Directory& d = it->second;
    d.device = static_cast<GridDirectory*>(memory);
    d.context = context;
    d.keys.assign(directory_slots, 0);
    return &d;
  }

  // A graph being instantiated: its kernels get their directories now,
  // before any of its launches, so that no node can run with the data its
  // kernel had before.
  void graph_exec_created(const Sanitizer_GraphExecData& exec) {
    if (exec.isDeviceLaunch != 0 || exec.graph == nullptr) return;
    CUcontext context = nullptr;
    own_driver_calls = true;
    std::vector<CUfunction> kernels;
    kernels_of(exec.graph, kernels, 0);
    const bool current = cuCtxGetCurrent(&context) == CUDA_SUCCESS && context != nullptr;
    own_driver_calls = false;
    if (!current) return;
    const std::lock_guard lock(mutex_);
    if (!patched_contexts_.contains(context)) return;
    const Sanitizer_StreamHandle setup = setup_stream(context);
    if (setup == nullptr) return;
    for (CUfunction f : kernels) (void)directory_of(f, context, setup);
    (void)ok(sanitizerStreamSynchronize(setup), "sanitizerStreamSynchronize");
  }

  /// The kernels of `graph`'s kernel nodes, child graphs' included.
  static void kernels_of(CUgraph graph, std::vector<CUfunction>& out, int depth) {
    std::size_t count = 0;
    if (depth > 8 || cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS || count == 0) return;
    std::vector<CUgraphNode> nodes(count);
    if (cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return;
    nodes.resize(count);
    for (CUgraphNode node : nodes) {
      CUgraphNodeType type{};
      if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) continue;
      if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
        CUDA_KERNEL_NODE_PARAMS params{};
        if (cuGraphKernelNodeGetParams(node, &params) == CUDA_SUCCESS && params.func != nullptr &&
            std::find(out.begin(), out.end(), params.func) == out.end())
          out.push_back(params.func);
      } else if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
        CUgraph child = nullptr;
        if (cuGraphChildGraphNodeGetGraph(node, &child) == CUDA_SUCCESS) kernels_of(child, out, depth + 1);
      }
    }
  }

  /// Files `pending`'s table in its kernel's directory under the node's
  /// grid id, on `stream` ahead of the graph; false where the directory
  /// could not be set up (the node is then not measured). A directory full
  /// of this launch's nodes leaves the node out, marked `shared`.
  bool file_in_directory(const Sanitizer_LaunchData& launch, Sanitizer_StreamHandle stream,
                         const GraphLaunch& graph, PendingLaunch& pending) {
    Directory* found = directory_of(launch.function, launch.context, stream);
    if (found == nullptr) return false;
    Directory& d = *found;
    if (!(d.serving == graph)) {
      // A new launch: the nodes of the one before are read first (their
      // tables and what went unmatched), then the directory is emptied.
      read_where([&](const PendingLaunch& p) { return p.directory == d.device; });
      std::uint32_t head[2] = {0, kind_grid_directory};  // staged as the call returns
      if (!ok(sanitizerMemset(d.device, 0, sizeof(GridDirectory), stream), "sanitizerMemset") ||
          !ok(sanitizerMemcpyHostToDeviceAsync(d.device, head, sizeof(head), stream),
              "sanitizerMemcpyHostToDeviceAsync")) {
        d.serving = {};
        return false;
      }
      d.serving = graph;
      std::fill(d.keys.begin(), d.keys.end(), 0);
    }
    pending.directory = d.device;
    pending.grid = launch.gridId;
    const std::uint64_t key = launch.gridId + 1U;
    const unsigned first = first_slot(key, directory_slots);
    for (unsigned probe = 0; probe < directory_slots; ++probe) {
      const unsigned at = (first + probe) & (directory_slots - 1U);
      if (d.keys[at] != 0) continue;
      d.keys[at] = key;
      pending.entry = at;
      GridEntry entry{key, reinterpret_cast<std::uint64_t>(pending.table), 0};  // staged as the call returns
      return ok(sanitizerMemcpyHostToDeviceAsync(&d.device->entries[at], &entry, sizeof(entry), stream),
                "sanitizerMemcpyHostToDeviceAsync");
    }
    pending.shared = true;  // its accesses land in `unmatched`, which marks the others too
    return true;
  }

  /// The parameter sizes of `function`, asked of the driver once.
  const std::vector<std::uint32_t>& layout_of(CUfunction function) {
    auto it = layouts_.find(function);
    if (it == layouts_.end()) {
      own_driver_calls = true;
      CUresult failure = CUDA_SUCCESS;
      it = layouts_.emplace(function, inject::read_param_layout(function, failure)).first;
      own_driver_calls = false;
    }
    return it->second;
  }

  AccessTable* take_table(CUcontext context) {
    auto& spare = spare_[context];
    if (!spare.empty()) {
      AccessTable* t = spare.back();
      spare.pop_back();
      return t;
    }
    void* memory = nullptr;
    if (!ok(sanitizerAlloc(context, &memory, sizeof(AccessTable)), "sanitizerAlloc")) return nullptr;
    return static_cast<AccessTable*>(memory);
  }

  /// Reads the tables of the pending launches `select` picks, in launch order.
  template <typename Select>
  void read_where(Select select) {
    const auto split = std::stable_partition(pending_.begin(), pending_.end(),
                                             [&](const PendingLaunch& p) { return select(p); });
    read_range(pending_.begin(), split);
  }

  /// Reads the tables of pending_[first, last) (waiting for their launches),
  /// writes their records and removes them from pending_.
  void read_range(std::vector<PendingLaunch>::iterator first, std::vector<PendingLaunch>::iterator last) {
    std::string line;
    // Per directory: whether every access found its grid, and which entries were found.
    std::unordered_map<GridDirectory*, std::pair<bool, std::vector<GridEntry>>> directories;
    for (auto it = first; it != last; ++it) {
      if (it->directory != nullptr) {
        auto [d, unread] = directories.try_emplace(it->directory);
        if (unread) d->second = read_directory(*it, first, last, line);
        it->shared = it->shared || !d->second.first;
        it->unseen = !it->shared && (d->second.second.empty() || d->second.second[it->entry].seen == 0);
      }
      if (ok(sanitizerMemcpyDeviceToHost(scratch_.get(), it->table, sizeof(AccessTable), it->stream),
             "sanitizerMemcpyDeviceToHost")) {
        const bool measured = !it->shared && !it->unseen;
        append_launch_record(line, it->seq, it->kernel, measured ? read_table(*scratch_) : LaunchAccesses{},
                             it->args,
                             !it->graph   ? ""
                             : it->shared ? "shared"
                             : it->unseen ? "unseen"
                                          : "measured");
      }
      spare_[it->context].push_back(it->table);
    }
    pending_.erase(first, last);
    write(line);
  }

  /// Reads `node`'s directory: whether every access of the nodes filed
  /// there found its grid's table, and the entries (empty where they could
  /// not be read). Where some grid found no entry, or some node's grid never
  /// found its own, an `unmatched` record names the grids the device ran
  /// without an entry, those the host filed (the nodes among [first, last)
  /// are all that were) and those never found, for whoever looks into it.
  std::pair<bool, std::vector<GridEntry>> read_directory(const PendingLaunch& node,
                                                         std::vector<PendingLaunch>::iterator first,
                                                         std::vector<PendingLaunch>::iterator last,
                                                         std::string& line) {
    std::uint64_t keys[unmatched_grid_slots] = {};
    std::vector<GridEntry> entries(directory_slots);
    if (!ok(sanitizerMemcpyDeviceToHost(keys, node.directory->unmatched_grids, sizeof(keys), node.stream),
            "sanitizerMemcpyDeviceToHost") ||
        !ok(sanitizerMemcpyDeviceToHost(entries.data(), node.directory->entries,
                                        sizeof(GridEntry) * directory_slots, node.stream),
            "sanitizerMemcpyDeviceToHost"))
      return {false, {}};
    std::vector<std::uint64_t> ran;
    for (const std::uint64_t key : keys) {
      if (key != 0) ran.push_back(key - 1U);
    }
    std::vector<std::uint64_t> filed;
    std::vector<std::uint64_t> unseen;
    for (auto it = first; it != last; ++it) {
      if (it->directory != node.directory) continue;
      filed.push_back(it->grid);
      if (entries[it->entry].seen == 0) unseen.push_back(it->grid);
    }
    if (!ran.empty() || !unseen.empty()) {
      inject::JsonLine(line, "unmatched")
          .string("kernel", node.kernel)
          .numbers("grids", ran)
          .numbers("filed", filed)
          .numbers("unseen", unseen)
          .finish();
    }
    return {ran.empty(), std::move(entries)};
  }

  bool ok(SanitizerResult result, const char* what) {
    if (result == SANITIZER_SUCCESS) return true;
    const char* text = nullptr;
    if (sanitizerGetResultString(result, &text) != SANITIZER_SUCCESS || text == nullptr)
      text = "unknown error";
    std::string line;
    inject::JsonLine(line, "error").string("message", std::string(what) + " failed: " + text).finish();
    write(line);
    return false;
  }

  void write(const std::string& lines) const {
    // A forked child (CUDA is not usable there) writes nothing into the parent's file.
    if (lines.empty() || ::getpid() != owner_) return;
    for (std::size_t at = 0; at < lines.size();) {
      const ssize_t n = ::write(out_, lines.data() + at, lines.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a full disk: the file ends early, and the join uses what it has
      at += static_cast<std::size_t>(n);
    }
  }

  static void finish_at_exit();

  std::mutex mutex_;
  int out_;
  pid_t owner_;
  std::size_t limit_;
  std::unique_ptr<AccessTable> scratch_;  ///< the host copy of the table being read
  std::unordered_set<CUcontext> patched_contexts_;
  std::unordered_map<CUcontext, std::vector<AccessTable*>> spare_;
  std::unordered_map<CUfunction, std::vector<std::uint32_t>> layouts_;  // dropped with their modules
  std::vector<PendingLaunch> pending_;
  std::unordered_map<CUfunction, Directory> directories_;  ///< of the kernels that ran as graph nodes
  std::unordered_map<CUcontext, Sanitizer_StreamHandle> setup_streams_;
  std::uint64_t next_seq_ = 0;
  bool exit_hook_ = false;
  bool finished_ = false;
  struct Stats {
    std::uint64_t launches = 0, skipped = 0, read_early = 0;
  } stats_;
};

Measurer* measurer = nullptr;  // never deleted: callbacks may come until the process is gone

void Measurer::finish_at_exit() {
  if (measurer != nullptr) measurer->finish();
}

void SANITIZERAPI on_callback(void* userdata, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid,
                              const void* data) {
  static_cast<Measurer*>(userdata)->on_callback(domain, cbid, data);
}

/// Preloaded with OVERLAP_ACCESSES=measured, subscribes to the Compute
/// Sanitizer API before the app's first CUDA call and opens
/// OVERLAP_TRACE_DIR/accesses.PID.jsonl. Failures leave one line on stderr
/// and the app running unmeasured (`overlap` then finds no file).
__attribute__((constructor)) void start_when_preloaded() {
  // NOLINTBEGIN(concurrency-mt-unsafe): read once, at load, before the app's threads
  const char* mode = std::getenv("OVERLAP_ACCESSES");
  const char* dir = std::getenv("OVERLAP_TRACE_DIR");
  // NOLINTEND(concurrency-mt-unsafe)
  if (mode == nullptr || std::string_view(mode) != "measured" || dir == nullptr) return;
  const std::string path = std::string(dir) + "/accesses." + std::to_string(::getpid()) + ".jsonl";
  const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    (void)std::fprintf(stderr, "overlap: cannot create %s; accesses are not measured\n", path.c_str());
    return;
  }
  auto* m = new Measurer(out);
  Sanitizer_SubscriberHandle subscriber = nullptr;
  SanitizerResult r = sanitizerSubscribe(&subscriber, &on_callback, m);
  for (const auto domain :
       {SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CB_DOMAIN_SYNCHRONIZE}) {
    if (r == SANITIZER_SUCCESS) r = sanitizerEnableDomain(1, subscriber, domain);
  }
  for (const auto& [domain, cbid] : launch_calls) {
    if (r == SANITIZER_SUCCESS) r = sanitizerEnableCallback(1, subscriber, domain, cbid);
  }
  for (const auto& [domain, cbid] : graph_launch_calls) {
    if (r == SANITIZER_SUCCESS) r = sanitizerEnableCallback(1, subscriber, domain, cbid);
  }
  for (const auto cbid : {SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN, SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATED}) {
    if (r == SANITIZER_SUCCESS) r = sanitizerEnableCallback(1, subscriber, SANITIZER_CB_DOMAIN_GRAPHS, cbid);
  }
  if (r != SANITIZER_SUCCESS) {
    const char* text = nullptr;
    if (sanitizerGetResultString(r, &text) != SANITIZER_SUCCESS || text == nullptr) text = "unknown error";
    (void)std::fprintf(
        stderr, "overlap: the Compute Sanitizer API did not start (%s); accesses are not measured\n", text);
    if (subscriber != nullptr) (void)sanitizerUnsubscribe(subscriber);
    (void)::close(out);
    (void)std::remove(path.c_str());
    delete m;
    return;
  }
  measurer = m;
}

}  // namespace

}  // namespace overlap::measure
