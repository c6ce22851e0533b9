// map_streams: nodes onto a pool of streams, and the fewest event waits that
// order every edge crossing streams.
//
// Each node gets a vector clock over the pool's streams: per stream, how many
// of its nodes are known to finish before the node starts (through stream
// order and the waits chosen so far). A predecessor u on stream t is already
// ordered before v when v's stream's clock has clock[t] >= u's position; so
// v needs a wait for u only when neither its stream nor another predecessor
// it waits for covers u. Coverage by a set of clocks is coverage by one of
// them (a componentwise maximum), so keeping exactly the uncovered maximal
// predecessors is the minimum for the mapping.
#include "stream_mapping.hpp"

#include <algorithm>
#include <limits>

namespace overlap::graph::detail {

namespace {

constexpr node_id no_node = ~node_id{0};

class Clocks {
 public:
  Clocks(std::size_t nodes, std::uint32_t width) : width_(width), data_(nodes * width, 0) {}
  [[nodiscard]] std::uint32_t* of(node_id v) noexcept { return data_.data() + std::size_t{v} * width_; }
  [[nodiscard]] std::uint32_t width() const noexcept { return width_; }

 private:
  std::uint32_t width_;
  std::vector<std::uint32_t> data_;
};

}  // namespace

Mapping map_streams(const Dependencies& dependencies, const std::vector<bool>& critical,
                    const std::vector<double>& finish, const MappingOptions& options) {
  const std::size_t n = dependencies.predecessors.size();
  const std::uint32_t width = options.max_streams;
  Mapping m;
  m.stream_of.assign(n, 0);
  if (n == 0) return m;

  // Stream 0 is the critical path's own, at a higher priority, when there is
  // room for another stream beside it.
  const bool reserve = options.critical == critical_path::prioritize && width >= 2;
  const std::uint32_t first_shared = reserve ? 1 : 0;
  std::vector<std::uint32_t> count(width, 0);  // nodes on each stream so far
  std::vector<node_id> tail(width, no_node);
  std::vector<node_id> head(width, no_node);
  std::uint32_t used = reserve ? 1 : 0;
  std::vector<std::uint32_t> position(n, 0);  // 1-based, on the node's stream
  std::vector<std::uint32_t> rank(n, 0);      // place in the issue order
  for (std::uint32_t i = 0; i < n; ++i) rank[dependencies.order[i]] = i;

  Clocks clocks(n, width);
  std::vector<std::uint32_t> known(width);      // what v's stream already orders before v
  std::vector<node_id> latest(width, no_node);  // per stream, v's latest predecessor there
  std::vector<std::uint32_t> touched;
  std::vector<node_id> waited;

  for (const node_id v : dependencies.order) {
    const auto& preds = dependencies.predecessors[v];
    std::uint32_t s = 0;
    if (!(reserve && critical[v])) {
      // A predecessor at the end of its stream: continue that chain.
      node_id chain = no_node;
      for (const node_id u : preds) {
        const std::uint32_t t = m.stream_of[u];
        if (t >= first_shared && tail[t] == u && (chain == no_node || finish[u] > finish[chain])) chain = u;
      }
      if (chain != no_node) {
        s = m.stream_of[chain];
      } else {
        // A stream all of whose work precedes v, else a fresh one, else
        // (pool full) the one whose work should finish first.
        std::fill(known.begin(), known.end(), 0);
        for (const node_id u : preds) {
          const std::uint32_t* c = clocks.of(u);
          for (std::uint32_t t = 0; t < width; ++t) known[t] = std::max(known[t], c[t]);
        }
        std::uint32_t chosen = width;
        for (std::uint32_t t = first_shared; t < used && chosen == width; ++t) {
          if (known[t] >= count[t]) chosen = t;
        }
        if (chosen == width && used < width) chosen = used++;
        if (chosen == width) {
          chosen = first_shared;
          for (std::uint32_t t = first_shared + 1; t < used; ++t) {
            if (finish[tail[t]] < finish[tail[chosen]]) chosen = t;
          }
          ++m.false_dependencies;
        }
        s = chosen;
      }
    }
    m.stream_of[v] = s;

    // What s already orders before v: its tail's clock.
    std::uint32_t* own = clocks.of(v);
    if (tail[s] != no_node) std::copy_n(clocks.of(tail[s]), width, own);
    // Per other stream, the latest predecessor there (earlier ones on the same stream precede it).
    for (const node_id u : preds) {
      const std::uint32_t t = m.stream_of[u];
      if (t == s) continue;
      ++m.cross_stream_edges;
      if (latest[t] == no_node) {
        touched.push_back(t);
        latest[t] = u;
      } else if (position[u] > position[latest[t]]) {
        latest[t] = u;
      }
    }
    waited.clear();
    for (const std::uint32_t t : touched) {
      const node_id u = latest[t];
      bool covered = own[t] >= position[u];
      for (const std::uint32_t other : touched) {
        if (covered) break;
        if (other != t) covered = clocks.of(latest[other])[t] >= position[u];
      }
      if (!covered) waited.push_back(u);
    }
    for (const std::uint32_t t : touched) latest[t] = no_node;
    touched.clear();
    std::sort(waited.begin(), waited.end(), [&](node_id a, node_id b) { return rank[a] < rank[b]; });
    for (const node_id u : waited) {
      const std::uint32_t* c = clocks.of(u);
      for (std::uint32_t t = 0; t < width; ++t) own[t] = std::max(own[t], c[t]);
      m.waits.push_back({u, v});
    }
    position[v] = ++count[s];
    own[s] = position[v];
    if (head[s] == no_node) head[s] = v;
    tail[s] = v;
  }

  // Streams in use are 0..used-1 (stream 0 may be the critical path's and unused only when n == 0).
  m.priorities.assign(used, 0);
  if (reserve) m.priorities[0] = 1;
  m.heads.assign(head.begin(), head.begin() + used);
  m.tails.assign(tail.begin(), tail.begin() + used);
  return m;
}

}  // namespace overlap::graph::detail
