// CUDA graph structure records (see graphs.hpp).
#include "graphs.hpp"

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kernel_params.hpp"

namespace overlap::inject {

namespace {

/// More nodes than any graph has in practice; a larger one is cut (and says so).
constexpr std::size_t max_graph_nodes = std::size_t{1} << 20;

std::uint64_t node_id(CUgraphNode node) {
  std::uint64_t id = 0;
  if (node == nullptr || cuptiGetGraphNodeId(node, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

std::string_view node_kind(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host";
    case CU_GRAPH_NODE_TYPE_GRAPH: return "graph";
    case CU_GRAPH_NODE_TYPE_EMPTY: return "empty";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "wait_event";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "event_record";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: return "semaphore_signal";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return "semaphore_wait";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "mem_alloc";
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return "mem_free";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return "batch_mem_op";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
    default: return "unknown";
  }
}

/// Where one end of a 3-D copy lives.
std::uint64_t copy_end(CUmemorytype type, const void* host, CUdeviceptr device) {
  return type == CU_MEMORYTYPE_HOST ? reinterpret_cast<std::uintptr_t>(host)
                                    : static_cast<std::uint64_t>(device);
}

/// A node added by an explicit cudaGraphAdd*Node: its parameters, asked of the driver.
void describe_explicit_node(ThreadState& ts, CUgraphNode node, JsonLine& line) {
  const OwnDriverCalls own;
  CUgraphNodeType type{};
  if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) return;
  line.string("kind", node_kind(type));
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS params{};
      if (cuGraphKernelNodeGetParams(node, &params) != CUDA_SUCCESS) return;
      CUfunction function = params.func;
      if (function == nullptr && params.kern != nullptr &&
          cuKernelGetFunction(&function, params.kern) != CUDA_SUCCESS)
        function = nullptr;
      if (function == nullptr) return;
      ts.kernel.clear();
      read_kernel_name(function, ts.kernel);
      if (!ts.kernel.empty()) line.string("kernel", ts.kernel);
      if (params.kernelParams != nullptr) {
        ts.ptrs.clear();
        append_pointer_params(function, params.kernelParams, ts.ptrs);
        line.numbers("ptrs", ts.ptrs.params);
        if (!ts.ptrs.in_structs.empty()) line.numbers("sptrs", ts.ptrs.in_structs);
      }
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      CUDA_MEMCPY3D copy{};
      if (cuGraphMemcpyNodeGetParams(node, &copy) != CUDA_SUCCESS) return;
      // A copy to or from an array has no linear address on that side.
      if (copy.srcMemoryType == CU_MEMORYTYPE_ARRAY || copy.dstMemoryType == CU_MEMORYTYPE_ARRAY) return;
      line.number("dst", copy_end(copy.dstMemoryType, copy.dstHost, copy.dstDevice))
          .number("src", copy_end(copy.srcMemoryType, copy.srcHost, copy.srcDevice))
          .number("bytes", static_cast<std::uint64_t>(copy.WidthInBytes) *
                               std::max<std::size_t>(copy.Height, 1) * std::max<std::size_t>(copy.Depth, 1));
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS set{};
      if (cuGraphMemsetNodeGetParams(node, &set) != CUDA_SUCCESS) return;
      line.number("dst", static_cast<std::uint64_t>(set.dst))
          .number("bytes", static_cast<std::uint64_t>(set.elementSize) * set.width *
                               std::max<std::size_t>(set.height, 1));
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
      if (cuGraphMemAllocNodeGetParams(node, &alloc) != CUDA_SUCCESS) return;
      line.number("dst", static_cast<std::uint64_t>(alloc.dptr))
          .number("bytes", static_cast<std::uint64_t>(alloc.bytesize));
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE: {
      CUdeviceptr freed = 0;
      if (cuGraphMemFreeNodeGetParams(node, &freed) != CUDA_SUCCESS) return;
      line.number("dst", static_cast<std::uint64_t>(freed));
      break;
    }
    default: break;
  }
}

void write_node(ThreadState& ts, const ThreadState::NewGraphNode& n) {
  std::string& text = ts.line;
  text.clear();
  JsonLine line(text, "graph_node");
  line.number("node", n.id);
  if (n.corr != 0) line.number("corr", n.corr);
  if (!n.captured) describe_explicit_node(ts, n.node, line);
  line.finish();
  write_line(text);
}

/// The nodes and edges of `graph` and of the child graphs in it.
struct GraphShape {
  std::vector<std::uint64_t> nodes;
  std::vector<std::uint64_t> types;
  std::vector<std::uint64_t> parents;
  std::vector<std::uint64_t> edges;  // from, to, from, to, ...
  bool cut = false;
};

void walk(CUgraph graph, std::uint64_t parent, GraphShape& shape, int depth) {
  constexpr int max_depth = 16;  // child graphs nest; a cycle cannot, but stay bounded
  if (depth > max_depth) {
    shape.cut = true;
    return;
  }
  std::size_t count = 0;
  if (!driver_ok(cuGraphGetNodes(graph, nullptr, &count), "cuGraphGetNodes")) return;
  if (shape.nodes.size() + count > max_graph_nodes) {
    shape.cut = true;
    return;
  }
  std::vector<CUgraphNode> nodes(count);
  if (count > 0 && !driver_ok(cuGraphGetNodes(graph, nodes.data(), &count), "cuGraphGetNodes")) return;
  nodes.resize(count);
  std::vector<CUgraph> children;
  std::vector<std::uint64_t> child_ids;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    (void)cuGraphNodeGetType(node, &type);
    const std::uint64_t id = node_id(node);
    shape.nodes.push_back(id);
    shape.types.push_back(static_cast<std::uint64_t>(type));
    shape.parents.push_back(parent);
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = nullptr;
      if (cuGraphChildGraphNodeGetGraph(node, &child) == CUDA_SUCCESS && child != nullptr) {
        children.push_back(child);
        child_ids.push_back(id);
      }
    }
  }
  std::size_t edges = 0;
  if (driver_ok(cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges), "cuGraphGetEdges") && edges > 0) {
    std::vector<CUgraphNode> from(edges);
    std::vector<CUgraphNode> to(edges);
    if (driver_ok(cuGraphGetEdges(graph, from.data(), to.data(), nullptr, &edges), "cuGraphGetEdges")) {
      for (std::size_t i = 0; i < edges && i < from.size(); ++i) {
        shape.edges.push_back(node_id(from[i]));
        shape.edges.push_back(node_id(to[i]));
      }
    }
  }
  for (std::size_t i = 0; i < children.size(); ++i) walk(children[i], child_ids[i], shape, depth + 1);
}

void write_graph(ThreadState& ts, CUgraph graph, CUgraphExec exec) {
  GraphShape shape;
  {
    const OwnDriverCalls own;
    walk(graph, 0, shape, 0);
  }
  std::uint32_t exec_id = 0;
  std::uint32_t graph_id = 0;
  (void)cuptiGetGraphExecId(exec, &exec_id);
  (void)cuptiGetGraphId(graph, &graph_id);
  std::string& text = ts.line;
  text.clear();
  JsonLine line(text, "graph");
  line.number("exec", exec_id)
      .number("graph", graph_id)
      .numbers("nodes", shape.nodes)
      .numbers("types", shape.types)
      .numbers("parents", shape.parents)
      .numbers("edges", shape.edges);
  if (shape.cut) line.boolean("cut", true);
  line.finish();
  write_line(text);
}

}  // namespace

bool is_graph_resource(CUpti_CallbackId cbid) noexcept {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
    case CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS:
    case CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED: return true;
    default: return false;
  }
}

void on_graph_resource(ThreadState& ts, CUpti_CallbackId cbid, const CUpti_GraphData& data) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
      // Made inside the app's call; its parameters are read at that call's exit.
      const bool open = ts.depth > 0 && ts.open[0].domain != CUPTI_CB_DOMAIN_INVALID;
      ThreadState::NewGraphNode n;
      n.node = data.node;
      n.id = node_id(data.node);
      n.corr = open ? ts.open[0].corr : 0;
      switch (ts.outer_class) {
        case CallClass::copy:
        case CallClass::memset:
        case CallClass::launch:
        case CallClass::record:
        case CallClass::wait:
        case CallClass::alloc:
        case CallClass::free: n.captured = open; break;
        default: break;
      }
      if (!open) {
        n.captured = true;  // no call to describe it at: its id alone
        write_node(ts, n);
      } else {
        ts.new_graph_nodes.push_back(n);
      }
      break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
      const std::uint64_t clone = node_id(data.node);
      std::string& text = ts.line;
      text.clear();
      JsonLine(text, "graph_clone").number("node", clone).number("of", node_id(data.originalNode)).finish();
      write_line(text);
      if (ts.depth > 0) ts.cloned_graph_nodes.push_back(clone);
      break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
      if (ts.depth > 0) {
        ts.new_graph_execs.emplace_back(data.graph, data.graphExec);
      } else {
        write_graph(ts, data.graph, data.graphExec);
      }
      break;
    case CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS:
    case CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED: {
      std::string& text = ts.line;
      text.clear();
      JsonLine(text, "graph_node_set").number("node", node_id(data.node)).finish();
      write_line(text);
      break;
    }
    default: break;
  }
}

void write_pending_graph_records(ThreadState& ts) {
  if (ts.new_graph_nodes.empty() && ts.new_graph_execs.empty()) {
    ts.cloned_graph_nodes.clear();
    return;
  }
  // Moved out first: describing a node may re-enter nothing, but the lists
  // must be empty for the next call whatever happens here.
  std::vector<ThreadState::NewGraphNode> nodes;
  nodes.swap(ts.new_graph_nodes);
  std::vector<std::pair<CUgraph, CUgraphExec>> execs;
  execs.swap(ts.new_graph_execs);
  // A clone (instantiation makes one of every node) needs no record of its
  // own: its `graph_clone` names the node it copies. Asking the driver for
  // every clone's parameters would cost each instantiation as much again.
  std::vector<std::uint64_t> clones;
  clones.swap(ts.cloned_graph_nodes);
  std::sort(clones.begin(), clones.end());
  for (const ThreadState::NewGraphNode& n : nodes) {
    if (!std::binary_search(clones.begin(), clones.end(), n.id)) write_node(ts, n);
  }
  for (const auto& [graph, exec] : execs) write_graph(ts, graph, exec);
}

}  // namespace overlap::inject
