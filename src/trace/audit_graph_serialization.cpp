// graph-serialized-nodes: an edge of a launched graph that orders two nodes
// which touch no common bytes and could have run together. Stream capture
// turns every call on one stream into a chain, so a graph captured from a
// single stream runs its independent work (the next chunk's upload and this
// chunk's kernel, two kernels on different buffers) one after the other,
// which is the serialization streams were added to avoid.
//
// Claimed only where the trace shows all of it: the graph's edges (the
// capture's graph_edges), both nodes' accesses (kernels' inferred from their
// pointers, so the independence is as sure as those), no other path between
// the two nodes, and room to overlap: a copy beside a kernel, copies in
// opposite directions, or kernels whose grids fit the GPU together. What
// overlapping could save is at most the shorter node, per launch.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "audit_detail.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace::detail {

namespace {

bool overlaps(const Access& x, const Access& y) {
  if (x.buffer != y.buffer) return false;
  const std::uint64_t x_end = x.size ? x.offset + *x.size : UINT64_MAX;
  const std::uint64_t y_end = y.size ? y.offset + *y.size : UINT64_MAX;
  return x.offset < y_end && y.offset < x_end;
}

/// Some byte one touches and the other writes.
bool conflict(const Op& a, const Op& b) {
  for (const Access& x : a.accesses) {
    for (const Access& y : b.accesses) {
      if ((x.mode == access_mode::write || y.mode == access_mode::write) && overlaps(x, y)) return true;
    }
  }
  return false;
}

/// Why the two could run at once, in words.
std::string_view room_in_words(const Op& a, const Op& b) {
  if (a.kind == op_kind::copy && b.kind == op_kind::copy) return "a copy engine each, one per direction";
  if (a.kind == op_kind::kernel && b.kind == op_kind::kernel) return "their grids fit the GPU together";
  return "a copy engine and the SMs";
}

/// The two could run at once on the device, were they unordered.
bool room_to_overlap(const Op& a, const Op& b) {
  if (a.kind == op_kind::copy && b.kind == op_kind::copy) return a.direction != b.direction;
  if (a.kind == op_kind::kernel && b.kind == op_kind::kernel) return a.gpu_share + b.gpu_share <= 1.0 + 1e-9;
  return true;  // a copy or memset beside a kernel
}

}  // namespace

std::optional<AuditFinding> find_serialized_graph_nodes(const Capture& run, const Phases& phases) {
  if (run.graph_edges.empty()) return std::nullopt;
  const Program& p = run.program;
  std::unordered_map<op_id, std::vector<op_id>> before;  // op -> the ops its edges lead back to
  for (const auto& [from, to] : run.graph_edges) before[to].push_back(from);
  std::vector<const Span*> span_of(p.ops().size(), nullptr);
  for (const Span& s : run.timeline.spans) {
    if (s.op < span_of.size()) span_of[s.op] = &s;
  }

  // Another path from `a` to `b` than their own edge: removing that edge
  // would leave them ordered anyway.
  std::vector<op_id> stack;
  std::unordered_set<op_id> seen;
  const auto ordered_otherwise = [&](op_id a, op_id b) {
    stack.clear();
    seen.clear();
    for (const op_id c : before[b]) {
      if (c != a) stack.push_back(c);
    }
    while (!stack.empty()) {
      const op_id c = stack.back();
      stack.pop_back();
      if (c == a) return true;
      if (!seen.insert(c).second) continue;
      if (const auto it = before.find(c); it != before.end())
        stack.insert(stack.end(), it->second.begin(), it->second.end());
    }
    return false;
  };

  struct Pair {
    op_id first;
    op_id second;
    double shorter;  // ms: what overlapping them could save at most
  };
  std::vector<Pair> pairs;
  for (const auto& [a, b] : run.graph_edges) {
    const Op& first = p.ops()[a];
    const Op& second = p.ops()[b];
    if (first.accesses.empty() || second.accesses.empty() || !is_work_op(first.kind) ||
        !is_work_op(second.kind))
      continue;
    if (conflict(first, second) || !room_to_overlap(first, second) || ordered_otherwise(a, b)) continue;
    if (span_of[a] == nullptr || span_of[b] == nullptr) continue;
    const double shorter = std::min(span_of[a]->end - span_of[a]->start, span_of[b]->end - span_of[b]->start);
    if (shorter <= 0.0) continue;
    pairs.push_back({a, b, shorter});
  }
  if (pairs.empty()) return std::nullopt;

  // One pattern per pair of labels (a graph launched again and again repeats it).
  std::map<std::pair<std::string, std::string>, std::size_t> kinds;
  double steady_saving = 0.0;
  std::size_t steady_pairs = 0;
  for (const Pair& pair : pairs) {
    ++kinds[{p.ops()[pair.first].label, p.ops()[pair.second].label}];
    if (phases.in_steady(run.origin[pair.second].call_start)) {
      steady_saving += pair.shorter;
      ++steady_pairs;
    }
  }
  const Pair& first = pairs.front();
  const bool inferred =
      std::any_of(p.ops()[first.first].accesses.begin(), p.ops()[first.first].accesses.end(),
                  [](const Access& x) { return x.source == access_source::inferred; }) ||
      std::any_of(p.ops()[first.second].accesses.begin(), p.ops()[first.second].accesses.end(),
                  [](const Access& x) { return x.source == access_source::inferred; });
  AuditFinding f;
  f.level = check::severity::warning;
  f.rule = std::string(rules::graph_serialized_nodes);
  f.certainty = inferred ? "possible" : "certain";
  f.count = pairs.size();
  f.message = fmt::format(
      "In a CUDA graph, {} runs after {} only because an edge says so: they touch no common bytes{} and "
      "could run at once ({}), but the edge serializes them{}. Stream capture makes such edges: every call "
      "on one capturing stream waits for the one before it.",
      check::describe_op(p, first.second), check::describe_op(p, first.first),
      inferred ? " (as far as their pointer parameters tell)" : "",
      room_in_words(p.ops()[first.first], p.ops()[first.second]),
      pairs.size() > 1 ? fmt::format(" ({} such pairs in all, of {} kind{})", pairs.size(), kinds.size(),
                                     kinds.size() == 1 ? "" : "s")
                       : "");
  f.fix =
      "Give the second node only the dependencies it needs: capture it on a second stream forked from the "
      "first (cudaEventRecord, cudaStreamWaitEvent) before the first node and joined back after it, or add "
      "it by hand (cudaGraphAddKernelNode / cudaGraphAddMemcpyNode) with the first node's own dependencies.";
  f.ops = audit_ops(run, {first.first, first.second});
  f.streams = stream_names(run, {first.first, first.second});
  for (std::size_t k = 0; k < pairs.size() && f.instances.size() < check::max_listed_instances; ++k) {
    f.instances.push_back({audit_ops(run, {pairs[k].first, pairs[k].second}),
                           fmt::format("{} after {}: up to {} ms", p.ops()[pairs[k].second].label,
                                       p.ops()[pairs[k].first].label, io::format_number(pairs[k].shorter))});
  }
  f.measured =
      MeasuredCost{steady_saving,
                   fmt::format("{} serialized pair{} in the steady state, the shorter of each {} ms in all",
                               steady_pairs, steady_pairs == 1 ? "" : "s", io::format_number(steady_saving)),
                   steady_pairs};
  // At most: each pair overlapping wholly, the shorter node hidden behind the longer.
  f.predicted_saving = steady_saving;
  return f;
}

}  // namespace overlap::trace::detail
