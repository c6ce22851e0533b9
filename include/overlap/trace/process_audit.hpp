// overlap::trace process audits: the audit of a multi-process job (torchrun,
// mpirun), one AuditReport per process, reported together: a line per rank
// with its collectives' overlap with compute and its GPU's idle time (the
// figures HTA gives per rank), then each rank's own report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "overlap/check/findings.hpp"
#include "overlap/trace/audit.hpp"

namespace overlap::trace {

/// One process's audit.
struct ProcessAudit {
  std::string name;          ///< "rank0", or "pid1234" (TracedProcess::name)
  std::optional<long> rank;  ///< its rank in the job, when a launcher set one
  std::uint64_t pid = 0;     ///< its process id
  std::string source;        ///< its trace (a file's path), may be empty
  AuditReport report;        ///< its audit
};

/// A job's audit: the launcher's command and exit code, and every process's.
struct JobAudit {
  std::vector<std::string> command;     ///< what was run (the launcher and its arguments)
  int exit_code = 0;                    ///< the launcher's exit code
  std::vector<ProcessAudit> processes;  ///< by rank, then pid

  /// True when some process's report has a finding at `level` or above.
  [[nodiscard]] bool fails(check::severity level) const noexcept;
};

/// The job's report for people: a line per process with its communication
/// figures, then each process's report (format_text) under its name.
[[nodiscard]] std::string format_text(const JobAudit& job,
                                      check::severity fail_on = check::severity::warning);
/// The job's report as JSON: command, exit code, and per process its name,
/// rank, pid, trace and report (format_json's object); docs/audit.md.
[[nodiscard]] std::string format_json(const JobAudit& job,
                                      check::severity fail_on = check::severity::warning);

}  // namespace overlap::trace
