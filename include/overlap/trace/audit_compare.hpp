// overlap::trace audit comparison: what changed between two audits of one
// app, before and after a fix (`overlap audit --compare BEFORE AFTER`).
//
// Each side is an AuditSummary: what a comparison needs of an audit report,
// taken from the report itself (summary_of) or from its saved JSON
// (summary_from_json), so raw traces, PyTorch profiles and `--json` output
// compare alike. Findings are matched by rule and the streams they involve:
// those only before are resolved, those only after are new, the rest kept
// (with their counts then and now).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/check/findings.hpp"
#include "overlap/trace/audit.hpp"

namespace overlap::trace {

/// One finding as a comparison sees it.
struct FindingSummary {
  std::string rule;                                  ///< "pageable-async-copy"
  check::severity level = check::severity::warning;  ///< its severity
  std::size_t count = 1;                             ///< occurrences of the pattern
  std::vector<std::string> streams;                  ///< the streams involved, as the report names them
  std::string message;                               ///< the report's message
};

/// One engine's busy time over the steady state.
struct EngineSummary {
  std::string engine;    ///< "compute", "H2D engine", ...
  double busy_ms = 0.0;  ///< busy in the steady state
};

/// What a comparison needs of one audit.
struct AuditSummary {
  std::string source;                    ///< the file it came from, for the report
  std::string command;                   ///< the audited app, its arguments joined
  std::string gpu;                       ///< the GPU it ran on
  double steady_ms = 0.0;                ///< the steady state's length
  std::string bound;                     ///< the verdict's bound ("copy engines", ...)
  std::string verdict;                   ///< the verdict's sentence
  std::vector<EngineSummary> engines;    ///< busiest first
  std::vector<FindingSummary> findings;  ///< in the report's order
};

/// A finding in both audits, or in one of them.
struct FindingChange {
  std::string rule;                                  ///< the rule
  std::vector<std::string> streams;                  ///< the streams involved
  check::severity level = check::severity::warning;  ///< its severity now (before, for a resolved one)
  std::size_t before = 0;                            ///< occurrences before (0: new)
  std::size_t after = 0;                             ///< occurrences after (0: resolved)
  std::string message;                               ///< the message now (before, for a resolved one)
};

/// An engine's busy and idle time before and after, over each steady state.
struct EngineChange {
  std::string engine;        ///< the engine
  double busy_before = 0.0;  ///< ms
  double busy_after = 0.0;   ///< ms
  double idle_before = 0.0;  ///< the steady state less busy, ms
  double idle_after = 0.0;   ///< ms
};

/// What changed between two audits.
struct AuditComparison {
  AuditSummary before;                  ///< the first audit
  AuditSummary after;                   ///< the second
  std::vector<EngineChange> engines;    ///< every engine busy in either, the busiest after first
  std::vector<FindingChange> resolved;  ///< only before
  std::vector<FindingChange> added;     ///< only after (new)
  std::vector<FindingChange> kept;      ///< in both

  /// before.steady_ms / after.steady_ms: above 1, the fix made the steady state shorter.
  [[nodiscard]] double speedup() const noexcept;
  /// Some new finding is at `level` or above.
  [[nodiscard]] bool adds(check::severity level) const noexcept;
};

/// The summary of a report made in this process; `source` names it.
[[nodiscard]] AuditSummary summary_of(const AuditReport& report, std::string source);
/// The summary of a report saved by `overlap audit --json`. Throws
/// overlap::invalid_input naming the field ("before.json: verdict.steady_ms:
/// is missing") for anything else.
[[nodiscard]] AuditSummary summary_from_json(std::string_view text, std::string source);
/// `text` starts like an audit report's JSON (an object with "findings" and
/// "verdict"), not a trace.
[[nodiscard]] bool looks_like_audit_json(std::string_view text) noexcept;

/// Compares two audits.
[[nodiscard]] AuditComparison compare(AuditSummary before, AuditSummary after);

/// The comparison for people; `fail_on` says which new findings fail it.
[[nodiscard]] std::string format_text(const AuditComparison& comparison, check::severity fail_on);
/// The comparison as JSON (docs/audit.md lists the fields).
[[nodiscard]] std::string format_json(const AuditComparison& comparison, check::severity fail_on);

}  // namespace overlap::trace
