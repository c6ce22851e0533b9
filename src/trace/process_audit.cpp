// A multi-process job's audit, reported together (process_audit.hpp).
#include "overlap/trace/process_audit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "audit_report_json.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace {

namespace {

// "rank0  collectives 12.3 ms, 61% overlapped with compute; GPU idle 3.2% of 95 ms"
std::string communication_line(const ProcessAudit& p, std::size_t width) {
  const AuditReport& r = p.report;
  std::string line = fmt::format("  {:<{}}  ", p.name, width);
  if (const auto& c = r.communication) {
    line += fmt::format(
        "collectives {} ms ({} kernels), {:.1f}% overlapped with compute ({} ms); GPU idle {:.1f}% of {} ms",
        io::format_number(c->communication), c->communication_kernels,
        100.0 * c->overlap_fraction().value_or(0.0), io::format_number(c->compute),
        100.0 * c->idle_fraction(), io::format_number(c->span));
    if (!c->shared_streams.empty())
      line += fmt::format("; collectives on the compute stream ('{}')", fmt::join(c->shared_streams, "', '"));
  } else {
    line += "no collective kernels in the steady state";
  }
  return line + fmt::format("  [{}; pid {}]\n", r.gpu.empty() ? std::string("GPU") : r.gpu, p.pid);
}

}  // namespace

bool JobAudit::fails(check::severity level) const noexcept {
  return std::any_of(processes.begin(), processes.end(),
                     [&](const ProcessAudit& p) { return p.report.fails(level); });
}

std::string format_text(const JobAudit& job, check::severity fail_on) {
  std::string out = fmt::format("overlap audit: {} (exit code {}): {} processes used CUDA\n",
                                fmt::join(job.command, " "), job.exit_code, job.processes.size());
  std::size_t width = 0;
  for (const ProcessAudit& p : job.processes) width = std::max(width, p.name.size());
  out += "communication and compute per process (steady state):\n";
  for (const ProcessAudit& p : job.processes) out += communication_line(p, width);
  for (const ProcessAudit& p : job.processes) {
    out += fmt::format("\n== {} (pid {}{}) ==\n", p.name, p.pid,
                       p.source.empty() ? std::string() : ", " + p.source);
    out += format_text(p.report, fail_on);
  }
  std::size_t failing = 0;
  for (const ProcessAudit& p : job.processes) failing += p.report.fails(fail_on) ? 1 : 0;
  out += fmt::format("\n{} of {} processes with findings at {} or above: {}\n", failing, job.processes.size(),
                     check::to_string(fail_on), job.fails(fail_on) ? "fail" : "pass");
  return out;
}

std::string format_json(const JobAudit& job, check::severity fail_on) {
  using nlohmann::ordered_json;
  ordered_json processes = ordered_json::array();
  for (const ProcessAudit& p : job.processes) {
    processes.push_back({{"name", p.name},
                         {"rank", p.rank ? ordered_json(*p.rank) : ordered_json(nullptr)},
                         {"pid", p.pid},
                         {"trace", p.source},
                         {"report", detail::report_json(p.report, fail_on)}});
  }
  const ordered_json j = {{"command", job.command},
                          {"exit_code", job.exit_code},
                          {"processes", processes},
                          {"fail_on", check::to_string(fail_on)},
                          {"fails", job.fails(fail_on)}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace overlap::trace
