// `overlap audit --compare BEFORE AFTER` (audit_compare.cpp).
#pragma once

#include <functional>
#include <string>

#include "overlap/check/findings.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/capture.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

/// Audits a captured trace with the command's options.
using AuditTrace = std::function<trace::AuditReport(const trace::Capture&)>;

/// Compares the audits of `before` and `after` (raw traces, audited with
/// `audit_trace`, or saved `--json` reports) and writes the comparison in
/// `format` (text, json, html) to `output` (standard output when empty).
/// Returns exit_findings when a new finding is at `fail_on` or above, else exit_ok.
int run_audit_compare(const std::string& before, const std::string& after, const AuditTrace& audit_trace,
                      const std::string& format, check::severity fail_on, const std::string& output,
                      Streams io);

}  // namespace overlap::cli
