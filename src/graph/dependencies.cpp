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
// chasing (std::map took three times as long). Each access replaces the
// segments it overlaps with new pieces in one move of the segments after
// them: splitting and merging in place moved them up to three times.
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
    const std::size_t first = first_ending_after(begin);
    pieces_.clear();
    if (begin_of(first) < begin)
      pieces_.push_back(Segment{begin, segments_[first].writer, segments_[first].readers});
    // Segments that had the same writer and readers before this read get
    // the same list after it (one cell), and become one piece:
    // indistinguishable, and fewer segments to search and split.
    node_id previous_writer = no_node;
    std::uint32_t previous_old = no_cell;
    std::size_t last = first;  // one past the last segment overlapping [begin, end)
    for (; last < segments_.size() && begin_of(last) < end; ++last) {
      const Segment& s = segments_[last];
      if (s.writer != no_node && s.writer != reader && s.writer != previous_writer) {
        predecessors.push_back(s.writer);
      }
      // A node reading a segment twice (overlapping accesses) lists itself
      // twice; looking first would cost a cache miss on every read.
      const std::uint32_t old = s.readers;
      const std::uint64_t piece_end = std::min(s.end, end);
      if (last != first && old == previous_old && s.writer == previous_writer) {
        pieces_.back().end = piece_end;
      } else {
        pieces_.push_back(Segment{piece_end, s.writer, arena.push(reader, old)});
      }
      previous_old = old;
      previous_writer = s.writer;
    }
    if (segments_[last - 1].end > end) pieces_.push_back(segments_[last - 1]);
    replace(first, last, pieces_.data(), pieces_.size());
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
    replace(first, last, pieces, count);
  }

 private:
  [[nodiscard]] std::uint64_t begin_of(std::size_t i) const noexcept {
    return i == 0 ? 0 : segments_[i - 1].end;
  }

  // The segment holding byte `at` (< the buffer's size), creating the
  // buffer's one segment on first use. A binary search without branches
  // (a conditional move per step): std::partition_point's branches went
  // each way at random, and cost 4 ms more for 100,000 nodes.
  [[nodiscard]] std::size_t first_ending_after(std::uint64_t at) {
    if (segments_.empty()) segments_.push_back(Segment{bytes_, no_node, no_cell});
    const Segment* base = segments_.data();
    for (std::size_t n = segments_.size(); n > 1;) {
      const std::size_t half = n / 2;
      base = base[half].end <= at ? base + half : base;
      n -= half;
    }
    return static_cast<std::size_t>(base - segments_.data()) + (base->end <= at ? 1 : 0);
  }

  // Replaces segments [first, last) with `count` pieces: one move of the
  // segments after them, when the count changes.
  void replace(std::size_t first, std::size_t last, const Segment* pieces, std::size_t count) {
    const std::size_t old = last - first;
    const auto at = [&](std::size_t i) { return segments_.begin() + static_cast<std::ptrdiff_t>(i); };
    if (count >= old) {
      std::copy_n(pieces, old, at(first));
      segments_.insert(at(last), pieces + old, pieces + count);
    } else {
      std::copy_n(pieces, count, at(first));
      segments_.erase(at(first + count), at(last));
    }
  }

  std::uint64_t bytes_ = 0;
  std::vector<Segment> segments_;
  std::vector<Segment> pieces_;  // a read's replacement segments (kept for its capacity)
};

// Sorts a node's predecessors: most nodes have a handful, which an
// insertion sort orders faster than std::sort's introsort does.
void sort_few(std::vector<node_id>& nodes) {
  constexpr std::size_t few = 16;
  if (nodes.size() > few) {
    std::sort(nodes.begin(), nodes.end());
    return;
  }
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    const node_id u = nodes[i];
    std::size_t j = i;
    for (; j > 0 && nodes[j - 1] > u; --j) nodes[j] = nodes[j - 1];
    nodes[j] = u;
  }
}

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
// access touched a different buffer's cold memory). Each access's edges are
// kept in place, in the order walked, and then gathered node by node.
Dependencies derive_dependencies(const TaskGraph& graph) {
  const std::size_t n = graph.size();
  const auto& accesses = graph.resolved_;  // in node order, sizes explicit
  const std::size_t buffer_count = graph.buffers().size();
  const auto accesses_of = [&](node_id v) {
    return std::pair{graph.first_access_[v], v + 1 < n ? graph.first_access_[v + 1] : accesses.size()};
  };
  // The accesses grouped by buffer, each group in node order (a counting
  // sort), with what the walk needs copied in.
  struct Touch {
    std::uint64_t begin;
    std::uint64_t end;
    node_id node;
    access_mode mode;
  };
  std::vector<std::size_t> group(buffer_count + 1, 0);
  for (const auto& a : accesses) ++group[a.buffer + 1];
  for (std::size_t b = 0; b < buffer_count; ++b) group[b + 1] += group[b];
  std::vector<Touch> touches(accesses.size());
  std::vector<std::size_t> touch_of(accesses.size());  // each access's place in touches
  {
    std::vector<std::size_t> next(group.begin(), group.end() - 1);
    for (node_id v = 0; v < n; ++v) {
      const auto [from, to] = accesses_of(v);
      for (std::size_t k = from; k < to; ++k) {
        const auto& a = accesses[k];
        touch_of[k] = next[a.buffer]++;
        touches[touch_of[k]] = {a.begin, a.end, v, a.mode};
      }
    }
  }

  // Each buffer's accesses through one interval map. The edges of touch t
  // are found[found_from[t]] .. found[found_from[t + 1] - 1], in the order
  // walked: gathered node by node below.
  std::vector<node_id> found;
  found.reserve(touches.size() * 4);
  std::vector<std::size_t> found_from(touches.size() + 1);
  SegmentMap map;
  ReaderCells arena;
  for (std::size_t b = 0; b < buffer_count; ++b) {
    map.reset(graph.buffers()[b].bytes);
    arena.cells.clear();
    for (std::size_t t = group[b]; t < group[b + 1]; ++t) {
      const Touch& a = touches[t];
      found_from[t] = found.size();
      if (a.begin < a.end) {  // else it touches no byte
        if (a.mode == access_mode::read) {
          map.read(a.begin, a.end, a.node, arena, found);
        } else {
          map.write(a.begin, a.end, a.node, arena, found);
        }
      }
    }
  }
  found_from[touches.size()] = found.size();

  // Explicit edges as (after, before), in order of `after`.
  std::vector<std::pair<node_id, node_id>> explicit_edges;
  explicit_edges.reserve(graph.edges().size());
  for (const auto& [before, after] : graph.edges()) explicit_edges.emplace_back(after, before);
  std::sort(explicit_edges.begin(), explicit_edges.end());

  // Per node, its accesses' edges and its explicit ones, each node once
  // (the walk lists a node once per access and segment list it is found
  // through: a third of the edges found are repeats), then sorted.
  Dependencies d;
  d.predecessors.resize(n);
  std::vector<node_id> listed_for(n, no_node);  // the last node whose list has each node
  std::vector<node_id> before;
  auto next_explicit = explicit_edges.cbegin();
  for (node_id v = 0; v < n; ++v) {
    before.clear();
    const auto list = [&](node_id u) {
      if (listed_for[u] == v) return;
      listed_for[u] = v;
      before.push_back(u);
    };
    const auto [from, to] = accesses_of(v);
    for (std::size_t k = from; k < to; ++k) {
      const std::size_t t = touch_of[k];
      for (std::size_t i = found_from[t]; i < found_from[t + 1]; ++i) list(found[i]);
    }
    for (; next_explicit != explicit_edges.cend() && next_explicit->first == v; ++next_explicit)
      list(next_explicit->second);
    sort_few(before);
    d.predecessors[v].assign(before.begin(), before.end());
    d.edges += before.size();
  }
  d.order = issue_order(graph, d.predecessors);
  return d;
}

}  // namespace overlap::graph
