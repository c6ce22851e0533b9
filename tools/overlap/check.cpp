// `overlap check`: races and concurrency traps of a stream program, from a
// spec file, with the time each trap costs on a device model.
#include "overlap/check/check.hpp"

#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/spec.hpp"
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

Devices: the spec's device:, else h100; or unit, hyperq, fermi-2ce,
fermi-1ce, or a JSON model file ('overlap device').
Exit codes: 0 nothing at or above --fail-on (default warning), 1 findings at
or above it, 2 bad input.)";

struct CheckCommandOptions {
  std::string spec;
  std::string device;
  bool json = false;
  std::string fail_on = "warning";
  std::string output;
};

int run_check(const CheckCommandOptions& o, Streams io) {
  check::severity fail_on = check::severity::warning;
  try {
    fail_on = check::parse_severity(o.fail_on);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("--fail-on: {}", e.what()));
  }
  const io::Spec spec = io::load_spec(o.spec);
  std::string device = o.device;
  if (device.empty()) device = spec.device.value_or("h100");
  const DeviceModel model = DeviceModel::load(device);
  const check::Report report = check::check_program(spec.program, model);
  write_output(o.output, o.json ? check::format_json(report, fail_on) : check::format_text(report, fail_on),
               io);
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
  app->add_flag("--json", o->json, "Print the findings as JSON");
  app->add_option("--fail-on", o->fail_on, "Exit 1 when a finding is at or above: info, warning, error")
      ->capture_default_str();
  app->add_option("-o,--output", o->output, "Write to FILE instead of standard output");
  return {app, [o, io] { return run_check(*o, io); }};
}

}  // namespace overlap::cli
