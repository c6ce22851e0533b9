// derive_dependencies: the DAG from declared accesses and explicit edges.
//
// Each buffer keeps an interval map of its bytes: per segment, the last node
// that wrote it and the nodes that read it since. A read depends on the
// segment's writer; a write depends on the readers since the last write (or,
// with none, on that writer: the readers already follow it) and then owns the
// segment alone. Only nearest conflicts make edges, so a long chain of
// writers to one buffer is a chain, not a clique.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/graph/schedule.hpp"

namespace overlap::graph {

namespace {

constexpr node_id no_node = ~node_id{0};
constexpr std::uint32_t no_cell = ~std::uint32_t{0};

// Readers of a segment since its writer, as persistent singly linked lists
// in one arena: splitting a segment shares its list instead of copying it,
// and adding a reader is one cell. A list may then be walked for several
// segments of one write; the duplicate edges are removed once per node.
struct ReaderCells {
  struct Cell {
    node_id reader;
    std::uint32_t next;
  };
  std::vector<Cell> cells;
  // Per cell, the last writer that walked it: lists share tails, so a walk
  // that reaches a cell already walked for the same write can stop there.
  std::vector<node_id> walked_by;
  std::uint32_t push(node_id reader, std::uint32_t next) {
    cells.push_back({reader, next});
    walked_by.push_back(no_node);
    return static_cast<std::uint32_t>(cells.size() - 1);
  }
};

struct Segment {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  node_id writer = no_node;
  std::uint32_t readers = no_cell;  // head of the list, newest first
};

// Byte segments of one buffer, sorted and disjoint; bytes never touched
// have no segment. A flat vector: buffers hold hundreds of segments, and a
// search plus a short move beats a tree's pointer chasing.
class SegmentMap {
 public:
  void read(std::uint64_t begin, std::uint64_t end, node_id reader, ReaderCells& arena,
            std::vector<node_id>& predecessors) {
    std::size_t i = split_at(first_ending_after(begin), begin);
    std::uint64_t covered = begin;  // bytes before this have a segment
    while (covered < end) {
      if (i == segments_.size() || segments_[i].begin > covered) {
        // Untouched bytes: a segment with this reader alone.
        const std::uint64_t gap_end = i == segments_.size() ? end : std::min(end, segments_[i].begin);
        insert(i, Segment{covered, gap_end, no_node, arena.push(reader, no_cell)});
      } else {
        if (segments_[i].end > end) split_at(i, end);
        Segment& s = segments_[i];
        if (s.writer != no_node && s.writer != reader) predecessors.push_back(s.writer);
        if (s.readers == no_cell || arena.cells[s.readers].reader != reader)
          s.readers = arena.push(reader, s.readers);
      }
      covered = segments_[i].end;
      ++i;
    }
  }

  void write(std::uint64_t begin, std::uint64_t end, node_id writer, ReaderCells& arena,
             std::vector<node_id>& predecessors) {
    const std::size_t first = first_ending_after(begin);
    std::size_t last = first;  // one past the last segment overlapping [begin, end)
    for (; last < segments_.size() && segments_[last].begin < end; ++last) {
      const Segment& s = segments_[last];
      bool ordered_by_reader = false;
      for (std::uint32_t c = s.readers; c != no_cell; c = arena.cells[c].next) {
        if (arena.cells[c].reader != writer) ordered_by_reader = true;
        if (arena.walked_by[c] == writer) break;  // the rest of this list is already taken
        arena.walked_by[c] = writer;
        if (arena.cells[c].reader != writer) predecessors.push_back(arena.cells[c].reader);
      }
      if (!ordered_by_reader && s.writer != no_node && s.writer != writer) predecessors.push_back(s.writer);
    }
    // [first, last) becomes: what the first kept before `begin`, the write,
    // what the last kept after `end`.
    Segment pieces[3];
    std::size_t count = 0;
    if (last > first && segments_[first].begin < begin) {
      pieces[count] = segments_[first];
      pieces[count++].end = begin;
    }
    pieces[count++] = Segment{begin, end, writer, no_cell};
    if (last > first && segments_[last - 1].end > end) {
      pieces[count] = segments_[last - 1];
      pieces[count++].begin = end;
    }
    const std::size_t old = last - first;
    if (count > old)
      segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(last), count - old, Segment{});
    if (count < old) {
      segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(first + count),
                      segments_.begin() + static_cast<std::ptrdiff_t>(last));
    }
    std::copy_n(pieces, count, segments_.begin() + static_cast<std::ptrdiff_t>(first));
  }

 private:
  // The first segment ending after `at`: the one holding it, or the next.
  [[nodiscard]] std::size_t first_ending_after(std::uint64_t at) const {
    const auto it = std::partition_point(segments_.begin(), segments_.end(),
                                         [at](const Segment& s) { return s.end <= at; });
    return static_cast<std::size_t>(it - segments_.begin());
  }

  // If segment i holds `at` past its first byte, cuts it there; returns the
  // index of the segment that now starts at or after `at`.
  std::size_t split_at(std::size_t i, std::uint64_t at) {
    if (i == segments_.size() || segments_[i].begin >= at) return i;
    Segment tail = segments_[i];
    tail.begin = at;
    segments_[i].end = at;
    insert(i + 1, tail);
    return i + 1;
  }

  void insert(std::size_t i, const Segment& s) {
    segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(i), s);
  }

  std::vector<Segment> segments_;
};

// Names the nodes of a cycle among `remaining` (nodes Kahn's walk could not
// order): follows unfinished predecessors until a node repeats.
[[noreturn]] void throw_cycle(const TaskGraph& graph, const std::vector<std::vector<node_id>>& predecessors,
                              const std::vector<std::uint32_t>& waiting) {
  node_id at = 0;
  while (waiting[at] == 0) ++at;
  std::vector<std::uint32_t> seen_at(graph.size(), ~std::uint32_t{0});
  std::vector<node_id> path;
  while (seen_at[at] == ~std::uint32_t{0}) {
    seen_at[at] = static_cast<std::uint32_t>(path.size());
    path.push_back(at);
    for (const node_id p : predecessors[at]) {
      if (waiting[p] != 0) {
        at = p;
        break;
      }
    }
  }
  // path[seen_at[at]..] is the cycle, walked backwards along edges.
  std::string cycle;
  for (std::size_t i = path.size(); i-- > seen_at[at];)
    cycle += fmt::format("'{}' -> ", graph.nodes()[path[i]].name);
  cycle += fmt::format("'{}'", graph.nodes()[path.back()].name);
  throw invalid_input(fmt::format("node '{}': on a cycle of explicit edges and data dependencies: {}",
                                  graph.nodes()[at].name, cycle));
}

std::vector<node_id> issue_order(const TaskGraph& graph,
                                 const std::vector<std::vector<node_id>>& predecessors) {
  const std::size_t n = graph.size();
  std::vector<node_id> order;
  order.reserve(n);
  const bool all_forward = std::all_of(graph.edges().begin(), graph.edges().end(),
                                       [](const auto& e) { return e.first < e.second; });
  if (all_forward) {  // data edges always point forward: declaration order is topological
    for (node_id v = 0; v < n; ++v) order.push_back(v);
    return order;
  }
  std::vector<std::vector<node_id>> successors(n);
  std::vector<std::uint32_t> waiting(n, 0);
  for (node_id v = 0; v < n; ++v) {
    waiting[v] = static_cast<std::uint32_t>(predecessors[v].size());
    for (const node_id p : predecessors[v]) successors[p].push_back(v);
  }
  std::priority_queue<node_id, std::vector<node_id>, std::greater<>> ready;
  for (node_id v = 0; v < n; ++v) {
    if (waiting[v] == 0) ready.push(v);
  }
  while (!ready.empty()) {
    const node_id v = ready.top();
    ready.pop();
    order.push_back(v);
    for (const node_id s : successors[v]) {
      if (--waiting[s] == 0) ready.push(s);
    }
  }
  if (order.size() != n) throw_cycle(graph, predecessors, waiting);
  return order;
}

}  // namespace

Dependencies derive_dependencies(const TaskGraph& graph) {
  const auto& nodes = graph.nodes();
  std::vector<SegmentMap> buffers(graph.buffers().size());
  ReaderCells arena;
  Dependencies d;
  d.predecessors.resize(nodes.size());
  for (node_id v = 0; v < nodes.size(); ++v) {
    std::vector<node_id>& preds = d.predecessors[v];
    const auto& accesses = nodes[v].work.accesses;
    for (std::size_t i = 0; i < accesses.size(); ++i) {
      const Access& a = accesses[i];
      const std::uint32_t b = graph.buffer_of(v, i);
      const std::uint64_t end = a.offset + *a.size;  // TaskGraph::add made every size explicit
      if (a.offset >= end) continue;                 // touches no byte
      if (a.mode == access_mode::read) {
        buffers[b].read(a.offset, end, v, arena, preds);
      } else {
        buffers[b].write(a.offset, end, v, arena, preds);
      }
    }
  }
  for (const auto& [before, after] : graph.edges()) d.predecessors[after].push_back(before);
  for (auto& preds : d.predecessors) {
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    d.edges += preds.size();
  }
  d.order = issue_order(graph, d.predecessors);
  return d;
}

}  // namespace overlap::graph
