// Trap rules about copies: (a) copies and memsets on the legacy default
// stream, (b) cudaMemcpyAsync and graph memcpy nodes from pageable memory.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "access_history.hpp"
#include "overlap/check/happens_before.hpp"
#include "trap_context.hpp"

namespace overlap::check::detail {

namespace {

bool on_legacy(const Program& p, const Op& op) {
  return op.stream && p.streams()[*op.stream].kind == stream_kind::legacy_default;
}

// How far ahead to look for a copy's consumer: past it the repair uses a new
// stream (still correct, the orderings are restored), and the search stays
// linear for programs with many default-stream copies.
constexpr std::size_t consumer_horizon = 4096;

// The first later op on an ordinary stream that touches what `op` touches:
// where the copy's result is needed, so the copy can run in its stream.
std::optional<op_id> first_consumer(const Program& p, op_id op) {
  const Op& x = p.ops()[op];
  if (x.accesses.empty()) return std::nullopt;
  const std::size_t end = std::min(p.ops().size(), op + 1 + consumer_horizon);
  for (auto i = static_cast<std::size_t>(op) + 1; i < end; ++i) {
    const Op& later = p.ops()[i];
    if (is_stream_op(later.kind) && !on_legacy(p, later) && conflict(x, later)) return static_cast<op_id>(i);
  }
  return std::nullopt;
}

// Streams with work the host has not waited for when each op is issued.
std::map<op_id, std::vector<stream_id>> in_flight_at(const Program& p, const std::vector<op_id>& ops) {
  std::map<op_id, std::vector<stream_id>> result;
  const std::set<op_id> wanted(ops.begin(), ops.end());
  ClockWalker walker(p);
  while (!walker.done()) {
    if (wanted.contains(walker.next())) {
      auto& streams = result[walker.next()];
      // Only streams with work can have any in flight.
      for (const stream_id s : walker.timelines().streams_with_work()) {
        if (walker.in_flight(s)) streams.push_back(s);
      }
    }
    walker.step();
  }
  return result;
}

std::vector<op_id> sorted_unique(std::vector<op_id> ops) {
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

/// Rule (a)'s repair: where each default-stream copy or memset goes.
struct LegacyRepair {
  std::vector<op_id> instances;
  std::map<op_id, stream_id> target;  // in the repaired program
  std::map<op_id, op_id> consumer;    // when the target is a consumer's stream
  EditedProgram repaired;
};

LegacyRepair plan_legacy_repair(const Program& p, std::vector<op_id> instances) {
  LegacyRepair plan;
  plan.instances = std::move(instances);
  ProgramEditor editor(p);
  std::optional<stream_id> fresh;
  for (const op_id x : plan.instances) {
    if (const auto c = first_consumer(p, x)) {
      plan.consumer[x] = *c;
      plan.target[x] = *p.ops()[*c].stream;
    } else {
      if (!fresh) fresh = editor.add_stream("async_copies", stream_kind::non_blocking);
      plan.target[x] = *fresh;
    }
  }
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const auto t = plan.target.find(i);
    if (t == plan.target.end()) {
      editor.keep(i);
      continue;
    }
    Op moved = p.ops()[i];
    moved.stream = t->second;
    moved.mode = call_mode::asynchronous;
    moved.memory = host_memory::pinned;
    editor.emit(std::move(moved), i);
  }
  plan.repaired = std::move(editor).finish();
  return plan;
}

/// True when some stream waits for the legacy default stream (and it for them).
bool has_barrier(const Program& p) {
  return std::any_of(p.streams().begin(), p.streams().end(), [](const Stream& s) {
    return s.kind == stream_kind::blocking || s.kind == stream_kind::per_thread_default;
  });
}

bool all_synchronous_copies(const Program& p, const std::vector<op_id>& ops) {
  return std::all_of(ops.begin(), ops.end(), [&](op_id i) {
    return p.ops()[i].kind == op_kind::copy && p.ops()[i].mode == call_mode::synchronous;
  });
}

bool ordered_by_barrier(const Program& p, stream_id s) {
  const stream_kind kind = p.streams()[s].kind;
  return kind == stream_kind::blocking || kind == stream_kind::per_thread_default;
}

// The legacy default stream's copies and memsets whose barrier orders
// something: when issued, a blocking stream had work the host had not
// waited for (the op waits for it), or a blocking stream was given work
// before the host knew the op was done (that work waits for it). A copy made
// before any blocking stream has work, or after the host waited for all of
// theirs, and waited for before the next, holds back nothing: the streams
// merely exist.
std::set<op_id> barrier_effective(const Program& p, const std::vector<op_id>& instances) {
  std::set<op_id> effective;
  const std::set<op_id> wanted(instances.begin(), instances.end());
  std::vector<std::pair<op_id, Epoch>> pending;  // stepped, not known complete by the host
  ClockWalker walker(p);
  while (!walker.done()) {
    const op_id i = walker.next();
    const Op& op = p.ops()[i];
    if (wanted.contains(i)) {
      for (const stream_id s : walker.timelines().streams_with_work()) {
        if (ordered_by_barrier(p, s) && walker.in_flight(s)) {
          effective.insert(i);
          break;
        }
      }
    } else if (op.stream && is_work_op(op.kind) && ordered_by_barrier(p, *op.stream)) {
      for (const auto& [x, at] : pending) {
        if (walker.host_known()[at.timeline] < at.sequence) effective.insert(x);
      }
      pending.clear();
    }
    walker.step();
    if (wanted.contains(i)) pending.emplace_back(i, walker.epoch());
    std::erase_if(pending,
                  [&](const auto& x) { return walker.host_known()[x.second.timeline] >= x.second.sequence; });
  }
  return effective;
}

/// Rule (a)'s instances: the legacy default stream's copies and memsets in
/// a program that also uses other streams, less, when blocking streams
/// exist, the asynchronous ones whose barrier orders nothing (a pageable one
/// of those is rule (b)'s).
struct LegacyInstances {
  std::vector<op_id> ops;      ///< in issue order
  bool barrier = false;        ///< blocking streams exist: the legacy stream is a barrier to them
  bool other_streams = false;  ///< other streams have work: without, nothing could overlap
};

LegacyInstances legacy_instances(const Program& p) {
  LegacyInstances result;
  bool other_streams_work = false;
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (!is_work_op(op.kind)) continue;
    if (!on_legacy(p, op)) {
      other_streams_work = true;
    } else if (op.kind == op_kind::copy || op.kind == op_kind::memset) {
      result.ops.push_back(i);
    }
  }
  // A program that only uses the default stream has nothing to overlap.
  if (!other_streams_work) return {};
  result.other_streams = true;
  if (!has_barrier(p)) return result;
  const std::set<op_id> effective = barrier_effective(p, result.ops);
  // A synchronous copy among blocking streams keeps the rule's name: the
  // host blocked in it is what delays the other streams' next work.
  result.barrier = true;
  // A synchronous copy still blocks the host, barrier or not.
  std::erase_if(result.ops, [&](op_id i) {
    return !effective.contains(i) &&
           !(p.ops()[i].kind == op_kind::copy && p.ops()[i].mode == call_mode::synchronous);
  });
  return result;
}

std::string legacy_message(const Program& p, op_id first, const std::vector<stream_id>& in_flight,
                           std::size_t instances, bool barrier) {
  const Op& x = p.ops()[first];
  const bool sync_copy = x.kind == op_kind::copy && x.mode == call_mode::synchronous;
  std::string message = fmt::format("{} runs on the legacy default stream", describe_op(p, first));
  if (barrier) {
    message += ": it waits for all earlier work on blocking streams and holds back all later work on them";
    if (sync_copy) message += ", and as a cudaMemcpy it blocks the host until it is done";
  } else if (sync_copy) {
    message += " as a cudaMemcpy: it blocks the host until it is done";
  }
  if (!in_flight.empty()) message += fmt::format(" ({} had work in flight)", stream_list(p, in_flight));
  if (instances > 1)
    message += fmt::format("; {} more such call{}", instances - 1, instances == 2 ? "" : "s");
  return message + ".";
}

std::string legacy_fix(const Program& p, const LegacyRepair& plan) {
  std::string fix;
  for (std::size_t i = 0; i < std::min<std::size_t>(plan.instances.size(), 3); ++i) {
    const op_id inst = plan.instances[i];
    const std::string call =
        p.ops()[inst].kind == op_kind::copy ? "a cudaMemcpyAsync from pinned memory" : "a cudaMemsetAsync";
    fix += i == 0 ? "Make " : "; make ";
    if (const auto c = plan.consumer.find(inst); c != plan.consumer.end()) {
      fix += fmt::format("ops[{}] {} on {}, the stream of its consumer ops[{}]", inst, call,
                         plan.repaired.program.streams()[plan.target.at(inst)].name, c->second);
    } else {
      fix += fmt::format("ops[{}] {} on a new non-blocking stream", inst, call);
    }
  }
  if (plan.instances.size() > 3) fix += fmt::format("; likewise the {} others", plan.instances.size() - 3);
  return fix + ".";
}

// Below this a copy is latency-bound: pinning it does not make it faster
// (the capture calibrates pageable rates only from larger copies too).
constexpr std::uint64_t latency_bound_bytes = std::uint64_t{64} * 1024;
// Host work shorter than this between calls is the calls' own overhead (the
// capture's min_host_work), not work the host could overlap with the copy.
constexpr double negligible_host_work = 0.01;

// A small pageable copy whose stream the host synchronizes on next, issuing
// nothing and doing no work of its own in between (the ops of the same graph
// launch aside): pinned, the host would wait in that synchronize instead, for
// a copy no faster, so pinning saves nothing (an 8-byte result read at once).
bool awaited_at_once(const Program& p, op_id copy) {
  const Op& x = p.ops()[copy];
  if (x.bytes >= latency_bound_bytes) return false;
  for (auto i = static_cast<std::size_t>(copy) + 1; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (x.graph_node && op.graph_node) continue;  // the rest of the launch's graph
    if (is_stream_op(op.kind) && op.kind != op_kind::copy && op.kind != op_kind::memset &&
        op.kind != op_kind::kernel && op.kind != op_kind::host_function)
      continue;  // a record or wait issues no work
    if (op.kind == op_kind::host_work && op.duration.value_or(0.0) < negligible_host_work) continue;
    if (op.kind == op_kind::device_synchronize) return true;
    return op.kind == op_kind::stream_synchronize && op.stream == x.stream;
  }
  return false;
}

// A graph's memcpy node too small for staging to cost anything (an 8-byte
// result read back): what holds cudaGraphLaunch there is the wait for the
// graph's earlier work, which the copy's result needs whatever its memory,
// so pinning saves nothing. The launch is still drawn as holding the host.
bool small_graph_node(const Op& op) {
  return op.graph_node && op.bytes < latency_bound_bytes;
}

// The pageable copies named by what ran them: cudaMemcpyAsync calls, and
// memcpy nodes of CUDA graphs, which the driver stages inside cudaGraphLaunch
// (the launch, not a copy call, holds the host).
std::string pageable_message(const Program& p, const std::vector<op_id>& instances) {
  std::vector<op_id> calls;
  std::vector<op_id> nodes;
  for (const op_id i : instances) (p.ops()[i].graph_node ? nodes : calls).push_back(i);
  std::string message;
  if (!calls.empty()) {
    message = fmt::format(
        "cudaMemcpyAsync from pageable memory ({}): the driver stages the data through a pinned buffer while "
        "the host waits, so the host issues nothing else until the copy is done",
        op_list(p, calls));
  }
  if (!nodes.empty()) {
    if (!message.empty()) message += "; and ";
    message += fmt::format(
        "{} memcpy node{} of a CUDA graph on pageable host memory ({}), run by cudaGraphLaunch rather than a "
        "cudaMemcpyAsync: the driver stages each through a pinned buffer inside the launch, so "
        "cudaGraphLaunch holds the host until the graph's copy is done",
        nodes.size() == 1 ? "A" : fmt::format("{}", nodes.size()), nodes.size() == 1 ? "" : "s",
        op_list(p, nodes));
  }
  return message + ".";
}

}  // namespace

void find_legacy_default_stream(TrapContext& context, std::vector<Finding>& findings) {
  const Program& p = context.program();
  LegacyInstances instances = legacy_instances(p);
  if (instances.ops.empty()) return;
  const bool barrier = instances.barrier;

  const LegacyRepair plan = plan_legacy_repair(p, std::move(instances.ops));
  const RepairCost cost = context.price(plan.repaired);
  if (!context.matters(cost.time_lost)) return;

  const auto in_flight = in_flight_at(p, plan.instances);
  const op_id first = plan.instances.front();
  Finding f;
  f.level = severity::warning;
  // Without a barrier that orders something: what remains is the host
  // waiting in each synchronous copy.
  f.rule = std::string(barrier || !all_synchronous_copies(p, plan.instances) ? rules::legacy_default_stream
                                                                             : rules::synchronous_copy);
  f.message = legacy_message(p, first, in_flight.at(first), plan.instances.size(), barrier);
  f.fix = legacy_fix(p, plan) + restored_sentence(cost.restored);
  std::vector<op_id> involved = plan.instances;
  std::vector<stream_id> streams{*p.ops()[first].stream};
  for (const op_id inst : plan.instances) {
    if (const auto c = plan.consumer.find(inst); c != plan.consumer.end()) {
      involved.push_back(c->second);
      streams.push_back(plan.target.at(inst));
    }
    streams.insert(streams.end(), in_flight.at(inst).begin(), in_flight.at(inst).end());
  }
  f.ops = listed_refs(p, sorted_unique(involved));
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  for (const stream_id s : streams) f.streams.push_back(p.streams()[s].name);
  f.time_lost = cost.time_lost;
  findings.push_back(std::move(f));
}

void find_pageable_async_copies(TrapContext& context, std::vector<Finding>& findings) {
  const Program& p = context.program();
  std::vector<op_id> instances;
  // Copies that are rule (a)'s instances are its own, whose repair pins them
  // too; the legacy stream's others count where other streams could overlap
  // them (a program of the default stream alone has nothing to overlap).
  const LegacyInstances legacy = legacy_instances(p);
  const std::set<op_id> of_rule_a(legacy.ops.begin(), legacy.ops.end());
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    const bool elsewhere = on_legacy(p, op) ? !legacy.other_streams || of_rule_a.contains(i) : false;
    if (op.kind == op_kind::copy && op.mode == call_mode::asynchronous &&
        op.memory == host_memory::pageable && op.direction != copy_direction::d2d && !elsewhere &&
        !awaited_at_once(p, i) && !small_graph_node(op)) {
      instances.push_back(i);
    }
  }
  if (instances.empty()) return;
  // Pinning a copy gives back at most what it took on the baseline: the
  // host's time in its call (held while it was staged, and waiting for the
  // stream's earlier work) and its device time. Where a trap must save a
  // share of the run, set-up uploads of a long run save too little to be
  // worth simulating the repaired program.
  if (context.has_threshold()) {
    const std::set<op_id> pageable(instances.begin(), instances.end());
    const Timeline& base = context.baseline();
    double most_saved = 0.0;
    for (const HostSpan& h : base.host_spans)
      if (pageable.contains(h.op)) most_saved += h.end - h.start;
    for (const Span& sp : base.spans)
      if (pageable.contains(sp.op)) most_saved += sp.end - sp.start;
    if (!context.matters(most_saved)) return;
  }
  ProgramEditor editor(p);
  std::size_t next = 0;
  for (op_id i = 0; i < p.ops().size(); ++i) {
    if (next < instances.size() && instances[next] == i) {
      Op pinned = p.ops()[i];
      pinned.memory = host_memory::pinned;
      // A graph's memcpy node keeps its device record's time, measured
      // pageable: pinned, it runs at the model's pinned rate. A spec's
      // stated time is the program's own and stays.
      if (pinned.graph_node) pinned.duration.reset();
      editor.emit(std::move(pinned), i);
      ++next;
    } else {
      editor.keep(i);
    }
  }
  const RepairCost cost = context.price(std::move(editor).finish());
  if (!context.matters(cost.time_lost)) return;

  Finding f;
  f.level = severity::warning;
  f.rule = std::string(rules::pageable_async_copy);
  f.message = pageable_message(p, instances);
  const bool nodes =
      std::any_of(instances.begin(), instances.end(), [&](op_id i) { return p.ops()[i].graph_node; });
  f.fix = fmt::format(
      "Use pinned host memory (cudaMallocHost / cudaHostAlloc, cudaHostRegister on an existing buffer, "
      "pin_memory() in PyTorch) so the copies run asynchronously{}.{}",
      nodes
          ? " (for a graph's memcpy nodes: the host buffers they read or write, before the graph is captured "
            "or built)"
          : "",
      restored_sentence(cost.restored));
  f.ops = listed_refs(p, instances);
  std::vector<stream_id> streams;
  streams.reserve(instances.size());
  for (const op_id i : instances) streams.push_back(*p.ops()[i].stream);
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  for (const stream_id s : streams) f.streams.push_back(p.streams()[s].name);
  f.time_lost = cost.time_lost;
  findings.push_back(std::move(f));
}

}  // namespace overlap::check::detail
