// Joining a measuring run to a traced run: see measured_run.hpp.
#include "overlap/trace/measured_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "capture_graphs.hpp"
#include "overlap/core/error.hpp"

namespace overlap::trace {

namespace {

/// An allocation as both runs can name it: its kind, its size, and how many
/// allocations of that kind and size came before it.
struct AllocationKey {
  std::string kind;  ///< "device" (device and managed), "async", "host" (pinned)
  std::uint64_t bytes = 0;
  std::uint64_t ordinal = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 flags the 0 the defaulted <=> compares with
  auto operator<=>(const AllocationKey&) const = default;
};

/// A measured interval inside one allocation of the measuring run.
struct Piece {
  AllocationKey allocation;
  std::uint64_t offset = 0;  ///< from the allocation's start
  std::uint64_t bytes = 0;
  std::uint64_t base = 0;  ///< the allocation's start, in the measuring run
};

struct MeasuredLaunch {
  std::vector<Piece> reads;
  std::vector<Piece> writes;
  bool exact = true;
  std::vector<std::uint64_t> ptrs;   ///< its pointer arguments, in the measuring run
  std::vector<std::uint64_t> sptrs;  ///< its struct arguments' address-like words
  bool measured = true;              ///< false: a graph node the measuring run could not tell apart
};

/// Where `p` lies in the traced run, anchored to the launch's arguments: the
/// argument (at the same position in both runs) that points into the
/// piece's allocation nearest below the piece, else any into it. A caching
/// allocator may hand a tensor another block in each run; the kernel still
/// finds it through its argument.
std::optional<std::uint64_t> anchored(const Piece& p, const MeasuredLaunch& m,
                                      const std::vector<std::uint64_t>& ptrs,
                                      const std::vector<std::uint64_t>& struct_ptrs) {
  const std::uint64_t start = p.base + p.offset;
  // (measured value, traced value) of the nearest argument at or below the
  // piece, and of the nearest above it.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> below;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> above;
  const auto consider = [&](const std::vector<std::uint64_t>& there, const std::vector<std::uint64_t>& here) {
    if (there.size() != here.size()) return;  // the runs passed different arguments: no anchor
    for (std::size_t i = 0; i < there.size(); ++i) {
      const std::uint64_t v = there[i];
      if (v < p.base || v - p.base >= p.allocation.bytes) continue;  // not into the piece's allocation
      if (v <= start && (!below || v > below->first)) below = {{v, here[i]}};
      if (v > start && (!above || v < above->first)) above = {{v, here[i]}};
    }
  };
  consider(m.ptrs, ptrs);
  consider(m.sptrs, struct_ptrs);
  if (below) return below->second + (start - below->first);
  if (above && above->second >= above->first - start) return above->second - (above->first - start);
  return std::nullopt;
}

/// The arguments a graph's kernel node runs with, as the trace recorded
/// them when the node was made (through the clones instantiation made);
/// not `known` where the trace does not say or they changed since.
struct NodeArguments {
  bool known = false;
  std::vector<std::uint64_t> ptrs;
  std::vector<std::uint64_t> struct_ptrs;
};

NodeArguments node_arguments(const RawTrace& trace, const std::map<std::uint64_t, const Call*>& call_of,
                             std::uint64_t node) {
  const GraphNodeRecord* made = detail::made_node(trace, node);
  if (made == nullptr) return {};
  if (made->kind == "kernel") return {true, made->ptrs, made->struct_ptrs};
  const auto call = call_of.find(made->corr);
  if (made->kind.empty() && call != call_of.end() && call->second->cls == call_class::launch)
    return {true, call->second->ptrs, call->second->struct_ptrs};
  return {};
}

/// The kind a traced allocation call's memory matches in the measuring run.
std::string traced_kind(const std::string& memory) {
  if (memory == "device" || memory == "managed" || memory.empty()) return "device";
  if (memory == "async") return "async";
  if (memory == "pinned") return "host";
  return {};
}

/// Records are objects holding flat lists: a deeper line is not one of them
/// (and nesting without bound would exhaust the stack in the parser).
constexpr int max_nesting = 4;

/// How deep brackets nest in `line`, outside strings.
int nesting(std::string_view line) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > max_nesting) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

class MeasuringFile {
 public:
  MeasuringFile(std::istream& in, std::string_view source) : source_(source) {
    std::string line;
    std::vector<nlohmann::json> records;
    while (std::getline(in, line)) {
      ++line_;
      if (line.empty()) continue;
      if (nesting(line) > max_nesting) fail("nested deeper than a record of this file is");
      nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (r.is_discarded()) {
        if (in.peek() == std::char_traits<char>::eof()) break;  // the last line cut short: the app was killed
        fail("not a JSON object");
      }
      if (!r.is_object() || !r.contains("t") || !r["t"].is_string()) fail("a record without its type \"t\"");
      const std::string type = r["t"];
      if (type == "alloc" || type == "free" || type == "launch") {
        r["line"] = line_;
        records.push_back(std::move(r));
      }
    }
    // Launch records are written when their tables are read, after later
    // allocations: replay everything in the order it happened.
    std::sort(records.begin(), records.end(), [&](const nlohmann::json& a, const nlohmann::json& b) {
      return number(a, "seq") < number(b, "seq");
    });
    for (const nlohmann::json& r : records) replay(r);
  }

  /// Launches by kernel name, in launch order.
  std::map<std::string, std::vector<MeasuredLaunch>> launches;
  /// Kernel nodes of graph launches by kernel name, in launch order.
  std::map<std::string, std::vector<MeasuredLaunch>> graph_launches;
  std::uint64_t count = 0;
  std::uint64_t outside = 0;

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw invalid_input(fmt::format("{}:{}: {}", source_, line_, what));
  }

  std::uint64_t number(const nlohmann::json& r, const char* key) const {
    const auto it = r.find(key);
    if (it == r.end() || !it->is_number_unsigned())
      throw invalid_input(fmt::format("{}:{}: \"{}\" is missing or not a count", source_,
                                      r.value("line", std::uint64_t{0}), key));
    return it->get<std::uint64_t>();
  }

  /// The string `key` of `r`, or `fallback` when it is absent.
  std::string text(const nlohmann::json& r, const char* key, const char* fallback) const {
    const auto it = r.find(key);
    if (it == r.end()) return fallback;
    if (!it->is_string())
      throw invalid_input(
          fmt::format("{}:{}: \"{}\" is not a string", source_, r.value("line", std::uint64_t{0}), key));
    return it->get<std::string>();
  }

  void replay(const nlohmann::json& r) {
    const std::string type = r["t"];
    if (type == "alloc") {
      const std::string kind = text(r, "kind", "device");
      const std::uint64_t bytes = number(r, "bytes");
      live_[number(r, "ptr")] = {kind, bytes, ordinals_[{kind, bytes}]++};
    } else if (type == "free") {
      live_.erase(number(r, "ptr"));
    } else {
      MeasuredLaunch launch;
      launch.exact = !r.contains("lost") || number(r, "lost") == 0;
      pieces(r, "reads", launch.reads);
      pieces(r, "writes", launch.writes);
      launch.ptrs = values(r, "ptrs");
      launch.sptrs = values(r, "sptrs");
      // A graph's kernel node: "measured", or not: "shared" (not told apart
      // from another node of its launch) or "unseen" (its grid never found
      // its table).
      const std::string graph = text(r, "graph", "");
      if (!graph.empty() && graph != "measured" && graph != "shared" && graph != "unseen")
        throw invalid_input(fmt::format(R"({}:{}: "graph" is not "measured", "shared" or "unseen")", source_,
                                        r.value("line", std::uint64_t{0})));
      launch.measured = graph.empty() || graph == "measured";
      (graph.empty() ? launches : graph_launches)[text(r, "kernel", "")].push_back(std::move(launch));
      ++count;
    }
  }

  /// The list of counts `key` of `r` (empty when absent).
  std::vector<std::uint64_t> values(const nlohmann::json& r, const char* key) const {
    std::vector<std::uint64_t> out;
    const auto it = r.find(key);
    if (it == r.end()) return out;
    for (const auto& v : *it) {
      if (!v.is_number_unsigned())
        throw invalid_input(fmt::format("{}:{}: \"{}\" holds a value that is not an address", source_,
                                        r.value("line", std::uint64_t{0}), key));
      out.push_back(v.get<std::uint64_t>());
    }
    return out;
  }

  /// The flat [address, bytes, ...] list `key` of `r`, cut at allocations.
  void pieces(const nlohmann::json& r, const char* key, std::vector<Piece>& out) {
    const auto it = r.find(key);
    if (it == r.end()) return;
    if (!it->is_array() || it->size() % 2 != 0)
      throw invalid_input(fmt::format("{}:{}: \"{}\" is not a list of (address, bytes) pairs", source_,
                                      r.value("line", std::uint64_t{0}), key));
    for (std::size_t i = 0; i + 1 < it->size(); i += 2) {
      if (!(*it)[i].is_number_unsigned() || !(*it)[i + 1].is_number_unsigned())
        throw invalid_input(fmt::format("{}:{}: \"{}\" holds a value that is not an address or a count",
                                        source_, r.value("line", std::uint64_t{0}), key));
      std::uint64_t at = (*it)[i].get<std::uint64_t>();
      const std::uint64_t end = at + (*it)[i + 1].get<std::uint64_t>();
      while (at < end) {
        auto a = live_.upper_bound(at);
        if (a == live_.begin() || std::prev(a)->first + std::prev(a)->second.bytes <= at) {
          // Not in an allocation: skip to the next one, if the interval reaches it.
          ++outside;
          if (a == live_.end() || a->first >= end) break;
          at = a->first;
          continue;
        }
        --a;
        const std::uint64_t stop = std::min(end, a->first + a->second.bytes);
        out.push_back({a->second, at - a->first, stop - at, a->first});
        at = stop;
      }
    }
  }

  std::string_view source_;
  std::uint64_t line_ = 0;
  std::map<std::uint64_t, AllocationKey> live_;  // by start address
  std::map<std::pair<std::string, std::uint64_t>, std::uint64_t> ordinals_;
};

}  // namespace

MeasuredJoin join_measured_run(RawTrace& trace, std::istream& in, std::string_view source) {
  const MeasuringFile measured(in, source);
  MeasuredJoin join;
  join.measured_launches = measured.count;
  join.outside = measured.outside;

  // The traced run's calls in the order they were made.
  std::vector<const Call*> calls;
  calls.reserve(trace.calls.size());
  for (const Call& c : trace.calls) calls.push_back(&c);
  std::stable_sort(calls.begin(), calls.end(),
                   [](const Call* a, const Call* b) { return a->start < b->start; });
  // Launches made under stream capture build a graph; they run later, as the graph's.
  std::set<std::uint64_t> captured;
  for (const auto& [id, node] : trace.graph_nodes) {
    if (node.corr != 0) captured.insert(node.corr);
  }

  // Kernel records of graph launches, by their launch call, in start order;
  // the calls that made graph nodes, by corr.
  std::map<std::uint64_t, std::vector<const DeviceWork*>> graph_kernels;
  for (const DeviceWork& w : trace.work) {
    if (w.kind != work_kind::kernel || w.node == 0 || w.corr == 0) continue;
    const auto alias = trace.aliases.find(w.corr);
    graph_kernels[alias == trace.aliases.end() ? w.corr : alias->second].push_back(&w);
  }
  for (auto& [corr, records] : graph_kernels) {
    std::stable_sort(records.begin(), records.end(),
                     [](const DeviceWork* a, const DeviceWork* b) { return a->start < b->start; });
  }
  std::map<std::uint64_t, const Call*> node_calls;
  for (const Call* c : calls) {
    if (captured.contains(c->corr)) node_calls.emplace(c->corr, c);
  }

  std::map<AllocationKey, std::uint64_t> address_of;
  std::map<std::pair<std::string, std::uint64_t>, std::uint64_t> ordinals;
  std::map<std::string, std::uint64_t> launches_of;
  std::map<std::string, std::uint64_t> graph_launches_of;
  // The k-th measured launch of `kernel` in `from` in the traced run's
  // addresses, anchored to the traced launch's arguments; empty where the
  // runs differ or it was not measured.
  const auto translated =
      [&](const std::map<std::string, std::vector<MeasuredLaunch>>& from,
          std::map<std::string, std::uint64_t>& seen, const std::string& kernel,
          const std::vector<std::uint64_t>& ptrs,
          const std::vector<std::uint64_t>& struct_ptrs) -> std::optional<MeasuredAccesses> {
    const std::uint64_t k = seen[kernel]++;
    const auto it = from.find(kernel);
    if (it == from.end() || k >= it->second.size() || !it->second[k].measured) return std::nullopt;
    const MeasuredLaunch& m = it->second[k];
    MeasuredAccesses accesses;
    accesses.exact = m.exact;
    bool whole = true;
    const auto translate = [&](const std::vector<Piece>& pieces, auto& to) {
      for (const Piece& p : pieces) {
        if (const auto at = anchored(p, m, ptrs, struct_ptrs)) {
          to.emplace_back(*at, p.bytes);
          continue;
        }
        const auto a = address_of.find(p.allocation);
        if (a == address_of.end()) {
          whole = false;  // an allocation the traced run did not make (yet): the runs differ
          continue;
        }
        to.emplace_back(a->second + p.offset, p.bytes);
      }
    };
    translate(m.reads, accesses.reads);
    translate(m.writes, accesses.writes);
    if (!whole) return std::nullopt;
    if (!accesses.exact) ++join.inexact;
    ++join.joined;
    return accesses;
  };
  for (const Call* c : calls) {
    if (c->status != 0) continue;
    if (c->cls == call_class::alloc && c->ptr != 0) {
      const std::string kind = traced_kind(c->memory);
      if (kind.empty()) continue;
      address_of[{kind, c->bytes, ordinals[{kind, c->bytes}]++}] = c->ptr;
    } else if (c->cls == call_class::launch && !c->kernel.empty() && !captured.contains(c->corr)) {
      ++join.traced_launches;
      if (auto accesses = translated(measured.launches, launches_of, c->kernel, c->ptrs, c->struct_ptrs))
        trace.measured[c->corr] = std::move(*accesses);
    } else if (const auto records = graph_kernels.find(c->corr); records != graph_kernels.end()) {
      // A graph launch: its kernel nodes, each anchored to the arguments it was made with.
      for (const DeviceWork* w : records->second) {
        ++join.traced_launches;
        const NodeArguments args = node_arguments(trace, node_calls, w->node);
        auto accesses =
            translated(measured.graph_launches, graph_launches_of, w->name, args.ptrs, args.struct_ptrs);
        if (accesses && args.known) trace.measured_nodes[{c->corr, w->node}] = std::move(*accesses);
      }
    }
  }
  return join;
}

namespace {

/// One `accesses` record: a launch call's (`node` 0) or a graph kernel node's.
std::string accesses_record(std::uint64_t corr, std::uint64_t node, const MeasuredAccesses& m) {
  nlohmann::json r{{"t", "accesses"}, {"corr", corr}};
  if (node != 0) r["node"] = node;
  const auto flat = [](const auto& pairs) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [address, bytes] : pairs) {
      list.push_back(address);
      list.push_back(bytes);
    }
    return list;
  };
  r["reads"] = flat(m.reads);
  r["writes"] = flat(m.writes);
  if (!m.exact) r["exact"] = false;
  return r.dump() + "\n";
}

}  // namespace

std::string measured_records(const RawTrace& trace) {
  std::string out;
  for (const auto& [corr, m] : trace.measured) out += accesses_record(corr, 0, m);
  for (const auto& [key, m] : trace.measured_nodes) out += accesses_record(key.first, key.second, m);
  return out;
}

}  // namespace overlap::trace
