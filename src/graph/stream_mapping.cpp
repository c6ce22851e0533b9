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

// Lanes of a clock are handled in blocks of this many: fixed-length inner
// loops, which the compiler turns into vector instructions. Taking the
// maximum of a node's predecessors' clocks lane by lane (with a reload and
// a store per lane, the compiler fearing overlap) was over a third of the
// mapping's time for 100,000 nodes.
constexpr std::uint32_t block = 8;

// Per node, its clock: `width` lanes (a multiple of `block`), all zero at first.
class Clocks {
 public:
  Clocks(std::size_t nodes, std::uint32_t width) : width_(width), data_(nodes * width, 0) {}
  [[nodiscard]] std::uint32_t* of(node_id v) noexcept { return data_.data() + std::size_t{v} * width_; }

 private:
  std::uint32_t width_;
  std::vector<std::uint32_t> data_;
};

// into[t] = max(into[t], from[t]) for the first `lanes` lanes (a multiple of `block`).
void raise(std::uint32_t* into, const std::uint32_t* from, std::uint32_t lanes) noexcept {
  for (std::uint32_t b = 0; b < lanes; b += block) {
    std::uint32_t merged[block];  // a local: the compiler need not fear that `into` and `from` overlap
    for (std::uint32_t t = 0; t < block; ++t) merged[t] = std::max(into[b + t], from[b + t]);
    std::copy_n(merged, block, into + b);
  }
}

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

  // Lanes of streams not used yet are zero in every clock, so only the
  // blocks holding the streams used so far are merged and copied.
  const std::uint32_t padded = (width + block - 1) / block * block;
  const auto lanes_for = [&](std::uint32_t streams) { return (streams + block - 1) / block * block; };
  Clocks clocks(n, padded);
  std::vector<std::uint32_t> known(padded);              // what v's predecessors order before v
  std::vector<node_id> latest(width, no_node);           // per stream, v's latest predecessor there
  std::vector<std::uint32_t> latest_position(width, 0);  // its position there, 0 for none
  std::vector<std::uint32_t> touched(width);             // the other streams v has predecessors on
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
        const std::uint32_t lanes = lanes_for(used);
        // The first predecessor's clock copied, not zeros raised: reading
        // zeros just stored (by memset, in wider pieces) stalled each node.
        if (preds.empty()) {
          std::fill_n(known.begin(), lanes, 0);
        } else {
          std::copy_n(clocks.of(preds.front()), lanes, known.begin());
          for (std::size_t p = 1; p < preds.size(); ++p) raise(known.data(), clocks.of(preds[p]), lanes);
        }
        std::uint32_t chosen = width;
        for (std::uint32_t t = first_shared; t < used && chosen == width; ++t) {
          if (known[t] >= count[t]) chosen = t;
        }
        if (chosen == width && used < width) chosen = used++;
        if (chosen == width) {
          // Selects rather than branches: which tail finishes first is a
          // coin toss the branch predictor lost half the time.
          chosen = first_shared;
          double soonest = finish[tail[chosen]];
          for (std::uint32_t t = first_shared + 1; t < used; ++t) {
            const double f = finish[tail[t]];
            const bool sooner = f < soonest;
            chosen = sooner ? t : chosen;
            soonest = sooner ? f : soonest;
          }
          ++m.false_dependencies;
        }
        s = chosen;
      }
    }
    m.stream_of[v] = s;
    const std::uint32_t lanes = lanes_for(used);

    // What s already orders before v: its tail's clock.
    std::uint32_t* own = clocks.of(v);
    if (tail[s] != no_node) std::copy_n(clocks.of(tail[s]), lanes, own);
    // Per other stream, the latest predecessor there (earlier ones on the
    // same stream precede it). Without branches, which went each way at
    // random (is u on v's stream, on a stream met before, later there?):
    // each u's stream is written to `touched` and counted only when it is
    // another stream met for the first time, and v's own stream's entry is
    // dropped after.
    std::size_t touched_count = 0;
    for (const node_id u : preds) {
      const std::uint32_t t = m.stream_of[u];
      const std::uint32_t p = position[u];
      const bool cross = t != s;
      m.cross_stream_edges += cross ? 1 : 0;
      touched[touched_count] = t;
      touched_count += cross && latest_position[t] == 0 ? 1 : 0;
      const bool newer = p > latest_position[t];
      latest[t] = newer ? u : latest[t];
      latest_position[t] = newer ? p : latest_position[t];
    }
    latest[s] = no_node;
    latest_position[s] = 0;
    waited.clear();
    for (std::size_t i = 0; i < touched_count; ++i) {
      const std::uint32_t t = touched[i];
      const std::uint32_t p = latest_position[t];
      bool covered = own[t] >= p;
      for (std::size_t j = 0; j < touched_count && !covered; ++j) {
        if (j != i) covered = clocks.of(latest[touched[j]])[t] >= p;
      }
      if (!covered) waited.push_back(latest[t]);
    }
    for (std::size_t i = 0; i < touched_count; ++i) {
      latest[touched[i]] = no_node;
      latest_position[touched[i]] = 0;
    }
    std::sort(waited.begin(), waited.end(), [&](node_id a, node_id b) { return rank[a] < rank[b]; });
    for (const node_id u : waited) {
      raise(own, clocks.of(u), lanes);
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
