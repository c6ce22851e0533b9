// The report's lines on the run's phases and host threads.
#include "audit_phases.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "overlap/io/exporters.hpp"

namespace overlap::trace::detail {

namespace {

using nlohmann::ordered_json;

std::string ms_text(double ms) {
  return io::format_number(ms) + " ms";
}

std::string percent(double part, double whole) {
  return whole > 0.0 ? io::format_number(std::round(100.0 * part / whole)) + "%" : "0%";
}

}  // namespace

std::string phases_text(const AuditReport& r) {
  const Phases& p = r.phases;
  const StartupBreakdown& b = p.startup;
  std::vector<std::string> parts;
  if (b.context > 0.0) parts.push_back("context creation (the first call) " + ms_text(b.context));
  if (b.modules > 0.0) parts.push_back("module loading and launches " + ms_text(b.modules));
  if (b.allocations > 0.0) parts.push_back("allocations " + ms_text(b.allocations));
  if (b.other > 0.0) parts.push_back("other calls and host work " + ms_text(b.other));
  std::string out = fmt::format("startup: {}, {} of the run{}\n", ms_text(p.startup_length()),
                                percent(p.startup_length(), p.end),
                                parts.empty() ? std::string() : fmt::format(": {}", fmt::join(parts, ", ")));
  out += fmt::format("steady state: {}, from {} to {}: {}; the findings and the verdict are about it\n",
                     ms_text(p.steady_length()), io::format_number(p.steady_start), ms_text(p.steady_end),
                     p.text);
  out += fmt::format("teardown: {}\n", ms_text(p.teardown_length()));
  for (const HostThreadUse& t : r.threads) {
    out += fmt::format("{}: issuing {}, waiting for the device {}", t.name, ms_text(t.issuing),
                       ms_text(t.blocked));
    if (t.polling > 0.0) out += fmt::format(" ({} of it polling)", ms_text(t.polling));
    out += fmt::format(", own work {} in the steady state\n", ms_text(t.work));
  }
  return out;
}

ordered_json phases_json(const AuditReport& r) {
  const Phases& p = r.phases;
  return {{"source", p.source},
          {"text", p.text},
          {"range", p.range.empty() ? ordered_json(nullptr) : ordered_json(p.range)},
          {"period", p.period},
          {"repetitions", p.repetitions},
          {"startup_ms", p.startup_length()},
          {"startup_fraction", p.end > 0.0 ? p.startup_length() / p.end : 0.0},
          {"steady_start_ms", p.steady_start},
          {"steady_end_ms", p.steady_end},
          {"steady_ms", p.steady_length()},
          {"teardown_ms", p.teardown_length()},
          {"end_ms", p.end},
          {"startup",
           {{"context_ms", p.startup.context},
            {"modules_ms", p.startup.modules},
            {"allocations_ms", p.startup.allocations},
            {"other_ms", p.startup.other}}}};
}

ordered_json host_threads_json(const AuditReport& r) {
  ordered_json threads = ordered_json::array();
  for (const HostThreadUse& t : r.threads)
    threads.push_back({{"name", t.name},
                       {"issuing_ms", t.issuing},
                       {"blocked_ms", t.blocked},
                       {"polling_ms", t.polling},
                       {"work_ms", t.work}});
  return threads;
}

}  // namespace overlap::trace::detail

namespace overlap::trace {

std::vector<std::string> phase_lines(const AuditReport& report) {
  // One source for both reports: the lines format_text prints, split.
  const std::string text = detail::phases_text(report);
  std::vector<std::string> lines;
  std::size_t from = 0;
  for (std::size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', from)) {
    lines.push_back(text.substr(from, end - from));
    from = end + 1;
  }
  if (from < text.size()) lines.push_back(text.substr(from));
  return lines;
}

}  // namespace overlap::trace
