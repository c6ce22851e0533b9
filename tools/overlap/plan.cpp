// `overlap plan`: the best chunking, stream count, issue order and ring for
// a workload on a device model, found by simulating the candidates.
#include "overlap/sim/plan.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "overlap/core/byte_size.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "plan_report.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

namespace {

constexpr const char* examples =
    R"(The planner simulates chunk sizes (powers of two from 256 KiB up to the whole
input, at most 1,024 chunks) and ramp schedules (chunks that start small, double
up to a size and shrink again at the end) on 1 to --max-streams streams, issued
depth- or breadth-first, and prints the fastest, how far it is from the floor
(the copies at the link's peak rate, or the kernel, whichever is longer), the
engine that bounds it and the runner-up.

Examples:
  # 256 MiB through a kernel that takes 2 ms over all of it, on the H100 model
  overlap plan --bytes-in 256MiB --bytes-out 256MiB --kernel 2

  # a kernel that processes 100 GB/s, with only 64 MiB of device memory to spare
  overlap plan --bytes-in 1GiB --bytes-out 1GiB --kernel-rate 100 --budget 64MiB

  # a kernel with a launch cost and whole waves (a curve: inline JSON or a file)
  overlap plan --bytes-in 256MiB --bytes-out 64MiB \
      --kernel-cost '{"fixed_ms": 0.004, "ms_per_mib": 0.0009, "wave_bytes": 4194304}'

  # on a measured model, as JSON for a script
  overlap plan --bytes-in 1.5GiB --bytes-out 1.5GiB --kernel 10 --device my-gpu.json --json
  # spread over the 2 GPUs of a host probed with 'overlap probe --all-devices'
  overlap plan --bytes-in 1GiB --bytes-out 1GiB --kernel 0 --devices 2 --device host.json

Several GPUs (--devices N): chunk c runs on GPU c mod N, each GPU with its own
streams and ring; with a host model (probe --all-devices) the simulator holds
the GPUs copying at once to the host's measured totals, and the floor is the
longest of: the copies at the sum of the GPUs' link rates, the copies at the
host's shared rate, and each GPU's share of the kernel. Without a host model
every GPU copies at the model's rates, independently.

Sizes: 4096, 64KiB, 256MiB, 1.5GiB (also KB, MB, GB: powers of 1000).
Devices: h100 (the default), hyperq, fermi-2ce, fermi-1ce, unit, or a JSON model
file ('overlap device'). Exit codes: 0 ok, 2 bad input.)";

struct PlanFlags {
  std::string bytes_in;
  std::string bytes_out;
  std::string kernel;
  std::string kernel_rate;
  std::string kernel_cost;
  std::string budget;
  std::string device = "h100";
  bool pageable = false;
  std::uint32_t max_streams = 8;
  std::uint32_t devices = 1;
  bool uniform_only = false;
  std::size_t top = 5;
  bool json = false;
  std::string output;
};

double parse_number(const std::string& text, std::string_view flag, std::string_view expected,
                    bool positive) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    // Times and rates share the duration limit: a larger one is a typo, and its sums would overflow.
    if (used == text.size() && limits::is_time(value) && (!positive || value > 0.0)) return value;
  } catch (const std::exception&) {
  }
  throw invalid_input(fmt::format("{}: '{}' is not {}", flag, text, expected));
}

/// --kernel-cost: inline JSON when it starts with '{', else a file of it.
KernelCost read_kernel_cost(const std::string& value) {
  if (!value.empty() && value.front() == '{') return KernelCost::from_json(value, "--kernel-cost");
  if (!std::ifstream(value, std::ios::binary) || std::filesystem::is_directory(value)) {
    throw invalid_input(
        fmt::format("--kernel-cost: cannot read '{}' (expected a JSON file or inline JSON {{...}})", value));
  }
  return KernelCost::from_json(limits::read_file(value, limits::max_json_file_bytes, "kernel cost file",
                                                 "a cost curve is a few hundred bytes of JSON"),
                               "--kernel-cost");
}

sim::Workload workload_from(const PlanFlags& f) {
  sim::Workload w;
  w.bytes_in = parse_byte_size(f.bytes_in, "--bytes-in");
  w.bytes_out = parse_byte_size(f.bytes_out, "--bytes-out");
  const std::pair<std::string_view, const std::string*> kernels[] = {
      {"--kernel", &f.kernel}, {"--kernel-rate", &f.kernel_rate}, {"--kernel-cost", &f.kernel_cost}};
  std::string_view given;
  for (const auto& [flag, value] : kernels) {
    if (value->empty()) continue;
    if (!given.empty()) {
      throw invalid_input(
          fmt::format("{}: cannot be combined with {} (give the kernel's cost one way)", flag, given));
    }
    given = flag;
  }
  if (given.empty()) {
    throw invalid_input(
        "--kernel: required: the kernel's total time (--kernel MS), its rate (--kernel-rate GB/s) or a "
        "curve (--kernel-cost FILE.json); --kernel 0 for copies alone");
  }
  if (!f.kernel.empty()) {
    w.kernel_total_ms =
        parse_number(f.kernel, "--kernel", "a time (expected milliseconds from 0 to 1e12)", false);
  }
  if (!f.kernel_rate.empty()) {
    // Below a byte a second the per-MiB cost it turns into is past the time limit.
    constexpr std::string_view expected = "a rate (expected GB/s from 1e-9 to 1e12)";
    const double rate = parse_number(f.kernel_rate, "--kernel-rate", expected, true);
    if (rate < 1e-9)
      throw invalid_input(fmt::format("--kernel-rate: '{}' is not {}", f.kernel_rate, expected));
    w.kernel_gigabytes_per_second = rate;
  }
  if (!f.kernel_cost.empty()) w.kernel_cost = read_kernel_cost(f.kernel_cost);
  if (!f.budget.empty()) w.device_budget = parse_byte_size(f.budget, "--budget");
  w.memory = f.pageable ? host_memory::pageable : host_memory::pinned;
  return w;
}

/// The planner names its fields; on the command line, name the flags.
[[noreturn]] void rethrow_with_flag(const invalid_input& e) {
  static const std::pair<std::string_view, std::string_view> fields[] = {
      {"bytes_in:", "--bytes-in:"},       {"bytes_out:", "--bytes-out:"},
      {"kernel_total_ms:", "--kernel:"},  {"kernel_gigabytes_per_second:", "--kernel-rate:"},
      {"kernel_cost", "--kernel-cost"},   {"device_budget:", "--budget:"},
      {"max_streams:", "--max-streams:"}, {"devices:", "--devices:"},
  };
  const std::string_view message = e.what();
  for (const auto& [field, flag] : fields) {
    if (message.starts_with(field)) {
      throw invalid_input(fmt::format("{}{}", flag, message.substr(field.size())));
    }
  }
  throw e;
}

int run_plan(const PlanFlags& f, Streams io) {
  const sim::Workload workload = workload_from(f);
  const DeviceModel model = DeviceModel::load(f.device);
  sim::PlanOptions options;
  options.max_streams = f.max_streams;
  options.devices = f.devices;
  options.schedules = !f.uniform_only;
  sim::Plan plan;
  try {
    plan = sim::plan(workload, model, options);
  } catch (const invalid_input& e) {
    rethrow_with_flag(e);
  }
  write_output(f.output,
               f.json ? plan_json(plan, workload, model, f.top) : plan_text(plan, workload, model, f.top),
               io);
  return 0;
}

}  // namespace

Subcommand add_plan(CLI::App& parent, Streams io) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* app =
      parent.add_subcommand("plan", "Find the fastest chunking, streams and issue order for a workload");
  app->footer(examples);
  app->add_option("--bytes-in", f->bytes_in, "Bytes copied to the device (256MiB, 1.5GiB, 4096)")
      ->type_name("SIZE")
      ->required();
  app->add_option("--bytes-out", f->bytes_out, "Bytes copied back (0 for none)")
      ->type_name("SIZE")
      ->required();
  app->add_option("--kernel", f->kernel, "The kernel's total time over all the data")->type_name("MS");
  app->add_option("--kernel-rate", f->kernel_rate, "The kernel's throughput over its input")
      ->type_name("GB/s");
  app->add_option("--kernel-cost", f->kernel_cost,
                  "The kernel's cost per chunk: JSON {fixed_ms, ms_per_mib, wave_bytes}, inline or a file")
      ->type_name("JSON|FILE");
  app->add_option("--budget", f->budget, "Device memory the ring of chunk buffers may use")
      ->type_name("SIZE");
  app->add_option("--device", f->device, "Device model: a preset or a JSON model file")
      ->type_name("PRESET|FILE")
      ->capture_default_str();
  app->add_flag("--pageable", f->pageable, "The host buffers are pageable, not pinned");
  app->add_option("--max-streams", f->max_streams, "Try 1 to N streams")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app->add_option("--devices", f->devices, "Spread the chunks over N GPUs (see below)")
      ->capture_default_str()
      ->check(CLI::Range(1U, limits::max_devices));
  app->add_flag("--uniform-only", f->uniform_only, "Try equal chunks only, no ramp schedules");
  app->add_option("--top", f->top, "Configurations listed, best first")->capture_default_str();
  app->add_flag("--json", f->json, "Print the plan as JSON");
  app->add_option("-o,--output", f->output, "Write to FILE instead of standard output");
  return {app, [f, io] { return run_plan(*f, io); }};
}

}  // namespace overlap::cli
