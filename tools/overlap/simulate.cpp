// `overlap simulate`: predict the timeline of a stream program on a device
// model, from a spec file or from pipeline flags.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

namespace {

constexpr const char* examples = R"(Stage times are totals for the whole data, in milliseconds, split evenly
over the chunks; chunk c runs on stream c mod S.

Examples:
  # the seeds' 2-stream exercise, drawn slot by slot
  overlap simulate examples/seed004.yaml --format ascii

  # the CUDA tutorial's overlap calculation: 80 ms sequential ...
  overlap simulate --h2d 30 --kernel 20 --d2h 30 --chunks 1 --streams 1
  # ... 42.5 ms with 4 chunks on 4 streams, 47.5 ms on 2 (the summary says why)
  overlap simulate --h2d 30 --kernel 20 --d2h 30 --chunks 4 --streams 2

  # issue order mattered on Fermi: compare depth- and breadth-first
  overlap simulate --h2d 4 --kernel 4 --d2h 4 --chunks 4 --streams 4 --device fermi-2ce --issue breadth

  # open the timeline in Perfetto (ui.perfetto.dev) or chrome://tracing
  overlap simulate examples/seed004.yaml --format chrome -o trace.json

  # one self-contained page: the summary and the Gantt, for any browser
  overlap simulate examples/seed004.yaml --format html -o report.html

Devices: unit (every op takes its given time; the default without a spec),
h100, hyperq, fermi-2ce, fermi-1ce, or a JSON model file ('overlap device').
Formats: summary (default), ascii, mermaid, chrome, json, html; several may
be given (--format ascii,summary). Exit codes: 0 ok, 2 bad input.)";

// CLI11's NonNegativeNumber prints the whole double range; say it plainly.
const CLI::Validator time_value(
    [](const std::string& text) -> std::string {
      try {
        std::size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size() && limits::is_time(value)) return {};
      } catch (const std::exception&) {
      }
      return fmt::format("{} is not a time (expected milliseconds from 0 to 1e12)", text);
    },
    "MS");

struct SimulateOptions {
  std::string spec;
  std::optional<double> h2d;
  std::optional<double> kernel;
  std::optional<double> d2h;
  std::uint32_t chunks = 1;
  std::uint32_t streams = 1;
  std::string issue = "depth";
  bool non_blocking = false;
  std::string device;
  std::optional<std::uint32_t> connections;
  std::vector<std::string> formats;
  bool json = false;
  std::string output;
};

// Pipeline flags describe a program only when no spec file does.
Program program_from_flags(const SimulateOptions& o) {
  if (!o.h2d && !o.kernel && !o.d2h) {
    throw invalid_input("give a spec file, or stage times with --h2d, --kernel and --d2h (see --help)");
  }
  PipelineShape shape;
  shape.chunks = o.chunks;
  shape.streams = o.streams;
  shape.order = parse_issue_order(o.issue);
  shape.kind = o.non_blocking ? stream_kind::non_blocking : stream_kind::blocking;
  shape.h2d_time = o.h2d;
  shape.kernel_time = o.kernel;
  shape.d2h_time = o.d2h;
  shape.name = fmt::format("{} chunks on {} streams, {}", o.chunks, o.streams, to_string(shape.order));
  return make_pipeline_program(shape);
}

std::vector<io::format> parse_formats(const SimulateOptions& o) {
  std::vector<io::format> formats;
  if (o.json) formats.push_back(io::format::json);
  for (const std::string& name : o.formats) {
    const auto f = io::parse_format(name);
    if (!f) {
      throw invalid_input(fmt::format("--format: unknown format '{}' (expected one of: {})", name,
                                      fmt::join(io::format_names(), ", ")));
    }
    formats.push_back(*f);
  }
  if (formats.empty()) formats.push_back(io::format::summary);
  return formats;
}

int run_simulate(const SimulateOptions& o, const CLI::App& app, Streams io) {
  const auto formats = parse_formats(o);  // check everything before doing work
  const char* pipeline_flags[] = {"--h2d",     "--kernel", "--d2h",         "--chunks",
                                  "--streams", "--issue",  "--non-blocking"};
  Program program;
  std::string device = o.device;
  if (!o.spec.empty()) {
    for (const char* flag : pipeline_flags) {
      if (app.count(flag) > 0) {
        throw invalid_input(
            fmt::format("{}: cannot be combined with a spec file (the spec describes the program)", flag));
      }
    }
    io::Spec spec = io::load_spec(o.spec);
    program = std::move(spec.program);
    if (device.empty() && spec.device) device = *spec.device;
  } else {
    program = program_from_flags(o);
  }
  if (device.empty()) device = "unit";
  DeviceModel model = DeviceModel::load(device);
  if (o.connections) model.connections = *o.connections;  // the run's CUDA_DEVICE_MAX_CONNECTIONS
  const Timeline timeline = sim::simulate(program, model);

  std::string text;
  for (const io::format f : formats) text += io::render(timeline, f);
  write_output(o.output, text, io);
  return 0;
}

}  // namespace

Subcommand add_simulate(CLI::App& parent, Streams io) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* app = parent.add_subcommand("simulate", "Predict how a stream program runs on a device model");
  app->footer(examples);
  app->add_option("spec", o->spec,
                  "Spec file (YAML or JSON): a pipeline shorthand or explicit streams and ops")
      ->check(CLI::ExistingFile);
  app->add_option("--h2d", o->h2d, "Total host-to-device copy time (ms)")->check(time_value);
  app->add_option("--kernel", o->kernel, "Total kernel time (ms)")->check(time_value);
  app->add_option("--d2h", o->d2h, "Total device-to-host copy time (ms)")->check(time_value);
  app->add_option("--chunks", o->chunks, "Chunks the data is split into")
      ->check(CLI::Range(1u, 100'000'000u))
      ->capture_default_str();
  app->add_option("--streams", o->streams, "Streams the chunks are spread over")
      ->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  app->add_option("--issue", o->issue,
                  "Issue order: depth (chunk by chunk), breadth (stage by stage per round of streams) or "
                  "stage (every H2D, then every kernel, then every D2H)")
      ->check(CLI::IsMember({"depth", "breadth", "stage", "depth-first", "breadth-first", "stage-first"}))
      ->capture_default_str();
  app->add_flag("--non-blocking", o->non_blocking, "Create the streams with cudaStreamNonBlocking");
  app->add_option("--device", o->device,
                  "Device model: a preset or a JSON model file (default: the spec's, else unit)");
  app->add_option(
         "--connections", o->connections,
         "CUDA_DEVICE_MAX_CONNECTIONS of the run to predict (1-32; default: the model's connections, "
         "8 in the h100 and hyperq presets)")
      ->check(CLI::Range(1u, 32u));
  app->add_option("-f,--format", o->formats,
                  "Output: summary, ascii, mermaid, chrome, json, html (repeat or comma-separate)")
      ->delimiter(',');
  app->add_flag("--json", o->json, "Same as --format json: the timeline as JSON");
  app->add_option("-o,--output", o->output, "Write to FILE instead of standard output");
  return {app, [o, app, io] { return run_simulate(*o, *app, io); }};
}

}  // namespace overlap::cli
