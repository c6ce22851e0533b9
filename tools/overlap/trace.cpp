// `overlap trace -- APP ARGS`: run an unmodified CUDA app with the CUPTI
// injection library and write its measured Timeline in any format, and the
// Program it issued as a spec file that simulate and check read back.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec_writer.hpp"
#include "overlap/trace/trace_file.hpp"
#include "subcommand.hpp"
#include "traced_app.hpp"

namespace overlap::cli {

namespace {

constexpr const char* examples = R"(The app runs unmodified: the CUDA driver loads libovl_inject.so
(CUDA_INJECTION64_PATH), which records every CUDA call and what the GPU did
through CUPTI. The exit code is the app's own (128 + N if signal N ended it);
2 if it could not be started.

Examples:
  # the measured timeline's summary: engine use, overlap, stalls
  overlap trace -- ./my_app --size 1G
  # open it in Perfetto (ui.perfetto.dev): a track per stream, per engine, and the host's calls
  overlap trace --format chrome -o trace.json -- ./my_app
  # keep the program it issued, then predict it on another device model or check it
  overlap trace --program my_app.yaml -- ./my_app
  overlap simulate my_app.yaml --device fermi-2ce
  # Python works too
  overlap trace -- python3 train.py

Formats: summary (default), ascii, mermaid, chrome, json; several may be given.
A second profiler holding CUPTI (Nsight Systems, ncu) cannot run at the same time.)";

struct TraceOptions {
  std::vector<std::string> command;
  std::vector<std::string> formats;
  std::string output;
  std::string program;
  std::string raw;
  std::string from;
  std::string accesses = "inferred";
  std::string migrations = "on";
};

std::vector<io::format> parse_formats(const std::vector<std::string>& names) {
  std::vector<io::format> formats;
  for (const std::string& name : names) {
    const auto f = io::parse_format(name);
    if (!f)
      throw invalid_input(fmt::format("--format: unknown format '{}' (expected one of: {})", name,
                                      fmt::join(io::format_names(), ", ")));
    formats.push_back(*f);
  }
  if (formats.empty()) formats.push_back(io::format::summary);
  return formats;
}

void write_capture(const trace::Capture& run, const TraceOptions& o, const std::vector<io::format>& formats,
                   Streams io) {
  for (const std::string& note : run.notes) io.err << "overlap trace: note: " << note << '\n';
  std::string text;
  for (const io::format f : formats) text += io::render(run.timeline, f);
  write_output(o.output, text, io);
  if (!o.program.empty()) {
    const std::string header = fmt::format(
        "Captured by overlap trace from {} on {}.\nKernels keep their measured times; copies are timed by "
        "the "
        "device model.",
        run.program.name, run.device.empty() ? std::string("a GPU") : run.device);
    write_output(o.program, io::to_spec(run.program, header), io);
  }
}

int run_trace(const TraceOptions& o, Streams io) {
  const auto formats = parse_formats(o.formats);  // check flags before running anything
  if (!o.from.empty()) {
    if (!o.command.empty()) throw invalid_input("--from: give a trace file or an app, not both");
    if (o.accesses == "measured")
      throw invalid_input(
          "--accesses measured runs the app: a trace read with --from keeps the accesses measured when it "
          "was "
          "recorded (`accesses` records)");
    if (o.migrations == "off")
      throw invalid_input(
          "--migrations off applies to a run of the app: a trace read with --from keeps the migrations it "
          "recorded");
    write_capture(trace::capture(trace::load_trace(o.from)), o, formats, io);
    return exit_ok;
  }
  if (o.command.empty())
    throw invalid_input("no app given: put the app and its arguments after -- (see --help)");
  const TemporaryFolder folder;
  const bool report_on_stdout = o.output.empty() || o.output == "-";
  std::optional<MeasuringRun> measuring;
  if (parse_kernel_accesses(o.accesses) == KernelAccesses::measured)
    measuring = measure_app(o.command, folder.path(), "trace", io);
  TracedRun run = run_traced(o.command, folder.path(), report_on_stdout, parse_migrations(o.migrations));
  if (run.signal) io.err << fmt::format("overlap trace: the app was ended by signal {}\n", *run.signal);
  const std::optional<trace::Capture> captured =
      capture_if_any(run, o.raw, o.command.front(), "trace", io, measuring ? &*measuring : nullptr);
  if (captured) write_capture(*captured, o, formats, io);
  return run.exit_code;
}

}  // namespace

Subcommand add_trace(CLI::App& parent, Streams io) {
  auto o = std::make_shared<TraceOptions>();
  CLI::App* app =
      parent.add_subcommand("trace", "Run an unmodified CUDA app and record what its streams did");
  app->footer(examples);
  app->add_option("command", o->command, "The app and its arguments, after --");
  app->add_option("-f,--format", o->formats, "Output format(s): summary, ascii, mermaid, chrome, json, html")
      ->delimiter(',');
  app->add_option("-o,--output", o->output, "Write the timeline to FILE instead of standard output");
  app->add_option("--program", o->program, "Also write the captured program as a spec file (YAML)");
  app->add_option("--raw", o->raw, "Also keep the raw trace (JSON Lines, docs/trace-format.md)");
  app->add_option("--from", o->from, "Read a raw trace written earlier instead of running an app")
      ->check(CLI::ExistingFile);
  app->add_option("--accesses", o->accesses,
                  "inferred (default), or measured: record the bytes each kernel read and wrote (Compute "
                  "Sanitizer API; the app runs twice, measured first, then traced) in the raw trace")
      ->check(CLI::IsMember({"inferred", "measured"}))
      ->capture_default_str();
  add_migrations_option(*app, o->migrations);
  return {app, [o, io] { return run_trace(*o, io); }};
}

}  // namespace overlap::cli
