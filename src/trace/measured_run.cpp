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
};

/// Where `p` lies in the traced run, anchored to the launch's arguments: the
/// argument (at the same position in both runs) that points into the
/// piece's allocation nearest below the piece, else any into it. A caching
/// allocator may hand a tensor another block in each run; the kernel still
/// finds it through its argument.
std::optional<std::uint64_t> anchored(const Piece& p, const MeasuredLaunch& m, const Call& traced) {
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
  consider(m.ptrs, traced.ptrs);
  consider(m.sptrs, traced.struct_ptrs);
  if (below) return below->second + (start - below->first);
  if (above && above->second >= above->first - start) return above->second - (above->first - start);
  return std::nullopt;
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
      launches[text(r, "kernel", "")].push_back(std::move(launch));
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

  std::map<AllocationKey, std::uint64_t> address_of;
  std::map<std::pair<std::string, std::uint64_t>, std::uint64_t> ordinals;
  std::map<std::string, std::uint64_t> launches_of;
  for (const Call* c : calls) {
    if (c->status != 0) continue;
    if (c->cls == call_class::alloc && c->ptr != 0) {
      const std::string kind = traced_kind(c->memory);
      if (kind.empty()) continue;
      address_of[{kind, c->bytes, ordinals[{kind, c->bytes}]++}] = c->ptr;
    } else if (c->cls == call_class::launch && !c->kernel.empty() && !captured.contains(c->corr)) {
      ++join.traced_launches;
      const std::uint64_t k = launches_of[c->kernel]++;
      const auto it = measured.launches.find(c->kernel);
      if (it == measured.launches.end() || k >= it->second.size()) continue;
      const MeasuredLaunch& m = it->second[k];
      MeasuredAccesses accesses;
      accesses.exact = m.exact;
      bool whole = true;
      const auto translate = [&](const std::vector<Piece>& from, auto& to) {
        for (const Piece& p : from) {
          if (const auto at = anchored(p, m, *c)) {
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
      if (!whole) continue;
      if (!accesses.exact) ++join.inexact;
      trace.measured[c->corr] = std::move(accesses);
      ++join.joined;
    }
  }
  return join;
}

std::string measured_records(const RawTrace& trace) {
  std::string out;
  for (const auto& [corr, m] : trace.measured) {
    nlohmann::json r{{"t", "accesses"}, {"corr", corr}};
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
    out += r.dump();
    out += '\n';
  }
  return out;
}

}  // namespace overlap::trace
