// overlap.check: races and traps of a program, as objects (rule, severity,
// ops, fix, time lost) and as the CLI's text and JSON.
#include "overlap/check/check.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "bindings.hpp"

namespace nb = nanobind;

namespace overlap::python {
namespace {

using check::Finding;
using check::OpRef;
using check::Report;

check::severity level_of(std::string_view name) {
  return check::parse_severity(name);
}

}  // namespace

void bind_check(nb::module_& module) {
  nb::class_<OpRef>(module, "OpRef", "An op as a finding names it.")
      .def_ro("id", &OpRef::id, "Its index in issue order.")
      .def_ro("kind", &OpRef::kind, "'kernel', 'h2d', ...")
      .def_ro("label", &OpRef::label, "Its label.")
      .def_ro("stream", &OpRef::stream, "Its stream's name; None for host calls.")
      .def_ro("text", &OpRef::text, "\"ops[3] kernel 'kernel2' on stream2\".")
      .def("__repr__", [](const OpRef& op) { return "OpRef(" + op.text + ")"; });

  nb::class_<Finding>(module, "Finding", "One thing the checker found.")
      .def_prop_ro(
          "severity", [](const Finding& finding) { return std::string(check::to_string(finding.level)); },
          "'error' (a race), 'warning' (a trap) or 'info'.")
      .def_ro("rule", &Finding::rule, "The rule: 'race', 'legacy-default-stream', 'pageable-async-copy', ...")
      .def_ro("message", &Finding::message, "What is wrong.")
      .def_ro("ops", &Finding::ops, "The ops involved, in issue order.")
      .def_ro("streams", &Finding::streams, "The streams involved.")
      .def_ro("fix", &Finding::fix, "What to change.")
      .def_ro("time_lost", &Finding::time_lost,
              "Traps: what it costs on the device model, in the program's time unit; None for races.")
      .def_ro("serialized_time", &Finding::serialized_time,
              "Copy-engine serialization: copy time spent queued behind other copies.")
      .def("__repr__", [](const Finding& finding) {
        return "Finding(" + std::string(check::to_string(finding.level)) + " " + finding.rule + ": " +
               finding.message + ")";
      });

  nb::class_<Report>(module, "Report", "The findings about one program on one device model.")
      .def_ro("program", &Report::program, "The program's name.")
      .def_ro("device", &Report::device, "The device model the traps were priced on.")
      .def_ro("time_unit", &Report::time_unit, "The unit of every time in the findings.")
      .def_ro("ops", &Report::ops, "Ops checked.")
      .def_ro("findings", &Report::findings, "Most severe first, then in issue order.")
      .def_ro("races_truncated", &Report::races_truncated,
              "More races than max_races: the rest are not listed.")
      .def(
          "count", [](const Report& report, std::string_view level) { return report.count(level_of(level)); },
          nb::arg("severity"), "Findings of exactly this severity ('error', 'warning' or 'info').")
      .def(
          "fails", [](const Report& report, std::string_view level) { return report.fails(level_of(level)); },
          nb::arg("severity") = "warning",
          "True when a finding is at this severity or above (the CLI's exit 1).")
      .def(
          "text",
          [](const Report& report, std::string_view fail_on) {
            return format_text(report, level_of(fail_on));
          },
          nb::arg("fail_on") = "warning", "The report as `overlap check` prints it.")
      .def(
          "to_json",
          [](const Report& report, std::string_view fail_on) {
            return format_json(report, level_of(fail_on));
          },
          nb::arg("fail_on") = "warning", "The report as `overlap check --json` prints it.")
      .def("__len__", [](const Report& report) { return report.findings.size(); })
      .def("__repr__", [](const Report& report) {
        return "Report('" + report.program + "' on '" + report.device + "', " +
               std::to_string(report.findings.size()) + " findings)";
      });

  module.def(
      "check",
      [](const Program& program, const DeviceModel& model, bool races, bool traps, std::size_t max_races) {
        check::CheckOptions options;
        options.races = races;
        options.traps = traps;
        options.max_races = max_races;
        const nb::gil_scoped_release unlocked;
        return check::check_program(program, model, options);
      },
      nb::arg("program"), nb::arg("model"), nb::arg("races") = true, nb::arg("traps") = true,
      nb::arg("max_races") = 1000, "Races and traps of `program`, traps priced on `model`.");
}

}  // namespace overlap::python
