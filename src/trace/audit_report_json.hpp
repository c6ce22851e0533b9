// The audit report as a JSON value, for format_json and for the reports
// that hold several (a multi-process job's, process_audit.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include "overlap/trace/audit.hpp"

namespace overlap::trace::detail {

/// format_json's object (docs/audit.md), not yet serialized.
[[nodiscard]] nlohmann::ordered_json report_json(const AuditReport& report, check::severity fail_on);

}  // namespace overlap::trace::detail
