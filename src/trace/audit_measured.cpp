// What each check finding cost in the traced run, read off the measured
// Timeline and the calls' own host times.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "audit_detail.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace::detail {

namespace {

std::string ms_text(double ms) {
  return io::format_number(ms) + " ms";
}

double call_time(const Capture& run, op_id op) {
  return run.origin[op].call_end - run.origin[op].call_start;
}

bool on_legacy(const Program& p, const Op& op) {
  return op.stream && p.streams()[*op.stream].kind == stream_kind::legacy_default;
}

bool ordered_by_barrier(const Program& p, stream_id s) {
  const stream_kind kind = p.streams()[s].kind;
  return kind == stream_kind::blocking || kind == stream_kind::per_thread_default;
}

/// Which ops a measured cost counts: those whose call began in the steady
/// state, or all without phases.
struct Scope {
  const Capture& run;
  const Phases* phases = nullptr;
  [[nodiscard]] bool operator()(op_id op) const {
    return phases == nullptr || phases->in_steady(run.origin[op].call_start);
  }
  [[nodiscard]] std::vector<op_id> only(std::vector<op_id> ids) const {
    std::erase_if(ids, [this](op_id op) { return !(*this)(op); });
    return ids;
  }
};

std::vector<op_id> ops_where(const Program& p, auto&& predicate) {
  std::vector<op_id> ids;
  for (op_id i = 0; i < p.ops().size(); ++i) {
    if (predicate(p.ops()[i])) ids.push_back(i);
  }
  return ids;
}

/// The measured span of each stream op.
std::map<op_id, const Span*> spans_by_op(const Timeline& t) {
  std::map<op_id, const Span*> spans;
  for (const Span& s : t.spans) spans.emplace(s.op, &s);
  return spans;
}

// "1 pageable copy", "136 pageable copies", "2 calls".
std::string count_text(std::size_t n, std::string_view what) {
  if (n == 1) return fmt::format("1 {}", what);
  if (what.ends_with("copy")) return fmt::format("{} {}ies", n, what.substr(0, what.size() - 1));
  return fmt::format("{} {}s", n, what);
}

// How long the legacy default stream's ops held back work on blocking
// streams: for each such op and each blocking stream, the first op issued
// after it there waited from its issue (or its stream's previous op) until
// the barrier op ended.
MeasuredCost legacy_barrier_cost(const Capture& run, const Scope& scope) {
  const Program& p = run.program;
  const auto spans = spans_by_op(run.timeline);
  const auto instances = scope.only(ops_where(p, [&](const Op& op) {
    return on_legacy(p, op) && (op.kind == op_kind::copy || op.kind == op_kind::memset);
  }));
  // Where each op's stream stood when it was issued: the end of its stream's previous span.
  std::vector<double> previous_end(p.ops().size(), 0.0);
  {
    std::map<stream_id, double> stream_end;
    for (op_id i = 0; i < p.ops().size(); ++i) {
      const Op& op = p.ops()[i];
      if (!op.stream) continue;
      previous_end[i] = stream_end[*op.stream];
      if (const auto s = spans.find(i); s != spans.end()) stream_end[*op.stream] = s->second->end;
    }
  }
  std::vector<std::pair<double, double>> held_intervals;  // overlapping across streams: count wall time once
  double host_blocked = 0.0;
  std::set<stream_id> streams;
  for (const op_id x : instances) {
    const auto xs = spans.find(x);
    if (xs == spans.end()) continue;
    const double barrier_end = xs->second->end;
    if (p.ops()[x].mode == call_mode::synchronous) host_blocked += call_time(run, x);
    std::set<stream_id> done;
    // Ops issued after the barrier ended were not held; issue order is time order.
    for (op_id i = x + 1; i < p.ops().size() && run.origin[i].call_start < barrier_end; ++i) {
      const Op& op = p.ops()[i];
      if (!op.stream || !is_work_op(op.kind) || on_legacy(p, op) || !ordered_by_barrier(p, *op.stream))
        continue;
      if (!done.insert(*op.stream).second) continue;
      const auto s = spans.find(i);
      if (s == spans.end()) continue;
      const double ready = std::max(run.origin[i].call_end, previous_end[i]);
      if (s->second->start + 1e-6 >= barrier_end && barrier_end > ready) {
        held_intervals.emplace_back(ready, barrier_end);
        streams.insert(*op.stream);
      }
    }
  }
  std::sort(held_intervals.begin(), held_intervals.end());
  double held = 0.0;
  double covered = 0.0;
  for (const auto& [from, to] : held_intervals) {
    const double start = std::max(from, covered);
    if (to > start) held += to - start;
    covered = std::max(covered, to);
  }
  std::vector<std::string> names;
  names.reserve(streams.size());
  for (const stream_id s : streams) names.push_back(p.streams()[s].name);
  std::string text =
      fmt::format("the legacy default stream held back work on {} during {} of the run, over {}",
                  names.empty() ? std::string("no stream") : fmt::format("{}", fmt::join(names, ", ")),
                  ms_text(held), count_text(instances.size(), "call"));
  if (host_blocked > 0.0) text += fmt::format(", and the host sat blocked {} in them", ms_text(host_blocked));
  return {held, text, instances.size()};
}

MeasuredCost host_blocked_cost(const Capture& run, const std::vector<op_id>& ops, std::string_view what) {
  double blocked = 0.0;
  for (const op_id op : ops) blocked += call_time(run, op);
  std::string text =
      fmt::format("the host sat blocked {} in {}", ms_text(blocked), count_text(ops.size(), what));
  if (const std::string ranges = ranges_of(run, ops); !ranges.empty())
    text += fmt::format(" (NVTX ranges: {})", ranges);
  return {blocked, text, ops.size()};
}

// The host's time in pageable copies: each cudaMemcpyAsync's call, and each
// cudaGraphLaunch with a pageable memcpy node once (the launch holds the host
// while the driver stages the node's copy; its nodes share the one call).
MeasuredCost pageable_cost(const Capture& run, const Scope& scope) {
  const Program& p = run.program;
  const auto ids = scope.only(ops_where(p, [&](const Op& op) {
    // On any stream: the legacy one's block the host the same way.
    return op.kind == op_kind::copy && op.mode == call_mode::asynchronous &&
           op.memory == host_memory::pageable && op.direction != copy_direction::d2d;
  }));
  std::vector<op_id> calls;
  std::vector<op_id> launches;  // the first pageable node of each launch
  std::set<std::size_t> seen;
  for (const op_id op : ids) {
    if (!p.ops()[op].graph_node) {
      calls.push_back(op);
    } else if (const auto call = run.origin[op].call; call && seen.insert(*call).second) {
      launches.push_back(op);
    }
  }
  if (launches.empty()) return host_blocked_cost(run, calls, "pageable copy");
  double in_calls = 0.0;
  for (const op_id op : calls) in_calls += call_time(run, op);
  double in_launches = 0.0;
  for (const op_id op : launches) in_launches += call_time(run, op);
  const std::size_t nodes = ids.size() - calls.size();
  std::string text = "the host sat blocked ";
  if (!calls.empty())
    text += fmt::format("{} in {} and ", ms_text(in_calls), count_text(calls.size(), "pageable copy"));
  text += fmt::format("{} in {} staging {} pageable memcpy node{}", ms_text(in_launches),
                      count_text(launches.size(), "cudaGraphLaunch call"), nodes, nodes == 1 ? "" : "s");
  std::vector<op_id> all = calls;
  all.insert(all.end(), launches.begin(), launches.end());
  if (const std::string ranges = ranges_of(run, all); !ranges.empty())
    text += fmt::format(" (NVTX ranges: {})", ranges);
  const double blocked = in_calls + in_launches;
  return {blocked, text, calls.size() + launches.size()};
}

// Every allocation and free made while the device worked (allocations_in_run),
// and how many of them drained the device first.
MeasuredCost allocation_cost(const Capture& run, const Scope& scope) {
  const std::vector<op_id> ids = scope.only(allocations_in_run(run));
  double spent = 0.0;
  std::size_t drained = 0;
  for (const op_id op : ids) {
    spent += call_time(run, op);
    if (is_implicitly_synchronizing(run.program.ops()[op].kind)) ++drained;
  }
  std::string text =
      fmt::format("the host spent {} in {} while the device worked, {} waiting for it to drain",
                  ms_text(spent), count_text(ids.size(), "allocation or free call"),
                  drained == ids.size() ? std::string("each") : fmt::format("{} of them", drained));
  if (const std::string ranges = ranges_of(run, ids); !ranges.empty())
    text += fmt::format(" (NVTX ranges: {})", ranges);
  return {spent, text, ids.size()};
}

// Copies listed by the serialization finding: how long each waited for the
// copy engine after it was ready to run.
MeasuredCost queued_cost(const Capture& run, const check::Finding& f, const Scope& scope) {
  const auto spans = spans_by_op(run.timeline);
  double queued = 0.0;
  std::vector<op_id> ids;
  for (const check::OpRef& ref : f.ops) {
    if (scope(ref.id)) ids.push_back(ref.id);
  }
  std::sort(ids.begin(), ids.end());
  for (const op_id id : ids) {
    const auto s = spans.find(id);
    if (s == spans.end()) continue;
    double ready = run.origin[id].call_end;
    // The op before it on its own stream.
    for (op_id i = id; i-- > 0;) {
      const Op& op = run.program.ops()[i];
      if (op.stream && *op.stream == s->second->stream) {
        if (const auto prev = spans.find(i); prev != spans.end()) ready = std::max(ready, prev->second->end);
        break;
      }
    }
    queued += std::max(0.0, s->second->start - ready);
  }
  return {queued, fmt::format("the copies waited {} in total for the copy engine", ms_text(queued)),
          ids.size()};
}

}  // namespace

std::string ranges_of(const Capture& run, const std::vector<op_id>& ops) {
  std::map<std::string, std::size_t> counts;
  for (const op_id op : ops) {
    const double at = run.origin[op].call_start;
    for (const CapturedRange& r : run.ranges) {
      if (r.start <= at && at <= r.end) ++counts[r.name];
    }
  }
  std::vector<std::string> parts;
  parts.reserve(counts.size());
  for (const auto& [name, n] : counts) parts.push_back(fmt::format("'{}' {}x", name, n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::optional<MeasuredCost> measured_cost(const Capture& run, const check::Finding& f, const Phases* phases) {
  const Program& p = run.program;
  const Scope scope{run, phases};
  if (f.rule == check::rules::legacy_default_stream) return legacy_barrier_cost(run, scope);
  if (f.rule == check::rules::synchronous_copy) {
    return host_blocked_cost(run,
                             scope.only(ops_where(p,
                                                  [&](const Op& op) {
                                                    return on_legacy(p, op) && op.kind == op_kind::copy &&
                                                           op.mode == call_mode::synchronous;
                                                  })),
                             "synchronous copy");
  }
  if (f.rule == check::rules::pageable_async_copy) return pageable_cost(run, scope);
  if (f.rule == check::rules::implicit_synchronization) return allocation_cost(run, scope);
  if (f.rule == check::rules::device_synchronize) {
    std::vector<op_id> ids;
    for (const check::OpRef& ref : f.ops) {
      const op_kind kind = p.ops()[ref.id].kind;
      if ((is_implicitly_synchronizing(kind) || kind == op_kind::device_synchronize) && scope(ref.id))
        ids.push_back(ref.id);
    }
    return host_blocked_cost(run, ids, "device-wide synchronize");
  }
  if (f.rule == check::rules::copy_engine_serialization) return queued_cost(run, f, scope);
  return std::nullopt;
}

}  // namespace overlap::trace::detail
