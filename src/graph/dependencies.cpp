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
    // The last writer that walked this cell: lists share tails, so a walk
    // that reaches a cell already walked for the same write can stop there.
    node_id walked_by;
  };
  std::vector<Cell> cells;
  std::uint32_t push(node_id reader, std::uint32_t next) {
    cells.push_back({reader, next, no_node});
    return static_cast<std::uint32_t>(cells.size() - 1);
  }
};

// A run of bytes with one history. Segments tile the buffer from byte 0,
// so each begins where the one before it ends and only its end is kept:
// 16 bytes, which halves what inserting into the vector moves.
struct Segment {
  std::uint64_t end = 0;
  node_id writer = no_node;         // the last node that wrote these bytes
  std::uint32_t readers = no_cell;  // head of the readers since, newest first
};

// The segments of one buffer, in a flat vector: buffers hold hundreds of
// segments, and a binary search plus a short move beats a tree's pointer
// chasing (std::map took three times as long).
class SegmentMap {
 public:
  /// Starts over for a buffer of `bytes` bytes that no node has touched (the
  /// vector keeps its capacity: one map serves every buffer in turn).
  void reset(std::uint64_t bytes) {
    bytes_ = bytes;
    segments_.clear();
  }

  void read(std::uint64_t begin, std::uint64_t end, node_id reader, ReaderCells& arena,
            std::vector<node_id>& predecessors) {
    std::size_t i = split_before(begin);
    const std::size_t first = i;
    // Segments that had the same writer and readers before this read get
    // the same list after it (one cell), and are merged below.
    node_id previous_writer = no_node;
    std::uint32_t previous_old = no_cell;
    std::uint32_t previous_new = no_cell;
    for (; i < segments_.size() && begin_of(i) < end; ++i) {
      if (segments_[i].end > end) insert(i, Segment{end, segments_[i].writer, segments_[i].readers});
      Segment& s = segments_[i];
      if (s.writer != no_node && s.writer != reader && s.writer != previous_writer) {
        predecessors.push_back(s.writer);
      }
      // A node reading a segment twice (overlapping accesses) lists itself
      // twice; looking first would cost a cache miss on every read.
      const std::uint32_t old = s.readers;
      if (i == first || old != previous_old || s.writer != previous_writer)
        previous_new = arena.push(reader, old);
      s.readers = previous_new;
      previous_old = old;
      previous_writer = s.writer;
    }
    merge_equal_neighbours(first, i);
  }

  void write(std::uint64_t begin, std::uint64_t end, node_id writer, ReaderCells& arena,
             std::vector<node_id>& predecessors) {
    const std::size_t first = first_ending_after(begin);
    std::size_t last = first;  // one past the last segment overlapping [begin, end)
    for (; last < segments_.size() && begin_of(last) < end; ++last) {
      const Segment& s = segments_[last];
      bool ordered_by_reader = false;
      for (std::uint32_t c = s.readers; c != no_cell; c = arena.cells[c].next) {
        ReaderCells::Cell& cell = arena.cells[c];
        if (cell.reader != writer) ordered_by_reader = true;
        if (cell.walked_by == writer) break;  // the rest of this list is already taken
        cell.walked_by = writer;
        if (cell.reader != writer) predecessors.push_back(cell.reader);
      }
      if (!ordered_by_reader && s.writer != no_node && s.writer != writer) predecessors.push_back(s.writer);
    }
    // [first, last) becomes: what the first kept before `begin`, the write,
    // what the last kept after `end`.
    Segment pieces[3];
    std::size_t count = 0;
    if (begin_of(first) < begin)
      pieces[count++] = Segment{begin, segments_[first].writer, segments_[first].readers};
    pieces[count++] = Segment{end, writer, no_cell};
    if (segments_[last - 1].end > end) pieces[count++] = segments_[last - 1];
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
  [[nodiscard]] std::uint64_t begin_of(std::size_t i) const noexcept {
    return i == 0 ? 0 : segments_[i - 1].end;
  }

  // The segment holding byte `at` (< the buffer's size), creating the
  // buffer's one segment on first use.
  [[nodiscard]] std::size_t first_ending_after(std::uint64_t at) {
    if (segments_.empty()) segments_.push_back(Segment{bytes_, no_node, no_cell});
    const auto it = std::partition_point(segments_.begin(), segments_.end(),
                                         [at](const Segment& s) { return s.end <= at; });
    return static_cast<std::size_t>(it - segments_.begin());
  }

  // Makes a segment begin at `at`; returns its index.
  std::size_t split_before(std::uint64_t at) {
    const std::size_t i = first_ending_after(at);
    if (begin_of(i) == at) return i;
    insert(i, Segment{at, segments_[i].writer, segments_[i].readers});
    return i + 1;
  }

  // Merges runs of segments in [first, last) with the same writer and
  // readers: indistinguishable, and fewer segments to search and split.
  void merge_equal_neighbours(std::size_t first, std::size_t last) {
    if (last - first < 2) return;
    std::size_t kept = first;
    for (std::size_t i = first + 1; i < last; ++i) {
      Segment& k = segments_[kept];
      const Segment& s = segments_[i];
      if (k.writer == s.writer && k.readers == s.readers) {
        k.end = s.end;
      } else {
        segments_[++kept] = s;
      }
    }
    segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(kept + 1),
                    segments_.begin() + static_cast<std::ptrdiff_t>(last));
  }

  void insert(std::size_t i, const Segment& s) {
    segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(i), s);
  }

  std::uint64_t bytes_ = 0;
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

// Buffers never share a byte, so each buffer's accesses can be followed
// alone, in node order. Going buffer by buffer keeps one buffer's segments
// and reader lists in cache for all of its accesses (node by node, every
// access touched a different buffer's cold memory); the edges found are
// then grouped by node.
Dependencies derive_dependencies(const TaskGraph& graph) {
  const auto& nodes = graph.nodes();
  const std::size_t buffer_count = graph.buffers().size();
  // The accesses grouped by buffer, each group in node order (a counting
  // sort), with what the walk needs copied in: reading it from the nodes
  // buffer by buffer missed the cache on every access.
  struct Touch {
    std::uint64_t begin;
    std::uint64_t end;
    node_id node;
    access_mode mode;
  };
  std::vector<std::size_t> group(buffer_count + 1, 0);
  for (node_id v = 0; v < nodes.size(); ++v) {
    for (std::size_t i = 0; i < nodes[v].work.accesses.size(); ++i) ++group[graph.buffer_of(v, i) + 1];
  }
  for (std::size_t b = 0; b < buffer_count; ++b) group[b + 1] += group[b];
  std::vector<Touch> touches(group[buffer_count]);
  {
    std::vector<std::size_t> next(group.begin(), group.end() - 1);
    for (node_id v = 0; v < nodes.size(); ++v) {
      const auto& accesses = nodes[v].work.accesses;
      for (std::size_t i = 0; i < accesses.size(); ++i) {
        const Access& a = accesses[i];  // TaskGraph::add made every size explicit
        touches[next[graph.buffer_of(v, i)]++] = {a.offset, a.offset + *a.size, v, a.mode};
      }
    }
  }

  // Each buffer's accesses through one interval map: edges as (after, before).
  std::vector<std::pair<node_id, node_id>> edges;
  edges.reserve(touches.size() * 2 + graph.edges().size());
  SegmentMap map;
  ReaderCells arena;
  std::vector<node_id> found;
  for (std::size_t b = 0; b < buffer_count; ++b) {
    map.reset(graph.buffers()[b].bytes);
    arena.cells.clear();
    for (std::size_t t = group[b]; t < group[b + 1]; ++t) {
      const Touch& a = touches[t];
      if (a.begin >= a.end) continue;  // touches no byte
      found.clear();
      if (a.mode == access_mode::read) {
        map.read(a.begin, a.end, a.node, arena, found);
      } else {
        map.write(a.begin, a.end, a.node, arena, found);
      }
      for (const node_id u : found) edges.emplace_back(a.node, u);
    }
  }
  for (const auto& [before, after] : graph.edges()) edges.emplace_back(after, before);

  // Grouped by node (a counting sort), then each node's sorted and unique.
  std::vector<std::size_t> first(nodes.size() + 1, 0);
  for (const auto& e : edges) ++first[e.first + 1];
  for (std::size_t v = 0; v < nodes.size(); ++v) first[v + 1] += first[v];
  std::vector<node_id> before(edges.size());
  {
    std::vector<std::size_t> next(first.begin(), first.end() - 1);
    for (const auto& [after, u] : edges) before[next[after]++] = u;
  }
  Dependencies d;
  d.predecessors.resize(nodes.size());
  for (node_id v = 0; v < nodes.size(); ++v) {
    const auto from = before.begin() + static_cast<std::ptrdiff_t>(first[v]);
    const auto to = before.begin() + static_cast<std::ptrdiff_t>(first[v + 1]);
    std::sort(from, to);
    d.predecessors[v].assign(from, std::unique(from, to));  // one allocation of the final size
    d.edges += d.predecessors[v].size();
  }
  d.order = issue_order(graph, d.predecessors);
  return d;
}

}  // namespace overlap::graph
