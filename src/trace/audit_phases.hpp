// The report's lines on the run's phases and host threads (text and JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "overlap/trace/audit.hpp"

namespace overlap::trace::detail {

/// "startup: ..." with its breakdown and share of the run, then "steady
/// state: ..." with how it was found and teardown, then a line per host
/// thread: what it did in the steady state. Each line ends with '\n'.
[[nodiscard]] std::string phases_text(const AuditReport& report);

/// The "phases" object of the JSON report (docs/audit.md).
[[nodiscard]] nlohmann::ordered_json phases_json(const AuditReport& report);

/// The "host_threads" array of the JSON report: one object per thread.
[[nodiscard]] nlohmann::ordered_json host_threads_json(const AuditReport& report);

}  // namespace overlap::trace::detail
