// `overlap device`: show a device model as JSON, to save, edit and pass back
// with --device FILE.
#include <fmt/format.h>

#include <memory>
#include <ostream>

#include "overlap/core/device_model.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

namespace {

struct DeviceOptions {
  std::string model = "h100";
  bool list = false;
  std::string output;
};

}  // namespace

Subcommand add_device(CLI::App& parent, Streams io) {
  auto options = std::make_shared<DeviceOptions>();
  CLI::App* app = parent.add_subcommand("device", "Print a device model as JSON (a preset or a model file)");
  app->footer(R"(Examples:
  overlap device --list             the presets
  overlap device h100               the H100 model, measured figures
  overlap device fermi-2ce -o f.json   save a model, edit it, then:
  overlap simulate spec.yaml --device f.json

A model file may start from a preset and change a few fields:
  {"base": "h100", "connections": 32, "api_call_cost_ms": 0.002})");
  app->add_option("model", options->model, "Preset name or model JSON file")->capture_default_str();
  app->add_flag("--list", options->list, "List the presets, one per line");
  app->add_option("-o,--output", options->output, "Write to FILE instead of standard output");
  return {app, [options, io] {
            if (options->list) {
              std::string text;
              for (const auto& name : DeviceModel::preset_names()) text += name + "\n";
              write_output(options->output, text, io);
              return 0;
            }
            write_output(options->output, DeviceModel::load(options->model).to_json(), io);
            return 0;
          }};
}

}  // namespace overlap::cli
