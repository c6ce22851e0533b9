// `overlap audit --compare BEFORE AFTER`: what a fix changed. Each side is
// a raw trace (ours or a PyTorch profile), audited here with the command's
// options, or a report saved by `overlap audit --json`.
#include "audit_compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "cli.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/trace/audit_compare.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::cli {

namespace {

std::string ms(double value) {
  return io::format_number(value) + " ms";
}

// One side: a saved report as it is, a trace audited now.
trace::AuditSummary side(const std::string& path, const AuditTrace& audit_trace) {
  const std::string name = std::filesystem::path(path).filename().string();
  // A report is kilobytes; its first bytes tell it from a trace.
  std::string head(4096, '\0');
  {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) throw invalid_input(fmt::format("--compare: cannot read '{}'", path));
    head.resize(std::fread(head.data(), 1, head.size(), file));
    std::fclose(file);
  }
  if (trace::looks_like_audit_json(head)) {
    const std::string text = limits::read_file(path, limits::max_json_file_bytes, "saved audit report",
                                               "a report of 'overlap audit --json' is kilobytes");
    return trace::summary_from_json(text, name);
  }
  const trace::RawTrace raw = trace::load_trace(path);
  trace::AuditReport report = audit_trace(trace::capture(raw));
  report.command = {raw.exe};
  return trace::summary_of(report, name);
}

std::string html_rows(const std::vector<trace::FindingChange>& changes, bool both) {
  std::string rows;
  for (const trace::FindingChange& f : changes)
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                        check::to_string(f.level), io::html_escape(f.rule),
                        io::html_escape(fmt::format("{}", fmt::join(f.streams, ", "))),
                        both ? fmt::format("{} &rarr; {}", f.before, f.after)
                             : fmt::format("{}", std::max(f.before, f.after)),
                        io::html_escape(f.message));
  return rows;
}

std::string html_report(const trace::AuditComparison& c, check::severity fail_on) {
  std::string engines;
  for (const trace::EngineChange& e : c.engines)
    engines += fmt::format("<tr><td>{}</td><td>{} &rarr; {}</td><td>{} &rarr; {}</td></tr>\n",
                           io::html_escape(e.engine), ms(e.busy_before), ms(e.busy_after), ms(e.idle_before),
                           ms(e.idle_after));
  const auto section = [](const char* title, const std::vector<trace::FindingChange>& changes, bool both) {
    if (changes.empty()) return fmt::format("<h2>{} (0)</h2>\n", title);
    return fmt::format(
        "<h2>{} ({})</h2>\n<table><tr><th>severity</th><th>rule</th><th>streams</th><th>{}</th>"
        "<th>message</th></tr>\n{}</table>\n",
        title, changes.size(), both ? "count before &rarr; after" : "count", html_rows(changes, both));
  };
  return fmt::format(
      R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>overlap audit --compare</title>
<style>body {{ font: 14px system-ui, sans-serif; margin: 2em; color: #222 }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em }} td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top }}
.fail {{ color: #b00 }} .pass {{ color: #070 }}</style></head><body>
<h1>Before and after</h1>
<p>before: {} ({})<br>after: {} ({})</p>
<table><tr><th></th><th>before</th><th>after</th></tr>
<tr><td>steady state</td><td>{}</td><td>{} ({}x)</td></tr>
<tr><td>bound</td><td>{}</td><td>{}</td></tr>
<tr><td>verdict</td><td>{}</td><td>{}</td></tr></table>
<h2>Engines over the steady state</h2>
<table><tr><th>engine</th><th>busy before &rarr; after</th><th>idle before &rarr; after</th></tr>
{}</table>
{}{}{}<p class="{}">{} resolved, {} new, {} kept: {} (failing on new findings at {} and above)</p>
</body></html>
)",
      io::html_escape(c.before.source), io::html_escape(c.before.command), io::html_escape(c.after.source),
      io::html_escape(c.after.command), ms(c.before.steady_ms), ms(c.after.steady_ms),
      io::format_number(c.speedup()), io::html_escape(c.before.bound), io::html_escape(c.after.bound),
      io::html_escape(c.before.verdict), io::html_escape(c.after.verdict), engines,
      section("Resolved", c.resolved, false), section("New", c.added, false), section("Kept", c.kept, true),
      c.adds(fail_on) ? "fail" : "pass", c.resolved.size(), c.added.size(), c.kept.size(),
      c.adds(fail_on) ? "fail" : "pass", check::to_string(fail_on));
}

}  // namespace

int run_audit_compare(const std::string& before, const std::string& after, const AuditTrace& audit_trace,
                      const std::string& format, check::severity fail_on, const std::string& output,
                      Streams io) {
  const trace::AuditComparison c = trace::compare(side(before, audit_trace), side(after, audit_trace));
  if (format == "json") {
    write_output(output, trace::format_json(c, fail_on), io);
  } else if (format == "html") {
    write_output(output, html_report(c, fail_on), io);
  } else {
    write_output(output, trace::format_text(c, fail_on), io);
  }
  return c.adds(fail_on) ? exit_findings : exit_ok;
}

}  // namespace overlap::cli
