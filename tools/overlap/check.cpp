// `overlap check`: races and concurrency traps of a stream program, from a
// spec file, with the time each trap costs on a device model.
#include "overlap/check/check.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

namespace {

constexpr const char* examples =
    R"(Races (errors): two ops touching the same bytes, at least one writing, that
nothing orders under CUDA's rules (stream order, event record/wait, the
legacy default stream barrier, host synchronization). Ops declare what they
touch with reads:/writes: in the spec (docs/spec-format.md).

Traps (warnings, info): correct code that loses overlap, each with the time
it costs = simulate(program) - simulate(program with the trap repaired):
  legacy-default-stream      cudaMemcpy/cudaMemset on the legacy default stream
  synchronous-copy           cudaMemcpy with only non-blocking streams: the host waits
  pageable-async-copy        cudaMemcpyAsync from pageable memory
  implicit-synchronization   cudaMalloc/cudaFree/cudaMallocHost with work in flight
  device-synchronize         cudaDeviceSynchronize where stream syncs would do
  copy-engine-serialization  (info) same-direction copies on several streams
  hardware-queue-sharing     more streams than CUDA_DEVICE_MAX_CONNECTIONS queues
  unrecorded-event           a wait on an event never recorded before it (a no-op)

Examples:
  # seed 003: kernel2 reads y on stream2 with no event after kernel1 wrote it
  overlap check examples/check/numba-dependency-racy.yaml
  # the same program with cudaEventRecord + cudaStreamWaitEvent: clean
  overlap check examples/check/numba-dependency-fixed.yaml

  # seed 001's default-stream trap, priced on the H100 model
  overlap check examples/check/cuda-default-stream-trap.yaml --device h100

  # for CI: JSON, and fail only on races
  overlap check spec.yaml --json --fail-on error -o findings.json

  # one page: the findings above the predicted timeline, their ops outlined
  overlap check examples/check/numba-dependency-racy.yaml --format html -o check.html

Devices: the spec's device:, else h100; or unit, hyperq, fermi-2ce,
fermi-1ce, or a JSON model file ('overlap device').
Exit codes: 0 nothing at or above --fail-on (default warning), 1 findings at
or above it, 2 bad input.)";

struct CheckCommandOptions {
  std::string spec;
  std::string device;
  std::optional<std::uint32_t> connections;
  bool json = false;
  std::string format = "text";
  std::string fail_on = "warning";
  std::string output;
};

// The findings above the program's predicted timeline, each finding's ops
// outlined in it.
std::string html_report(const Program& program, const DeviceModel& model, const check::Report& report) {
  std::vector<io::HtmlFinding> findings;
  findings.reserve(report.findings.size());
  for (const check::Finding& f : report.findings) {
    io::HtmlFinding h;
    h.level = std::string(check::to_string(f.level));
    h.rule = f.rule;
    h.message = f.message;
    h.fix = f.fix;
    for (const check::OpRef& ref : f.ops) h.ops.push_back(ref.id);
    if (f.time_lost)
      h.cost = fmt::format("time lost: {} {}", io::format_number(*f.time_lost), report.time_unit);
    findings.push_back(std::move(h));
  }
  return io::to_html(sim::simulate(program, model), findings);
}

int run_check(const CheckCommandOptions& o, Streams io) {
  if (o.format != "text" && o.format != "json" && o.format != "html")
    throw invalid_input(
        fmt::format("--format: unknown format '{}' (expected one of: text, json, html)", o.format));
  check::severity fail_on = check::severity::warning;
  try {
    fail_on = check::parse_severity(o.fail_on);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("--fail-on: {}", e.what()));
  }
  const io::Spec spec = io::load_spec(o.spec);
  std::string device = o.device;
  if (device.empty()) device = spec.device.value_or("h100");
  DeviceModel model = DeviceModel::load(device);
  if (o.connections) model.connections = *o.connections;  // the run's CUDA_DEVICE_MAX_CONNECTIONS
  const check::Report report = check::check_program(spec.program, model);
  if (o.json || o.format == "json") {
    write_output(o.output, check::format_json(report, fail_on), io);
  } else if (o.format == "html") {
    write_output(o.output, html_report(spec.program, model, report), io);
  } else {
    write_output(o.output, check::format_text(report, fail_on), io);
  }
  return report.fails(fail_on) ? exit_findings : exit_ok;
}

}  // namespace

Subcommand add_check(CLI::App& parent, Streams io) {
  auto o = std::make_shared<CheckCommandOptions>();
  CLI::App* app = parent.add_subcommand("check", "Find races and concurrency traps in a stream program");
  app->footer(examples);
  app->add_option("spec", o->spec, "Spec file (YAML or JSON) with reads:/writes: on its ops")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--device", o->device,
                  "Device model the traps are priced on: a preset or a JSON model file (default: the spec's, "
                  "else h100)");
  app->add_option(
         "--connections", o->connections,
         "CUDA_DEVICE_MAX_CONNECTIONS the program runs with (1-32; default: the model's connections, "
         "8 in the h100 and hyperq presets)")
      ->check(CLI::Range(1u, 32u));
  app->add_flag("--json", o->json, "Print the findings as JSON (same as --format json)");
  app->add_option("-f,--format", o->format,
                  "text (default), json, or html: one page with the findings above the predicted timeline, "
                  "each finding's ops outlined")
      ->capture_default_str();
  app->add_option("--fail-on", o->fail_on, "Exit 1 when a finding is at or above: info, warning, error")
      ->capture_default_str();
  app->add_option("-o,--output", o->output, "Write to FILE instead of standard output");
  return {app, [o, io] { return run_check(*o, io); }};
}

}  // namespace overlap::cli
