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
  // Races are grouped as they are found: a racy loop has millions, and a
  // list of them (or a cap on it) hid every other rule's findings.
  RaceGroups races(program);
  if (options.races) {
    report.races_truncated = visit_races(
        program,
        [&](const Race& r) {
          races.add(r);
          return true;
        },
        RaceOptions{options.max_races});
    report.races = races.races();
  }
  // Traps first leave room for at least two race findings (proven and possible).
  constexpr std::size_t race_room = 2;
  std::vector<Finding> traps;
  if (options.traps) {
    traps = group_findings(find_traps(program, model, options.trap_options),
                           options.max_findings > race_room ? options.max_findings - race_room : 1);
  }
  std::vector<Finding> grouped = races.findings(
      std::max(race_room, options.max_findings - std::min(options.max_findings, traps.size())));
  report.findings = std::move(grouped);
  report.findings.insert(report.findings.end(), std::make_move_iterator(traps.begin()),
                         std::make_move_iterator(traps.end()));
  // Races first (errors), then traps by severity; each group keeps issue order.
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.level > b.level; });
  return report;
}

}  // namespace overlap::check
