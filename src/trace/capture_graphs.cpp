// The capture pass for CUDA graphs (see capture_graphs.hpp).
#include "capture_graphs.hpp"

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace overlap::trace::detail {

namespace {

/// Clones of clones followed at most (instantiation clones once, cudaGraphClone again).
constexpr int max_clone_hops = 8;

bool begins_capture(const std::string& api) {
  return api.starts_with("cudaStreamBeginCapture") || api.starts_with("cuStreamBeginCapture");
}

bool ends_capture(const std::string& api) {
  return api == "cudaStreamEndCapture" || api == "cuStreamEndCapture";
}

// Calls that, on a capturing stream, become graph nodes instead of work.
bool capturable(const Call& c) {
  switch (c.cls) {
    case call_class::copy:
    case call_class::memset: return c.async;
    case call_class::launch:
    case call_class::record:
    case call_class::wait: return true;
    case call_class::alloc:
    case call_class::free: return c.memory == "async";
    case call_class::prefetch:
    case call_class::attach: return true;
    default: return false;
  }
}

// What identifies a graph across its launches: the work it ran, whatever
// the driver's streams for its branches were called this time.
using WorkKey = std::tuple<int, std::string, std::uint64_t, std::string>;

std::vector<WorkKey> signature(const RawTrace& trace, const std::vector<std::size_t>& work) {
  std::vector<WorkKey> keys;
  keys.reserve(work.size());
  for (const std::size_t w : work) {
    const DeviceWork& d = trace.work[w];
    keys.emplace_back(static_cast<int>(d.kind), d.name, d.bytes, d.copy_kind);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// The nodes and edges of every instantiated graph in a trace, child graphs
// flattened into their parents.
class GraphStructure {
 public:
  explicit GraphStructure(const RawTrace& trace) : trace_(trace) {
    for (std::size_t gi = 0; gi < trace.graphs.size(); ++gi) {
      const GraphRecord& g = trace.graphs[gi];
      // Nodes that order the graph with work outside it (event record and
      // wait nodes, external semaphores, memory operations, conditional
      // bodies) make that order unknown here.
      const bool outside = std::any_of(g.kinds.begin(), g.kinds.end(), [](const std::string& kind) {
        return kind == "wait_event" || kind == "event_record" || kind.starts_with("semaphore") ||
               kind == "batch_mem_op" || kind == "conditional" || kind == "unknown";
      });
      for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        Node& n = nodes_[g.nodes[i]];
        graph_of_.try_emplace(g.nodes[i], gi);
        n.parent = g.parents[i];
        n.child_graph = g.kinds[i] == "graph";
        n.ordered_outside = n.ordered_outside || outside;
        if (n.parent != 0) nodes_[n.parent].children.push_back(g.nodes[i]);
      }
      for (const auto& [from, to] : g.edges) {
        nodes_[to].in.push_back(from);
        nodes_[from].has_out = true;
      }
    }
  }

  [[nodiscard]] bool empty() const { return nodes_.empty(); }

  /// The node a device record's `node` stands for in the structure: itself,
  /// or the node it was cloned from (instantiation clones every node).
  [[nodiscard]] std::optional<std::uint64_t> resolve(std::uint64_t id) const {
    for (int hops = 0; id != 0 && hops < max_clone_hops; ++hops) {
      if (nodes_.contains(id)) return id;
      const auto of = trace_.node_clones.find(id);
      if (of == trace_.node_clones.end()) break;
      id = of->second;
    }
    return std::nullopt;
  }

  /// The graph record (index into trace.graphs) node `id` (resolved) was
  /// first written in.
  [[nodiscard]] std::optional<std::size_t> graph_of(std::uint64_t id) const {
    const auto it = graph_of_.find(id);
    if (it == graph_of_.end()) return std::nullopt;
    return it->second;
  }

  /// Node `id` (resolved) belongs to a graph with nodes that order it with
  /// work outside it (GraphStructure's constructor).
  [[nodiscard]] bool ordered_outside(std::uint64_t id) const {
    const auto it = nodes_.find(id);
    return it != nodes_.end() && it->second.ordered_outside;
  }

  /// How node `id` was made (made_node).
  [[nodiscard]] const GraphNodeRecord* made(std::uint64_t id) const { return made_node(trace_, id); }

  /// The nodes `id` runs after, directly: its edges' sources (a child-graph
  /// node standing for the last nodes of its graph), or, for the first nodes
  /// of a child graph, what the child-graph node runs after. Each node is
  /// expanded once per call, so a hostile trace's shapes (a node in several
  /// child graphs, parents in a cycle) cost no more than the graph's size.
  void predecessors(std::uint64_t id, std::vector<std::uint64_t>& out) const {
    // (node, true): the node itself, or its child graph's last nodes;
    // (node, false): what the node runs after.
    std::vector<std::pair<std::uint64_t, bool>> todo{{id, false}};
    std::unordered_set<std::uint64_t> runs_after_done;
    std::unordered_set<std::uint64_t> last_done;
    while (!todo.empty()) {
      const auto [n, itself] = todo.back();
      todo.pop_back();
      const auto it = nodes_.find(n);
      if (it == nodes_.end()) continue;
      const Node& node = it->second;
      if (itself) {
        if (!node.child_graph) {
          out.push_back(n);
          continue;
        }
        if (!last_done.insert(n).second) continue;
        bool any = false;
        for (const std::uint64_t c : node.children) {
          const auto child = nodes_.find(c);
          if (child != nodes_.end() && !child->second.has_out) {
            todo.emplace_back(c, true);
            any = true;
          }
        }
        if (!any) todo.emplace_back(n, false);  // an empty child graph passes its own order on
        continue;
      }
      if (!runs_after_done.insert(n).second) continue;
      if (node.in.empty()) {
        if (node.parent != 0) todo.emplace_back(node.parent, false);
        continue;
      }
      for (const std::uint64_t from : node.in) todo.emplace_back(from, true);
    }
  }

 private:
  struct Node {
    std::uint64_t parent = 0;
    bool child_graph = false;
    bool has_out = false;
    bool ordered_outside = false;
    std::vector<std::uint64_t> in;        // edges' sources
    std::vector<std::uint64_t> children;  // a child-graph node's nodes
  };

  const RawTrace& trace_;
  std::unordered_map<std::uint64_t, Node> nodes_;
  std::unordered_map<std::uint64_t, std::size_t> graph_of_;  // node -> its graph record
};

// Walks the graph backwards from node `id` (excluded) and collects the
// positions of the first records met on each path (`position`: resolved node
// -> position in the launch's work); nodes without a record are walked
// through, and `through` is told of each.
// `scratch` is the walk's own state, kept between calls so that a launch's
// walks reuse one allocation.
struct WalkScratch {
  std::vector<std::uint64_t> stack;
  std::unordered_set<std::uint64_t> seen;
};

template <typename Through>
void nearest_records(const GraphStructure& structure, std::uint64_t id,
                     const std::unordered_map<std::uint64_t, std::size_t>& position, WalkScratch& scratch,
                     std::vector<std::size_t>& out, Through&& through) {
  auto& [stack, seen] = scratch;
  stack.clear();
  seen.clear();
  structure.predecessors(id, stack);
  while (!stack.empty()) {
    const std::uint64_t p = stack.back();
    stack.pop_back();
    if (!seen.insert(p).second) continue;
    if (const auto at = position.find(p); at != position.end()) {
      out.push_back(at->second);
      continue;
    }
    through(p);
    structure.predecessors(p, stack);
  }
  std::sort(out.begin(), out.end());
}

// A memory node's address and size, from its own parameters or the
// captured cudaMallocAsync / cudaFreeAsync that made it; empty if unknown.
std::optional<GraphMemoryNode> memory_node(const GraphNodeRecord* made, bool free, const RawTrace& trace,
                                           const std::unordered_map<std::uint64_t, std::size_t>& call_of) {
  if (made == nullptr) return std::nullopt;
  GraphMemoryNode m;
  m.free = free;
  if (!made->kind.empty()) {
    m.ptr = made->dst;
    m.bytes = made->bytes;
  } else if (const auto it = call_of.find(made->corr); it != call_of.end()) {
    const Call& c = trace.calls[it->second];
    if (c.cls != (free ? call_class::free : call_class::alloc)) return std::nullopt;
    m.ptr = c.ptr;
    m.bytes = c.bytes;
  }
  if (m.ptr == 0 || (!free && m.bytes == 0)) return std::nullopt;
  return m;
}

// The memory nodes of the graph a launch's records belong to, with the
// addresses the trace gives them.
std::vector<std::pair<std::uint64_t, GraphMemoryNode>> memory_nodes_of(
    const RawTrace& trace, const GraphStructure& structure, const std::vector<std::size_t>& work,
    const std::unordered_map<std::uint64_t, std::size_t>& call_of) {
  std::vector<std::pair<std::uint64_t, GraphMemoryNode>> memory;
  std::optional<std::size_t> graph;
  for (const std::size_t w : work) {
    if (const auto id = structure.resolve(trace.work[w].node)) {
      graph = structure.graph_of(*id);
      break;
    }
  }
  if (!graph) return memory;
  const GraphRecord& g = trace.graphs[*graph];
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const bool alloc = g.kinds[i] == "mem_alloc";
    if (!alloc && g.kinds[i] != "mem_free") continue;
    if (auto m = memory_node(structure.made(g.nodes[i]), !alloc, trace, call_of))
      memory.emplace_back(g.nodes[i], std::move(*m));
  }
  return memory;
}

// For each record of a launch (in `work`, start order), the positions of
// the records it waits for by the graph's edges: a backward walk from its
// node that stops at the first node with a record of this launch. Only
// earlier positions are kept: a predecessor ends before its successor
// starts, so a later one is a tie of zero-length records, which orders
// nothing. The graph's memory nodes (`memory`, by node id) learn the
// records they run after and before on the way.
std::optional<std::vector<std::vector<std::size_t>>> record_order(
    const RawTrace& trace, const GraphStructure& structure, const std::vector<std::size_t>& work,
    std::vector<std::pair<std::uint64_t, GraphMemoryNode>>& memory) {
  std::unordered_map<std::uint64_t, std::size_t> position;  // resolved node -> position in work
  std::vector<std::uint64_t> node(work.size(), 0);
  for (std::size_t k = 0; k < work.size(); ++k) {
    const auto id = structure.resolve(trace.work[work[k]].node);
    if (!id) return std::nullopt;  // a record outside the known structure: the old rule stands
    node[k] = *id;
    position[*id] = k;
  }
  std::unordered_map<std::uint64_t, std::size_t> memory_at;  // node -> index in memory
  for (std::size_t i = 0; i < memory.size(); ++i) memory_at.emplace(memory[i].first, i);
  std::vector<std::vector<std::size_t>> after(work.size());
  WalkScratch scratch;
  for (std::size_t k = 0; k < work.size(); ++k) {
    nearest_records(structure, node[k], position, scratch, after[k], [&](std::uint64_t through) {
      if (const auto m = memory_at.find(through); m != memory_at.end())
        memory[m->second].second.before.push_back(k);
    });
    after[k].erase(std::remove_if(after[k].begin(), after[k].end(), [k](std::size_t p) { return p >= k; }),
                   after[k].end());
  }
  for (auto& [id, m] : memory)
    nearest_records(structure, id, position, scratch, m.after, [](std::uint64_t) {});
  return after;
}

}  // namespace

const GraphNodeRecord* made_node(const RawTrace& trace, std::uint64_t id) {
  const GraphNodeRecord* first = nullptr;
  for (int hops = 0; id != 0 && hops < max_clone_hops; ++hops) {
    if (const auto it = trace.graph_nodes.find(id); it != trace.graph_nodes.end()) {
      if (it->second.params_changed) return nullptr;
      if (first == nullptr) first = &it->second;
    }
    const auto of = trace.node_clones.find(id);
    if (of == trace.node_clones.end()) break;
    id = of->second;
  }
  return first;
}

bool is_graph_launch(const Call& call) noexcept {
  return call.api == "cudaGraphLaunch" || call.api == "cuGraphLaunch";
}

GraphLaunches::GraphLaunches(const RawTrace& trace, const std::vector<std::size_t>& order,
                             const std::map<std::uint64_t, std::vector<std::size_t>>& work_by_call,
                             const std::unordered_map<std::uint64_t, std::size_t>& call_by_corr) {
  // Streams the app itself names: those the tracer described, and those its
  // calls were made on. The rest of a graph's streams are the driver's.
  std::set<std::uint32_t> named;
  for (const StreamRecord& s : trace.streams) named.insert(s.id);
  for (const Call& c : trace.calls) {
    if (c.stream) named.insert(*c.stream);
  }
  const GraphStructure structure(trace);
  // Calls the trace names as having made a graph node: captured, surely.
  std::set<std::uint64_t> made_nodes;
  for (const auto& [id, n] : trace.graph_nodes) {
    if (n.corr != 0) made_nodes.insert(n.corr);
  }
  std::map<std::uint64_t, bool> capturing;  // per thread
  std::map<std::vector<WorkKey>, std::size_t> graphs;
  for (const std::size_t i : order) {
    const Call& c = trace.calls[i];
    const auto work = work_by_call.find(c.corr);
    const bool has_work = work != work_by_call.end() && !work->second.empty();
    if (begins_capture(c.api)) {
      capturing[c.tid] = true;
      continue;
    }
    if (ends_capture(c.api)) {
      capturing[c.tid] = false;
      continue;
    }
    // Work on a stream not being captured still runs (and has records).
    if ((capturing[c.tid] || made_nodes.contains(c.corr)) && capturable(c) && !has_work) {
      captured_.insert(i);
      continue;
    }
    if (!is_graph_launch(c) || !has_work) continue;

    GraphLaunch launch;
    std::vector<std::pair<std::uint64_t, GraphMemoryNode>> memory;  // by node id
    std::vector<std::size_t> records = work->second;
    std::stable_sort(records.begin(), records.end(),
                     [&](std::size_t a, std::size_t b) { return trace.work[a].start < trace.work[b].start; });
    for (const std::size_t w : records) {
      const auto& s = trace.work[w].stream;
      if (s && named.contains(*s)) {
        launch.stream = s;
        break;
      }
    }
    if (!launch.stream) launch.stream = trace.work[records.front()].stream;
    // The launch stream's work first, then each branch stream's.
    std::stable_sort(records.begin(), records.end(), [&](std::size_t a, std::size_t b) {
      const auto& sa = trace.work[a].stream;
      const auto& sb = trace.work[b].stream;
      const bool la = sa == launch.stream;
      const bool lb = sb == launch.stream;
      if (la != lb) return la;
      return sa < sb;
    });
    for (const std::size_t w : records) {
      const auto& s = trace.work[w].stream;
      if (s && s != launch.stream && !named.contains(*s)) internal_.insert(*s);
    }
    launch.graph = graphs.try_emplace(signature(trace, records), graphs.size() + 1).first->second;
    if (!structure.empty()) {
      std::vector<std::size_t> by_start = records;
      std::stable_sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(trace.work[a].start, trace.work[a].end) <
               std::tie(trace.work[b].start, trace.work[b].end);
      });
      memory = memory_nodes_of(trace, structure, by_start, call_by_corr);
      launch.after = record_order(trace, structure, by_start, memory);
      if (launch.after) records = std::move(by_start);
    }
    // Accesses only where the edges are known too: without them ops on
    // different streams are unordered, and their accesses would make races
    // of work the graph ordered.
    // Nor where the graph also orders itself with outside work through
    // nodes the Program does not have.
    const bool outside = std::any_of(records.begin(), records.end(), [&](std::size_t w) {
      const auto id = structure.resolve(trace.work[w].node);
      return id && structure.ordered_outside(*id);
    });
    if (launch.after && !outside) {
      for (const std::size_t w : records) launch.nodes.push_back(structure.made(trace.work[w].node));
      for (auto& [id, m] : memory) launch.memory.push_back(std::move(m));
    } else {
      launch.nodes.assign(records.size(), nullptr);
    }
    launch.work = std::move(records);
    launches_.emplace(i, std::move(launch));
  }
}

const GraphLaunch* GraphLaunches::launch(std::size_t index) const {
  const auto it = launches_.find(index);
  return it == launches_.end() ? nullptr : &it->second;
}

}  // namespace overlap::trace::detail
