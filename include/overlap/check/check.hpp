// overlap::check: races and traps of a stream program, as one report.
//
// check_program runs the race detector (races.hpp) and the trap rules
// (traps.hpp) and gathers their findings, one per pattern with the count of
// its instances (findings.hpp), so that no rule's findings bury another's;
// format_text and format_json render
// the report for people and for scripts. Nothing here needs CUDA or prints.
//
//   const Report report = check_program(program, DeviceModel::preset("h100"));
//   if (report.fails(severity::warning)) std::cerr << format_text(report, severity::warning);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "overlap/check/findings.hpp"
#include "overlap/check/races.hpp"
#include "overlap/check/traps.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"

namespace overlap::check {

/// What to look for.
struct CheckOptions {
  bool races = true;  ///< run the race detector
  bool traps = true;  ///< run the trap rules (they simulate the program)
  /// Racing pairs counted at most: a badly racy program has quadratically
  /// many, and the detector stops after this many (the counts are then lower
  /// bounds, races_truncated says so). The trap rules run whatever it finds.
  std::size_t max_races = 1'000'000;
  /// Findings reported at most: one per pattern, and patterns are merged
  /// more coarsely (races of the same ops in either order, then all races of
  /// one certainty; a trap's firings per rule) until this many remain.
  /// Below 10 it may be exceeded: each trap rule keeps a finding of its own.
  std::size_t max_findings = 20;
  TrapOptions trap_options;  ///< which traps are worth reporting
};

/// The findings about one program on one device model.
struct Report {
  std::string program;            ///< the program's name
  std::string device;             ///< the device model the traps were priced on
  std::string time_unit;          ///< unit of every time in the findings
  std::size_t ops = 0;            ///< ops checked
  std::vector<Finding> findings;  ///< one per pattern; most severe first, then in issue order
  std::size_t races = 0;          ///< racing pairs of ops counted, over every race finding
  bool races_truncated = false;   ///< the detector stopped at CheckOptions::max_races: there are more

  /// Findings of exactly `level`.
  [[nodiscard]] std::size_t count(severity level) const noexcept;
  /// True when some finding is at `level` or above (the CLI's exit 1).
  [[nodiscard]] bool fails(severity level) const noexcept;
};

/// Checks `program`; traps are priced on `model`. Throws overlap::invalid_input
/// if the program cannot be simulated on the model.
[[nodiscard]] Report check_program(const Program& program, const DeviceModel& model,
                                   const CheckOptions& options = {});

/// The report for people: each finding (severity, rule, message, ops,
/// streams, fix, time lost), then a one-line summary judged against `fail_on`.
[[nodiscard]] std::string format_text(const Report& report, severity fail_on = severity::warning);
/// The report as indented JSON (see docs/check.md for the fields).
[[nodiscard]] std::string format_json(const Report& report, severity fail_on = severity::warning);

}  // namespace overlap::check
