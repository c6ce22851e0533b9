// `overlap audit -- APP ARGS`: why are this app's streams not making it
// faster? Each race and trap found in the program it issued, with what it
// cost in the run and what its repair is predicted to save, and a verdict.
#include "overlap/trace/audit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "audit_compare.hpp"
#include "cli.hpp"
#include "job_traces.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/trace/measured_run.hpp"
#include "overlap/trace/process_audit.hpp"
#include "overlap/trace/processes.hpp"
#include "overlap/trace/trace_file.hpp"
#include "subcommand.hpp"
#include "traced_app.hpp"

namespace overlap::cli {

namespace {

constexpr const char* examples = R"(The app runs unmodified under the CUPTI injection library (see
'overlap trace --help'); its program is then checked as 'overlap check' does,
and each finding gets its measured cost and its predicted saving.

Rules:
  race                       two ops touching the same bytes that nothing orders: an
                             error when both are known byte for byte (copies, memsets);
                             a "possible" warning when a kernel's side is inferred
                             from its pointer (from it to the next pointer used in
                             the allocation: per-stream slices never race)
  legacy-default-stream      a copy or memset on the legacy default stream: a barrier
  synchronous-copy           cudaMemcpy (not Async) blocking the host between pipelined work
  pageable-async-copy        cudaMemcpyAsync (or a graph's memcpy node) on pageable
                             memory: the host waits for it
  implicit-synchronization   cudaMalloc/cudaFree/cudaMallocHost with work in flight
  device-synchronize         cudaDeviceSynchronize where a stream sync would do
  copy-engine-serialization  (info) same-direction copies on several streams
  idle-gap                   the GPU idle while the host sits in a CUDA call
  lazy-module-load           a kernel's first launch that waited for its module to load
                             (lazy loading, the default) until the work in flight
                             ended, so the kernel started late; fix:
                             CUDA_MODULE_LOADING=EAGER or cudaFuncGetAttributes in set-up
  hardware-queue-sharing     more streams than CUDA_DEVICE_MAX_CONNECTIONS (recorded
                             from the run; 8 when unset) with ops held behind another
                             stream's at the head of a shared queue
  serialized-communication   collective (NCCL) kernels on a stream that also runs compute
                             kernels: neither hides under the other (a synchronous
                             all-reduce on the compute stream); fix: their own stream
  unrecorded-event           as in 'overlap check'
Findings are grouped: one per pattern, with its count and first instances.

Verdict: what bounds the steady state: copy engines, compute, host issue,
host synchronization, false serialization (shared queues, the legacy
default stream) or launch latency, with its evidence, its floor and what
the fixes are predicted to give.

Startup, steady state, teardown: findings, measured costs and the verdict
are about the steady state; startup (context creation, module loading,
set-up allocations, first launches) is one line. The steady state is the
NVTX range named by --range; else cudaProfilerStart to cudaProfilerStop;
else the repeated NVTX range (pushed at least twice) under which the GPU
worked most, else the single range under which it worked most; else the
repeating sequence of calls (api, stream, kernel), first to last repetition,
a slow first one counted as warm-up; else from the first device work after
the set-up allocations to the last device work.

Severity: races are errors. A trap or idle gap is a warning when its
predicted saving is at least --min-saving (default 1% of the steady state)
and it happens in the steady state; otherwise it is info. Queries that
return not-ready (cudaEventQuery polling) are the host waiting, never issue
cost; each host thread is judged on its own issue time.

Examples:
  overlap audit -- ./my_app --size 1G
  overlap audit --json -- python3 train.py > audit.json
  overlap audit --format html -o audit.html -- ./my_app   # one page: the measured timeline
  overlap audit --from trace.jsonl --format html -o audit.html   # a trace recorded with --raw
  overlap audit --fail-on error -- ./my_app        # for CI: fail on races only
  overlap audit --device my-gpu.json -- ./my_app   # predictions on a probed model
  overlap audit --range train_step -- ./my_app     # the steady state: NVTX range 'train_step'
  overlap audit --min-saving 0.5 -- ./my_app       # warn from 0.5 ms of predicted saving
  overlap audit --compare before.jsonl after.jsonl # what a fix changed (traces or --json reports)
  overlap audit -- torchrun --standalone --nproc-per-node 2 train.py   # every rank
  overlap audit --from rank0.json rank1.json       # a job's torch.profiler traces, one per rank

Several processes: when two or more of the app's processes use CUDA (torchrun,
mpirun), each is audited on its own and named by its rank (RANK, LOCAL_RANK,
OMPI_COMM_WORLD_RANK or PMI_RANK; else its pid). The report starts with a
line per rank: its collective (NCCL) kernels' time, the share of it that
overlapped compute kernels, and its GPU's idle time, over the steady state
(as Holistic Trace Analysis counts them: docs/audit.md); a rank whose
collectives share a stream with its compute gets a serialized-communication
finding. Each rank's report follows; the HTML page joins the ranks' lanes.
torch.profiler cannot record CUDA activity under the audit (CUPTI takes one
subscriber): profile and audit in separate runs.

The app's standard output goes to standard error, so the report stays
parseable. Exit codes: 0 nothing at or above --fail-on (default warning),
1 findings at or above it, 2 bad input or the app could not be started.)";

struct AuditCommandOptions {
  std::vector<std::string> command;
  bool json = false;
  std::string format = "text";
  std::string fail_on = "warning";
  std::string device = "h100";
  double idle_gap = 0.1;
  std::string range;
  std::string min_saving = "1%";
  std::string output;
  std::string raw;
  std::vector<std::string> from;
  std::vector<std::string> compare;
  bool timings = false;
  std::string accesses = "inferred";
  std::string migrations = "on";
};

/// --timings: how long each step of the audit took, printed on stderr at the end.
class StepTimes {
 public:
  /// Ends the step in progress under `name` (the first starts at construction).
  void step(std::string name) {
    const auto now = std::chrono::steady_clock::now();
    steps_.emplace_back(std::move(name), std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  /// Splits `seconds` (timed elsewhere) off the end of the step just ended, as a step of its own.
  void split_off(std::string name, double seconds) {
    if (!steps_.empty()) steps_.back().second -= seconds;
    steps_.emplace_back(std::move(name), seconds);
  }
  [[nodiscard]] std::string line() const {
    std::vector<std::string> parts;
    parts.reserve(steps_.size());
    for (const auto& [name, seconds] : steps_) parts.push_back(fmt::format("{} {:.3f} s", name, seconds));
    return fmt::format("overlap audit: timings: {}\n", fmt::join(parts, ", "));
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> steps_;
};

/// --min-saving: "1%" of the steady state, or "0.5" / "0.5ms" milliseconds.
struct MinSaving {
  std::optional<double> percent;
  double ms = 0.0;
};

MinSaving parse_min_saving(const std::string& text) {
  std::string number = text;
  const bool percent = number.ends_with('%');
  if (percent) number.pop_back();
  if (!percent && number.ends_with("ms")) number.resize(number.size() - 2);
  double value = -1.0;
  std::size_t used = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !(value >= 0.0) || (percent && value > 100.0))
    throw invalid_input(fmt::format(
        "--min-saving: '{}' is not a percentage of the steady state (1%) or milliseconds (0.5)", text));
  MinSaving m;
  if (percent) {
    m.percent = value;
  } else {
    m.ms = value;
  }
  return m;
}

std::string ms_text(double ms) {
  return io::format_number(ms) + " ms";
}

// The findings as the HTML page lists them; each outlines the ops of all
// its listed occurrences, not only the first one's.
std::vector<io::HtmlFinding> html_findings(const trace::AuditReport& r) {
  std::vector<io::HtmlFinding> findings;
  findings.reserve(r.findings.size());
  for (const trace::AuditFinding& f : r.findings) {
    io::HtmlFinding h;
    h.level = std::string(check::to_string(f.level));
    h.rule = f.count > 1 ? fmt::format("{} (×{})", f.rule, f.count) : f.rule;
    h.message = f.certainty == "certain" ? f.message : fmt::format("{} [{}]", f.message, f.certainty);
    h.fix = f.fix;
    for (const trace::AuditOp& op : f.ops) h.ops.push_back(op.id);
    for (const trace::AuditInstance& instance : f.instances)
      for (const trace::AuditOp& op : instance.ops) h.ops.push_back(op.id);
    std::sort(h.ops.begin(), h.ops.end());
    h.ops.erase(std::unique(h.ops.begin(), h.ops.end()), h.ops.end());
    std::vector<std::string> cost;
    if (f.measured) cost.push_back("measured: " + f.measured->text);
    if (f.predicted_saving)
      cost.push_back(
          fmt::format("predicted saving: {} on the {} model", ms_text(*f.predicted_saving), r.device_model));
    h.cost = fmt::format("{}", fmt::join(cost, "; "));
    findings.push_back(std::move(h));
  }
  return findings;
}

// The measured timeline with the verdict and the phases above it, the
// phases shaded on it, and the findings' ops outlined. The whole run's
// summary table is left out: the verdict's numbers are the steady state's.
std::string html_report(const trace::Capture& run, const trace::AuditReport& r) {
  io::HtmlReportOptions options;
  options.title = fmt::format("{}", fmt::join(r.command, " "));
  options.notes.push_back("verdict: " + r.verdict.text);
  for (std::string& line : trace::phase_lines(r)) options.notes.push_back(std::move(line));
  for (const std::string& note : r.notes) options.notes.push_back("note: " + note);
  const trace::Phases& p = r.phases;
  options.regions = {{"startup", 0.0, p.steady_start},
                     {"steady state", p.steady_start, p.steady_end},
                     {"teardown", p.steady_end, std::max(p.end, run.timeline.total())}};
  options.summary_table = false;
  return io::to_html(run.timeline, html_findings(r), options);
}

trace::AuditReport analyse(const trace::Capture& run, const AuditCommandOptions& o) {
  trace::AuditOptions options;
  options.idle_gap_threshold = o.idle_gap;
  options.phases.range = o.range;
  const MinSaving min_saving = parse_min_saving(o.min_saving);
  if (min_saving.percent) {
    options.min_saving_fraction = *min_saving.percent / 100.0;
  } else {
    options.min_saving_ms = min_saving.ms;
  }
  return trace::audit(run, DeviceModel::load(o.device), options);
}

// A multi-process job's page: every rank's lanes on the shared clock, each
// rank's findings outlined on its ops, its verdict and communication above.
std::string html_job_report(const std::vector<trace::TracedProcess>& processes, const trace::JobAudit& job) {
  const trace::JoinedRun joined = trace::join_processes(processes);
  io::HtmlReportOptions options;
  options.title = fmt::format("{}", fmt::join(job.command, " "));
  std::vector<io::HtmlFinding> findings;
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    const trace::ProcessAudit& p = job.processes[i];
    options.notes.push_back(fmt::format("{}: verdict: {}", p.name, p.report.verdict.text));
    if (const auto& c = p.report.communication)
      options.notes.push_back(fmt::format(
          "{}: collectives {}, {:.1f}% overlapped with compute; GPU idle {:.1f}% of {} (steady state)",
          p.name, ms_text(c->communication), 100.0 * c->overlap_fraction().value_or(0.0),
          100.0 * c->idle_fraction(), ms_text(c->span)));
    for (io::HtmlFinding f : html_findings(p.report)) {
      f.rule = p.name + ": " + f.rule;
      for (op_id& op : f.ops) op += joined.parts[i].first_op;
      findings.push_back(std::move(f));
    }
  }
  options.summary_table = false;
  return io::to_html(joined.timeline, findings, options);
}

// Each process of a job audited, reported together.
int audit_job(std::vector<trace::ProcessTrace> traces, std::vector<std::string> command, int exit_code,
              const AuditCommandOptions& o, check::severity fail_on, bool keep_raw, StepTimes& times,
              Streams io) {
  const std::vector<trace::TracedProcess> processes = trace::capture_processes(std::move(traces));
  times.step("capture");
  if (keep_raw) keep_raw_copies(processes, o.raw, "audit", io);
  trace::JobAudit job;
  job.command = std::move(command);
  job.exit_code = exit_code;
  for (const trace::TracedProcess& p : processes) {
    trace::AuditReport r = analyse(p.capture, o);
    r.command = job.command;
    r.exit_code = exit_code;
    // A traced run's files are temporary: the report names the copy kept, if any.
    std::string source = p.source;
    if (keep_raw) source = o.raw.empty() ? std::string() : per_process_path(o.raw, p.name);
    job.processes.push_back({p.name, p.rank, p.pid, std::move(source), std::move(r)});
  }
  times.step("analysis");
  if (o.json || o.format == "json") {
    write_output(o.output, trace::format_json(job, fail_on), io);
  } else if (o.format == "html") {
    write_output(o.output, html_job_report(processes, job), io);
  } else {
    write_output(o.output, trace::format_text(job, fail_on), io);
  }
  times.step("report");
  if (o.timings) io.err << times.line();
  return job.fails(fail_on) ? exit_findings : exit_ok;
}

int report(const trace::Capture& run, trace::AuditReport r, const AuditCommandOptions& o,
           check::severity fail_on, std::vector<std::string> command, int exit_code, StepTimes& times,
           Streams io) {
  r.command = std::move(command);
  r.exit_code = exit_code;
  if (o.json || o.format == "json") {
    write_output(o.output, trace::format_json(r, fail_on), io);
  } else if (o.format == "html") {
    write_output(o.output, html_report(run, r), io);
  } else {
    write_output(o.output, trace::format_text(r, fail_on), io);
  }
  times.step("report");
  if (o.timings) io.err << times.line();
  return r.fails(fail_on) ? exit_findings : exit_ok;
}

int run_audit(const AuditCommandOptions& o, Streams io) {
  if (o.format != "text" && o.format != "json" && o.format != "html")
    throw invalid_input(
        fmt::format("--format: unknown format '{}' (expected one of: text, json, html)", o.format));
  check::severity fail_on = check::severity::warning;
  try {
    fail_on = check::parse_severity(o.fail_on);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("--fail-on: {}", e.what()));
  }
  (void)DeviceModel::load(o.device);     // a bad model is an error before the app runs
  (void)parse_min_saving(o.min_saving);  // and so is a bad threshold
  if (!o.compare.empty()) {
    if (!o.command.empty() || !o.from.empty())
      throw invalid_input("--compare: give two traces or reports, not an app or --from as well");
    const std::string format = o.json ? "json" : o.format;
    return run_audit_compare(
        o.compare[0], o.compare[1], [&](const trace::Capture& run) { return analyse(run, o); }, format,
        fail_on, o.output, io);
  }
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
    StepTimes times;
    if (o.from.size() > 1) {
      std::vector<trace::ProcessTrace> traces = read_job(o.from);
      times.step("reading the traces");
      std::vector<std::string> sources(o.from.begin(), o.from.end());
      return audit_job(std::move(traces), std::move(sources), 0, o, fail_on, /*keep_raw=*/false, times, io);
    }
    const trace::RawTrace raw = trace::load_trace(o.from.front());
    times.step("reading the trace");
    const trace::Capture captured = trace::capture(raw);
    times.step("capture");
    trace::AuditReport r = analyse(captured, o);
    times.step("analysis");
    return report(captured, std::move(r), o, fail_on, {raw.exe}, 0, times, io);
  }
  if (o.command.empty())
    throw invalid_input("no app given: put the app and its arguments after -- (see --help)");
  const TemporaryFolder folder;
  StepTimes times;
  std::optional<MeasuringRun> measuring;
  std::string measured_lines;  // the joined accesses, for the raw copy (--raw)
  if (parse_kernel_accesses(o.accesses) == KernelAccesses::measured) {
    measuring = measure_app(o.command, folder.path(), "audit", io);
    times.step("the app, measured (Compute Sanitizer)");
  }
  TracedApp app(o.command, folder.path(), /*app_stdout_to_stderr=*/true, AppRun::traced,
                parse_migrations(o.migrations));
  // The trace is whole once the tracer's exit handler has run, before CUDA
  // is torn down in the app's process: the audit runs while it ends.
  std::optional<trace::Capture> captured;
  std::optional<trace::AuditReport> r;
  if (std::optional<trace::RawTrace> whole = app.complete_trace(); whole && has_cuda_activity(*whole)) {
    times.step("the app, traced, until its trace was whole");
    if (measuring) {
      join_measuring_run(*whole, *measuring, {}, "audit", io);
      measured_lines = trace::measured_records(*whole);
    }
    captured = trace::capture(*whole);
    times.step("capture");
    r = analyse(*captured, o);
    times.step("analysis");
  }
  TracedRun run = app.finish();
  const double measuring_s = measuring ? measuring->seconds : -1.0;
  times.step(captured ? "the app's exit (after the analysis)" : "the app, traced");
  if (run.signal) io.err << fmt::format("overlap audit: the app was ended by signal {}\n", *run.signal);
  if (std::vector<trace::ProcessTrace> traces = job_traces(run); !traces.empty()) {
    times.step("reading the processes' traces");
    if (measuring)
      io.err << "overlap audit: note: --accesses measured joins one process's accesses; this run had "
             << traces.size() << " processes using CUDA, audited with inferred accesses\n";
    return audit_job(std::move(traces), o.command, run.exit_code, o, fail_on, /*keep_raw=*/true, times, io);
  }
  if (captured) {
    keep_raw_copy(run, o.raw);
    append_raw_records(o.raw, measured_lines);
  } else {
    times.split_off("reading the trace's last records", run.read_after_exit_s);
    captured = capture_if_any(run, o.raw, o.command.front(), "audit", io, measuring ? &*measuring : nullptr);
    times.step("capture");
    if (!captured) return exit_ok;  // nothing to audit
    r = analyse(*captured, o);
    times.step("analysis");
  }
  r->kernel_accesses.measuring_run_s = measuring_s;
  return report(*captured, std::move(*r), o, fail_on, o.command, run.exit_code, times, io);
}

}  // namespace

Subcommand add_audit(CLI::App& parent, Streams io) {
  auto o = std::make_shared<AuditCommandOptions>();
  CLI::App* app =
      parent.add_subcommand("audit", "Run an unmodified CUDA app and find what kills its overlap");
  app->footer(examples);
  app->add_option("command", o->command, "The app and its arguments, after --");
  app->add_flag("--json", o->json, "Print the report as JSON (same as --format json)");
  app->add_option("-f,--format", o->format,
                  "text (default), json, or html: one page with the verdict, the phases and the findings "
                  "above the measured timeline, the phases shaded and each finding's ops outlined")
      ->capture_default_str();
  app->add_option("--fail-on", o->fail_on, "Exit 1 when a finding is at or above: info, warning, error")
      ->capture_default_str();
  app->add_option("--device", o->device, "Device model the predictions use: a preset or a JSON model file")
      ->capture_default_str();
  app->add_option("--idle-gap", o->idle_gap, "Report idle gaps of the GPU from this many milliseconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_option("--range", o->range,
                  "The steady state is this NVTX range (first instance to last); default: see below");
  app->add_option("--min-saving", o->min_saving,
                  "A trap is a warning from this predicted saving: a share of the steady state (1%) or ms "
                  "(0.5); below, info")
      ->capture_default_str();
  app->add_option("-o,--output", o->output, "Write the report to FILE instead of standard output");
  app->add_option("--raw", o->raw, "Also keep the raw trace (JSON Lines, docs/trace-format.md)");
  app->add_option("--from", o->from,
                  "Audit a raw trace written earlier instead of running an app (ours, or a PyTorch "
                  "profiler trace); several: one per process of a job, audited together")
      ->check(CLI::ExistingFile);
  app->add_option("--compare", o->compare,
                  "Compare two audits, BEFORE and AFTER a fix: raw traces (ours or PyTorch profiles) or "
                  "saved --json reports; per engine busy and idle, findings resolved, new and kept, the "
                  "steady state's time; exit 1 on a new finding at --fail-on or above")
      ->expected(2)
      ->check(CLI::ExistingFile);
  app->add_flag("--timings", o->timings,
                "Print on stderr how long each step took: the app's traced run, reading the rest of its "
                "trace, capture, analysis, report");
  app->add_option("--accesses", o->accesses,
                  "How kernels' accesses are known: inferred from their pointer parameters (races are then "
                  "possible, warnings), or measured while they run with the Compute Sanitizer API (exact: "
                  "races are errors; the app runs twice, measured first, then traced)")
      ->check(CLI::IsMember({"inferred", "measured"}))
      ->capture_default_str();
  add_migrations_option(*app, o->migrations);
  return {app, [o, io] { return run_audit(*o, io); }};
}

}  // namespace overlap::cli
