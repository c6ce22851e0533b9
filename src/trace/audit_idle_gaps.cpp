// Idle gaps: stretches of the run in which no engine of the device worked
// while the host sat inside a CUDA call that issues no work (an allocation,
// a registration, a long query). Only a measured run shows them: the
// Program charges such calls as host time, the Timeline shows the device
// waiting for them.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "audit_detail.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace::detail {

namespace {

struct Interval {
  double start = 0.0;
  double end = 0.0;
};

/// Stretches inside the device's active window in which no span ran.
std::vector<Interval> device_idle(const Timeline& t) {
  std::vector<Interval> busy;
  for (const Span& s : t.spans) {
    if (s.unit != engine::none && s.end > s.start) busy.push_back({s.start, s.end});
  }
  std::sort(busy.begin(), busy.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> idle;
  double covered = busy.empty() ? 0.0 : busy.front().end;
  for (const Interval& b : busy) {
    if (b.start > covered) idle.push_back({covered, b.start});
    covered = std::max(covered, b.end);
  }
  return idle;
}

// Calls that issue no device work and do not wait for it: while one runs
// with the device idle, the device waits for the host. Polls (the host asking
// whether work is done) and the runtime loading modules on first use are
// not the app's doing; managed memory's stream-ordered calls issue work.
bool issues_nothing(const Op& op, const OpOrigin& from) {
  if (!from.call) return false;
  if (op.kind != op_kind::host_work && !is_implicitly_synchronizing(op.kind)) return false;
  const std::string& api = from.api;
  const bool poll = api.ends_with("EventQuery") || api.ends_with("StreamQuery");
  // Kernel queries (occupancy, attributes) return in microseconds unless
  // they load the kernel's module (lazy loading): one long enough to hold
  // the device idle is loading.
  const bool loading = is_module_loading(api);
  // Building, instantiating, uploading, updating and destroying a graph, and
  // the stream capture that records one, are how graph work is issued (the
  // verdict counts them as issuing): set-up, not calls kept apart from the work.
  const bool graph = api.starts_with("cudaGraph") || api.starts_with("cuGraph") ||
                     api.find("StreamBeginCapture") != std::string::npos ||
                     api.find("StreamEndCapture") != std::string::npos;
  // A prefetch or attach is work in its stream's order (a migration, a
  // change of what may touch managed memory), made where the work needs it.
  const bool managed =
      api.find("MemPrefetch") != std::string::npos || api.find("AttachMem") != std::string::npos;
  return !poll && !loading && !graph && !managed;
}

// Length of the union of `intervals`.
double union_length(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  double total = 0.0;
  double covered = -1e300;
  for (const Interval& i : intervals) {
    const double from = std::max(i.start, covered);
    if (i.end > from) total += i.end - from;
    covered = std::max(covered, i.end);
  }
  return total;
}

}  // namespace

std::optional<AuditFinding> find_idle_gaps(const Capture& run, const DeviceModel& model,
                                           const AuditOptions& options, const std::set<op_id>& named,
                                           const Phases& phases, double min_saving) {
  const Program& p = run.program;
  std::map<op_id, double> idle_in;         // per call: idle device time while it ran
  std::map<op_id, std::size_t> gap_of;     // per call: the gap it ran in
  std::map<std::size_t, double> gap_idle;  // per gap: idle time some culprit covered
  std::map<std::size_t, double> gap_span;  // per gap: its length in the steady state
  std::map<std::string, std::set<std::size_t>> gaps_per_api;
  // The calls that could be culprits, by start: each gap looks only at
  // those that can overlap it (a long run has thousands of gaps and calls).
  std::vector<op_id> suspects;
  double longest = 0.0;
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const OpOrigin& from = run.origin[i];
    if (!issues_nothing(p.ops()[i], from) || named.contains(i)) continue;
    suspects.push_back(i);
    longest = std::max(longest, from.call_end - from.call_start);
  }
  std::stable_sort(suspects.begin(), suspects.end(),
                   [&](op_id a, op_id b) { return run.origin[a].call_start < run.origin[b].call_start; });
  std::size_t gap_index = 0;
  for (Interval gap : device_idle(run.timeline)) {
    ++gap_index;
    // Startup's set-up (allocations before the loop, a library's first use)
    // and teardown's frees are not what keeps the steady state from its floor.
    gap.start = std::max(gap.start, phases.steady_start);
    gap.end = std::min(gap.end, phases.steady_end);
    if (gap.end - gap.start < options.idle_gap_threshold) continue;
    // Every call that issues nothing and ran during the gap shares the blame
    // (a cudaMallocHost and its cudaFreeHost, say): the repair drops them all.
    std::map<op_id, double> culprits;
    std::vector<Interval> inside;  // the culprits' calls, clipped to the gap
    const auto first = std::lower_bound(suspects.begin(), suspects.end(), gap.start - longest,
                                        [&](op_id i, double t) { return run.origin[i].call_start < t; });
    for (auto it = first; it != suspects.end() && run.origin[*it].call_start < gap.end; ++it) {
      const op_id i = *it;
      const OpOrigin& from = run.origin[i];
      const Interval clipped{std::max(gap.start, from.call_start), std::min(gap.end, from.call_end)};
      if (clipped.end <= clipped.start) continue;
      culprits[i] = clipped.end - clipped.start;
      inside.push_back(clipped);
    }
    // The idle time some culprit was in: calls of several host threads at
    // once cover that time once, never more than the gap.
    const double covered = union_length(std::move(inside));
    if (covered < options.idle_gap_threshold) continue;
    for (const auto& [op, overlap] : culprits) {
      idle_in[op] += overlap;
      gap_of[op] = gap_index;
      gaps_per_api[run.origin[op].api].insert(gap_index);
    }
    gap_idle[gap_index] = covered;
    gap_span[gap_index] = gap.end - gap.start;
  }
  // A call that left the device idle in one gap only is set-up (a library's
  // first use, a graph built between two phases, two buffers allocated
  // before the loop): the rule is about calls made again and again between
  // pieces of work, so the same call must be in at least two gaps.
  for (auto it = idle_in.begin(); it != idle_in.end();) {
    if (gaps_per_api[run.origin[it->first].api].size() < 2) {
      it = idle_in.erase(it);
    } else {
      ++it;
    }
  }
  double total_idle = 0.0;
  double total_span = 0.0;
  std::set<std::size_t> kept_gaps;
  for (const auto& [op, idle] : idle_in) kept_gaps.insert(gap_of[op]);
  for (const std::size_t g : kept_gaps) {
    total_idle += gap_idle[g];
    total_span += gap_span[g];
  }
  // A share of the steady state too small to matter is not a finding
  // (PyTorch's caching allocator growing its pool, 0.6 ms of a 100 ms run,
  // is not): measured, not predicted, so not even a note.
  if (idle_in.empty() || total_idle < min_saving) return std::nullopt;

  std::vector<op_id> calls;
  std::set<op_id> dropped;
  std::map<std::string, std::size_t> apis;
  for (const auto& [op, idle] : idle_in) {
    calls.push_back(op);
    dropped.insert(op);
    ++apis[run.origin[op].api];
  }
  std::vector<std::string> api_counts;
  api_counts.reserve(apis.size());
  for (const auto& [api, n] : apis) api_counts.push_back(fmt::format("{} ({}x)", api, n));

  AuditFinding f;
  // "Again and again" needs a loop: where the trace shows none (the steady
  // state is only where device work ran), two gaps may be two set-up steps
  // between phases of a script, so the finding is listed, not warned about.
  const bool loop = phases.source == "repetition" || phases.source == "range" || phases.source == "profiler";
  // Where the calls fill only a small part of the gaps they are in, the host's
  // own work between them holds the device idle (hecbench-prefetch's loops
  // over 512 MiB of managed memory around each cudaFree): making the calls
  // once saves their time, but they are not what leaves the GPU waiting.
  const double share = total_span > 0.0 ? total_idle / total_span : 1.0;
  const bool calls_dominate = share >= 0.5;
  f.level = loop && calls_dominate ? check::severity::warning : check::severity::info;
  f.rule = std::string(rules::idle_gap);
  f.message = fmt::format(
      "In the steady state the device sat idle for {} ms, in gaps of at least {} ms, while the host was "
      "inside {}: calls that "
      "issue no work, made again and again between pieces of work, leave the GPU waiting for the host.",
      io::format_number(total_idle), io::format_number(options.idle_gap_threshold),
      fmt::join(api_counts, ", "));
  if (!calls_dominate) {
    f.message += fmt::format(
        " They fill {:.0f}% of those gaps ({} ms): the host's own work between the calls keeps the device "
        "idle longer.",
        100.0 * share, io::format_number(total_span));
  }
  f.fix =
      "Make these calls once, before the first work is issued (allocate and register buffers up front and "
      "reuse them), or keep work queued on a stream while they run.";
  f.ops = audit_ops(run, calls);
  f.measured = MeasuredCost{total_idle, fmt::format("the device sat idle {} ms with these calls in flight",
                                                    io::format_number(total_idle))};
  f.predicted_saving = saving_without(p, dropped, model);
  return f;
}

}  // namespace overlap::trace::detail
