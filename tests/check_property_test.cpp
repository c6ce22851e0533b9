// The race detector against a brute-force reference on thousands of random
// programs: the reference builds the happens-before graph explicitly, one
// edge per CUDA ordering rule, takes its transitive closure, and enumerates
// every conflicting unordered pair. The detector must report exactly that
// set, and HappensBefore must agree with the closure on every pair of ops.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "overlap/check/happens_before.hpp"
#include "overlap/check/races.hpp"
#include "overlap/core/program.hpp"

namespace {

using namespace overlap;
using Pairs = std::set<std::pair<op_id, op_id>>;

// ---- the reference ---------------------------------------------------------

/// reach[i][j]: op i happens before op j, from explicit edges and their closure.
class ReferenceOrder {
 public:
  explicit ReferenceOrder(const Program& p) : n_(p.ops().size()), reach_(n_, std::vector<char>(n_, 0)) {
    const auto& ops = p.ops();
    const auto& streams = p.streams();
    const auto blocking = [&](stream_id s) {
      return streams[s].kind == stream_kind::blocking || streams[s].kind == stream_kind::per_thread_default;
    };
    std::vector<std::optional<op_id>> last_on(streams.size());
    std::vector<std::optional<op_id>> last_record(p.events().size());
    std::optional<stream_id> legacy;
    for (stream_id s = 0; s < streams.size(); ++s) {
      if (streams[s].kind == stream_kind::legacy_default) legacy = s;
    }
    for (op_id j = 0; j < n_; ++j) {
      const Op& op = ops[j];
      if (is_stream_op(op.kind)) {
        const stream_id s = *op.stream;
        if (last_on[s]) edge(*last_on[s], j);  // stream order
        if (streams[s].kind == stream_kind::legacy_default) {
          for (stream_id b = 0; b < streams.size(); ++b) {  // the legacy stream waits for blocking ones
            if (blocking(b) && last_on[b]) edge(*last_on[b], j);
          }
        } else if (blocking(s) && legacy && last_on[*legacy]) {
          edge(*last_on[*legacy], j);  // ... and they wait for it
        }
        if (op.kind == op_kind::stream_wait_event && last_record[*op.event]) edge(*last_record[*op.event], j);
        last_on[s] = j;
        if (op.kind == op_kind::event_record) last_record[*op.event] = j;
      } else {
        switch (op.kind) {
          case op_kind::stream_synchronize:
            if (last_on[*op.stream]) edge(*last_on[*op.stream], j);
            break;
          case op_kind::event_synchronize:
            if (last_record[*op.event]) edge(*last_record[*op.event], j);
            break;
          case op_kind::host_work: break;
          default:  // device synchronize, allocation, free: every stream op so far
            for (op_id i = 0; i < j; ++i) {
              if (is_stream_op(ops[i].kind)) edge(i, j);
            }
        }
      }
      // The host thread: its own calls and the copies it blocked on precede
      // everything it issues afterwards.
      for (op_id i = 0; i < j; ++i) {
        const Op& before = ops[i];
        const bool blocking_copy = before.kind == op_kind::copy && (before.mode == call_mode::synchronous ||
                                                                    before.memory == host_memory::pageable);
        if (!is_stream_op(before.kind) || blocking_copy) edge(i, j);
      }
    }
    // Transitive closure (Floyd-Warshall). Every edge points forward in issue
    // order, so paths through k only join i < k to j > k.
    for (std::size_t k = 0; k < n_; ++k) {
      for (std::size_t i = 0; i < k; ++i) {
        if (!reach_[i][k]) continue;
        for (std::size_t j = k + 1; j < n_; ++j) {
          reach_[i][j] = static_cast<char>(reach_[i][j] | reach_[k][j]);
        }
      }
    }
  }

  [[nodiscard]] bool ordered(op_id a, op_id b) const { return reach_[a][b] != 0; }

 private:
  void edge(op_id from, op_id to) { reach_[from][to] = 1; }

  std::size_t n_;
  std::vector<std::vector<char>> reach_;  // char, not bool: the closure is the hot loop
};

bool accesses_conflict(const Access& a, const Access& b) {
  if (a.buffer != b.buffer) return false;
  if (a.mode == access_mode::read && b.mode == access_mode::read) return false;
  const std::uint64_t inf = UINT64_MAX;
  const std::uint64_t a_end = a.size ? a.offset + *a.size : inf;
  const std::uint64_t b_end = b.size ? b.offset + *b.size : inf;
  return std::max(a.offset, b.offset) < std::min(a_end, b_end);
}

Pairs reference_races(const Program& p, const ReferenceOrder& order) {
  Pairs pairs;
  const auto& ops = p.ops();
  for (op_id i = 0; i < ops.size(); ++i) {
    for (op_id j = i + 1; j < ops.size(); ++j) {
      if (order.ordered(i, j) || order.ordered(j, i)) continue;
      for (const Access& a : ops[i].accesses) {
        for (const Access& b : ops[j].accesses) {
          if (accesses_conflict(a, b)) pairs.emplace(i, j);
        }
      }
    }
  }
  return pairs;
}

// ---- random programs -------------------------------------------------------

struct Shape {
  std::size_t min_ops = 1;
  std::size_t max_ops = 12;
  std::size_t buffers = 3;
  std::uint64_t max_offset = 8;
  std::uint64_t max_size = 8;
};

class Generator {
 public:
  Generator(std::uint32_t seed, Shape shape) : rng_(seed), shape_(shape) {}

  Program program() {
    Program p;
    const std::size_t streams = pick(1, 4);
    for (std::size_t s = 0; s < streams; ++s) {
      static constexpr stream_kind kinds[] = {stream_kind::blocking, stream_kind::non_blocking,
                                              stream_kind::per_thread_default};
      p.add_stream("s" + std::to_string(s), kinds[pick(0, 2)]);
    }
    if (chance(0.6)) p.legacy_default_stream();
    const std::size_t events = pick(0, 3);
    for (std::size_t e = 0; e < events; ++e) p.add_event("e" + std::to_string(e));
    const std::size_t ops = pick(shape_.min_ops, shape_.max_ops);
    for (std::size_t i = 0; i < ops; ++i) p.append(op(p));
    return p;
  }

 private:
  Op op(const Program& p) {
    Op o;
    const auto stream = [&] { return static_cast<stream_id>(pick(0, p.streams().size() - 1)); };
    const auto event = [&] { return static_cast<event_id>(pick(0, p.events().size() - 1)); };
    const bool events = !p.events().empty();
    // Mostly work ops, so races are common; every other kind often enough.
    switch (pick(0, 15)) {
      case 0:
      case 1:
      case 2:
        o.kind = op_kind::copy;
        o.stream = stream();
        o.direction = static_cast<copy_direction>(pick(0, 2));
        o.mode = chance(0.2) ? call_mode::synchronous : call_mode::asynchronous;
        o.memory = chance(0.25) ? host_memory::pageable : host_memory::pinned;
        o.duration = 1.0;
        break;
      case 3:
      case 4:
        o.kind = op_kind::kernel;
        o.stream = stream();
        o.duration = 1.0;
        break;
      case 5:
        o.kind = op_kind::memset;
        o.stream = stream();
        o.duration = 1.0;
        break;
      case 6:
        o.kind = op_kind::host_function;
        o.stream = stream();
        o.duration = 1.0;
        break;
      case 7:
      case 8:
        if (!events) return op(p);
        o.kind = op_kind::event_record;
        o.stream = stream();
        o.event = event();
        break;
      case 9:
      case 10:
        if (!events) return op(p);
        o.kind = op_kind::stream_wait_event;
        o.stream = stream();
        o.event = event();
        break;
      case 11:
        o.kind = op_kind::stream_synchronize;
        o.stream = stream();
        break;
      case 12:
        if (!events) return op(p);
        o.kind = op_kind::event_synchronize;
        o.event = event();
        break;
      case 13:
        o.kind = chance(0.5) ? op_kind::device_synchronize
                             : static_cast<op_kind>(static_cast<int>(op_kind::device_allocate) + pick(0, 3));
        o.duration = 0.0;
        break;
      default:
        o.kind = op_kind::host_work;
        o.duration = 1.0;
        break;
    }
    // Work ops and host work touch buffers; now and then a call does too.
    const bool touches = is_work_op(o.kind) || o.kind == op_kind::host_work || chance(0.1);
    const std::size_t accesses = touches ? pick(0, 2) : 0;
    for (std::size_t a = 0; a < accesses; ++a) {
      Access access;
      access.buffer = std::string(1, static_cast<char>('a' + pick(0, shape_.buffers - 1)));
      access.offset = pick(0, shape_.max_offset);
      if (!chance(0.2)) access.size = pick(0, shape_.max_size);
      access.mode = chance(0.5) ? access_mode::write : access_mode::read;
      o.accesses.push_back(access);
    }
    return o;
  }

  std::size_t pick(std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  std::mt19937 rng_;
  Shape shape_;
};

Pairs detected(const Program& p) {
  Pairs pairs;
  for (const check::Race& r : check::find_races(p).races) {
    EXPECT_LT(r.first, r.second);
    EXPECT_TRUE(pairs.emplace(r.first, r.second).second) << "pair reported twice";
    // The reported accesses are the ones that conflict, and the bytes are theirs.
    const Access& a = p.ops()[r.first].accesses.at(r.first_access);
    const Access& b = p.ops()[r.second].accesses.at(r.second_access);
    EXPECT_TRUE(accesses_conflict(a, b));
    EXPECT_EQ(r.buffer, a.buffer);
    EXPECT_EQ(r.first_mode, a.mode);
    EXPECT_EQ(r.second_mode, b.mode);
    EXPECT_EQ(r.begin, std::max(a.offset, b.offset));
  }
  return pairs;
}

std::string dump(const Program& p) {
  std::string text;
  for (std::size_t s = 0; s < p.streams().size(); ++s) {
    text += "stream " + p.streams()[s].name + " " + std::string(to_string(p.streams()[s].kind)) + "\n";
  }
  for (std::size_t i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    text += std::to_string(i) + ": " + std::string(to_string(op.kind));
    if (op.stream) text += " s=" + p.streams()[*op.stream].name;
    if (op.event) text += " e=" + p.events()[*op.event];
    if (op.kind == op_kind::copy) {
      text += op.mode == call_mode::synchronous ? " sync" : " async";
      text += " " + std::string(to_string(op.memory));
    }
    for (const Access& a : op.accesses) {
      text += " " + std::string(a.mode == access_mode::write ? "W " : "R ") + a.buffer + "[" +
              std::to_string(a.offset) + ":" + (a.size ? std::to_string(a.offset + *a.size) : "") + "]";
    }
    text += "\n";
  }
  return text;
}

void check_against_reference(std::uint32_t seed, Shape shape, bool compare_clocks) {
  Generator generate(seed, shape);
  const Program p = generate.program();
  const ReferenceOrder order(p);
  if (compare_clocks) {
    const check::HappensBefore hb(p);
    for (op_id a = 0; a < p.ops().size(); ++a) {
      for (op_id b = 0; b < p.ops().size(); ++b) {
        ASSERT_EQ(hb.ordered(a, b), order.ordered(a, b))
            << "seed " << seed << ": ops " << a << " -> " << b << "\n"
            << dump(p);
      }
    }
  }
  const Pairs expected = reference_races(p, order);
  const Pairs found = detected(p);
  ASSERT_EQ(found, expected) << "seed " << seed << "\n" << dump(p);
}

TEST(CheckProperty, SmallRandomProgramsMatchTheBruteForceReference) {
  std::size_t racy = 0;
  for (std::uint32_t seed = 1; seed <= 5000; ++seed) {
    check_against_reference(seed, Shape{}, true);
    if (HasFatalFailure()) return;
    Generator generate(seed, Shape{});
    racy += check::find_races(generate.program()).races.empty() ? 0 : 1;
  }
  // The generator must produce both outcomes often, or the test proves little.
  EXPECT_GT(racy, 500u);
  EXPECT_LT(racy, 4500u);
}

TEST(CheckProperty, TwoBuffersOfFourBytesMatchTheReference) {
  for (std::uint32_t seed = 10'001; seed <= 13'000; ++seed) {
    check_against_reference(seed, Shape{1, 12, 2, 3, 4}, false);
    if (HasFatalFailure()) return;
  }
}

// Long programs on one small buffer: long per-timeline histories, so the
// detector's forgetting of what the host has waited for is exercised.
TEST(CheckProperty, LongProgramsMatchTheReference) {
  for (std::uint32_t seed = 20'001; seed <= 20'012; ++seed) {
    check_against_reference(seed, Shape{600, 700, 1, 0, 3}, false);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
