// `overlap trace -- APP ARGS`: run an unmodified CUDA app with the CUPTI
// injection library and write its measured Timeline in any format, and the
// Program it issued as a spec file that simulate and check read back.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "job_traces.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec_writer.hpp"
#include "overlap/trace/processes.hpp"
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
  # a multi-process job: every rank that uses CUDA, lanes per rank ("rank0.stream 7")
  overlap trace --format chrome -o job.json -- torchrun --nproc-per-node 2 train.py
  # each rank's trace kept (run.rank0.jsonl, ...), read back together later
  overlap trace --raw run.jsonl -- mpirun -np 2 ./app
  overlap trace --from run.rank0.jsonl run.rank1.jsonl --format html -o job.html

Several processes: when two or more of the app's processes use CUDA (torchrun,
mpirun, a launcher script), each is traced and named by its rank (RANK,
LOCAL_RANK, OMPI_COMM_WORLD_RANK or PMI_RANK; else its pid), and the timeline
joins them on the clock they share, each process's streams and host threads
lanes of their own; --program and --raw then write a file per process.

Formats: summary (default), ascii, mermaid, chrome, json; several may be given.
A second profiler holding CUPTI (Nsight Systems, ncu) cannot run at the same time.)";

struct TraceOptions {
  std::vector<std::string> command;
  std::vector<std::string> formats;
  std::string output;
  std::string program;
  std::string raw;
  std::vector<std::string> from;
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

// A multi-process job: the processes' timelines joined, and a program file
// per process.
void write_job(const std::vector<trace::TracedProcess>& processes, const TraceOptions& o,
               const std::vector<io::format>& formats, Streams io) {
  for (const trace::TracedProcess& p : processes) {
    io.err << fmt::format("overlap trace: {} (pid {}): {} calls, {} ops on {} streams\n", p.name, p.pid,
                          p.capture.calls, p.capture.program.ops().size(),
                          p.capture.program.streams().size());
    for (const std::string& note : p.capture.notes)
      io.err << fmt::format("overlap trace: {}: note: {}\n", p.name, note);
  }
  const trace::JoinedRun job = trace::join_processes(processes);
  std::string text;
  for (const io::format f : formats) text += io::render(job.timeline, f);
  write_output(o.output, text, io);
  if (!o.program.empty()) {
    for (const trace::TracedProcess& p : processes) {
      const std::string header = fmt::format(
          "Captured by overlap trace from {}, {} (pid {}), on {}.\nKernels keep their measured times; "
          "copies are timed by the device model.",
          p.capture.program.name, p.name, p.pid,
          p.capture.device.empty() ? std::string("a GPU") : p.capture.device);
      write_output(per_process_path(o.program, p.name), io::to_spec(p.capture.program, header), io);
    }
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
    if (o.from.size() > 1) {
      write_job(trace::capture_processes(read_job(o.from)), o, formats, io);
    } else {
      write_capture(trace::capture(trace::load_trace(o.from.front())), o, formats, io);
    }
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
  if (std::vector<trace::ProcessTrace> traces = job_traces(run); !traces.empty()) {
    if (measuring)
      io.err << "overlap trace: note: --accesses measured joins one process's accesses; this run had "
             << traces.size() << " processes using CUDA, traced without them\n";
    const std::vector<trace::TracedProcess> processes = trace::capture_processes(std::move(traces));
    keep_raw_copies(processes, o.raw, "trace", io);
    write_job(processes, o, formats, io);
    return run.exit_code;
  }
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
  app->add_option("--from", o->from,
                  "Read a raw trace written earlier instead of running an app; several: one per process "
                  "of a job, joined")
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
