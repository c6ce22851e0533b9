// The check report for people: one block per finding, then a summary line.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "overlap/check/check.hpp"

namespace overlap::check {

namespace {

std::string plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string time(double value, const std::string& unit) {
  return fmt::format("{:.6g} {}", value, unit);
}

// An instance on one line: its ops' texts.
std::string instance_text(const Instance& instance) {
  std::vector<std::string> ops;
  for (const OpRef& ref : instance.ops) ops.push_back(ref.text);
  return fmt::format("{}", fmt::join(ops, " and "));
}

void append_finding(std::string& out, const Report& report, const Finding& f) {
  out += fmt::format("{} {}{}: {}", to_string(f.level), f.rule,
                     f.count > 1 ? fmt::format(" (×{})", f.count) : std::string(), f.message);
  if (f.possible) out += " [possible]";
  out += '\n';
  for (std::size_t i = 0; i < f.ops.size(); ++i) {
    out += fmt::format("  {:<10} {}\n", i == 0 ? "ops:" : "", f.ops[i].text);
  }
  // The first instance is the ops above; the next few say where else it happens.
  for (std::size_t i = 1; i < f.instances.size(); ++i)
    out += fmt::format("  {:<10} {}\n", i == 1 ? "also:" : "", instance_text(f.instances[i]));
  if (f.count > std::max<std::size_t>(f.instances.size(), 1))
    out += fmt::format("  {:<10} (and {} more)\n", f.instances.size() > 1 ? "" : "also:",
                       f.count - std::max<std::size_t>(f.instances.size(), 1));
  if (!f.streams.empty()) out += fmt::format("  {:<10} {}\n", "streams:", fmt::join(f.streams, ", "));
  if (!f.fix.empty()) out += fmt::format("  {:<10} {}\n", "fix:", f.fix);
  if (f.time_lost) {
    out += fmt::format("  {:<10} {} (predicted on {})\n", "time lost:", time(*f.time_lost, report.time_unit),
                       report.device);
  }
  if (f.serialized_time) {
    out += fmt::format("  {:<10} {} of copies serialized (predicted on {})\n",
                       "serialized:", time(*f.serialized_time, report.time_unit), report.device);
  }
  out += '\n';
}

}  // namespace

std::string format_text(const Report& report, severity fail_on) {
  std::string out;
  for (const Finding& f : report.findings) append_finding(out, report, f);
  const std::string name = report.program.empty() ? "program" : report.program;
  out += fmt::format("{}: {}, {}, {} info in {} checked on {}{}; {} at fail-on {}\n", name,
                     plural(report.count(severity::error), "error"),
                     plural(report.count(severity::warning), "warning"), report.count(severity::info),
                     plural(report.ops, "op"), report.device,
                     report.races_truncated ? " (race counting stopped: there are more)" : "",
                     report.fails(fail_on) ? "FAIL" : "pass", to_string(fail_on));
  return out;
}

}  // namespace overlap::check
