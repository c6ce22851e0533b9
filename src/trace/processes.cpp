// A multi-process job's traces named by rank and joined (processes.hpp).
#include "overlap/trace/processes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "overlap/core/error.hpp"

namespace overlap::trace {

namespace {

std::optional<long> as_rank(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  long value = -1;
  const char* end = text->data() + text->size();
  const auto [stop, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || stop != end || value < 0) return std::nullopt;
  return value;
}

constexpr double ms_per_ns = 1e-6;

}  // namespace

std::optional<long> process_rank(const RawTrace& trace) {
  for (const auto* variable : {&trace.env.rank, &trace.env.local_rank, &trace.env.mpi_rank})
    if (const std::optional<long> rank = as_rank(*variable)) return rank;
  return std::nullopt;
}

std::string process_name(const RawTrace& trace) {
  const std::optional<long> rank = process_rank(trace);
  return rank ? fmt::format("rank{}", *rank) : fmt::format("pid{}", trace.pid);
}

std::vector<TracedProcess> capture_processes(std::vector<ProcessTrace> traces) {
  std::vector<TracedProcess> out;
  out.reserve(traces.size());
  for (ProcessTrace& t : traces) {
    if (t.trace.calls.empty() && t.trace.work.empty())
      throw invalid_input(fmt::format("{}: holds no CUDA activity (no calls, no device work)", t.source));
    TracedProcess p;
    p.name = process_name(t.trace);
    p.rank = process_rank(t.trace);
    p.pid = t.trace.pid;
    p.source = t.source;
    p.capture = capture(t.trace);
    out.push_back(std::move(p));
  }
  std::stable_sort(out.begin(), out.end(), [](const TracedProcess& a, const TracedProcess& b) {
    if (a.rank.has_value() != b.rank.has_value()) return a.rank.has_value();
    if (a.rank != b.rank) return *a.rank < *b.rank;
    return a.pid < b.pid;
  });
  std::map<std::string, int> uses;
  for (const TracedProcess& p : out) ++uses[p.name];
  for (TracedProcess& p : out)
    if (uses[p.name] > 1) p.name += fmt::format(".pid{}", p.pid);
  return out;
}

JoinedRun join_processes(const std::vector<TracedProcess>& processes) {
  if (processes.empty()) throw invalid_input("no traced process to join");
  JoinedRun run;
  std::uint64_t origin = processes.front().capture.start_ns;
  for (const TracedProcess& p : processes) origin = std::min(origin, p.capture.start_ns);
  const Capture& first = processes.front().capture;
  run.program.name = first.program.name;
  run.program.time_unit = first.program.time_unit;
  run.timeline.program_name = first.program.name;
  run.timeline.time_unit = first.timeline.time_unit;
  run.timeline.device = first.timeline.device;
  run.timeline.host_threads.clear();
  for (std::size_t i = 0; i < processes.size(); ++i) {
    const TracedProcess& p = processes[i];
    const JoinedIds ids =
        append_on_device(run.program, p.capture.program, static_cast<device_id>(i), p.name + ".");
    const double offset = static_cast<double>(p.capture.start_ns - origin) * ms_per_ns;
    append_process(run.timeline, p.capture.timeline, ids, offset);
    run.parts.push_back(ids);
    run.offsets.push_back(offset);
  }
  run.timeline.streams = run.program.streams();
  return run;
}

}  // namespace overlap::trace
