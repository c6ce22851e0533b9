#include "overlap/check/check.hpp"

#include <algorithm>
#include <iterator>

namespace overlap::check {

std::size_t Report::count(severity level) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(), [&](const Finding& f) { return f.level == level; }));
}

bool Report::fails(severity level) const noexcept {
  return std::any_of(findings.begin(), findings.end(), [&](const Finding& f) { return f.level >= level; });
}

Report check_program(const Program& program, const DeviceModel& model, const CheckOptions& options) {
  Report report;
  report.program = program.name;
  report.device = model.name;
  report.time_unit = program.time_unit;
  report.ops = program.ops().size();
  if (options.races) {
    const RaceReport races = find_races(program, RaceOptions{options.max_races});
    report.races_truncated = races.truncated;
    for (const Race& r : races.races) report.findings.push_back(race_finding(program, r));
  }
  if (options.traps) {
    std::vector<Finding> traps = find_traps(program, model, options.trap_options);
    report.findings.insert(report.findings.end(), std::make_move_iterator(traps.begin()),
                           std::make_move_iterator(traps.end()));
  }
  // Races first (errors), then traps by severity; each group keeps issue order.
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.level > b.level; });
  return report;
}

}  // namespace overlap::check
