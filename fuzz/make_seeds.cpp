// Writes the seeds that are made rather than found in examples/: every device
// model preset as JSON (device_model/<preset>.json) and the simulated timeline
// of each spec given (timeline_json/<spec>.json), so the seeds follow the
// current formats instead of being checked-in copies that drift from them.
//
//   make_fuzz_seeds OUT_DIR [SPEC...]
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"

namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [SPEC...]\n", argv[0]);
    return 2;
  }
  try {
    const fs::path out = argv[1];
    fs::create_directories(out / "device_model");
    fs::create_directories(out / "timeline_json");
    for (const std::string& name : overlap::DeviceModel::preset_names()) {
      write(out / "device_model" / (name + ".json"), overlap::DeviceModel::preset(name).to_json());
    }
    for (int i = 2; i < argc; ++i) {
      const fs::path spec_path = argv[i];
      // A spec that does not simulate (say, one whose device: is a model
      // file elsewhere) only costs a seed.
      try {
        const overlap::io::Spec spec = overlap::io::load_spec(spec_path);
        const overlap::DeviceModel model = overlap::DeviceModel::load(spec.device.value_or("h100"));
        write(out / "timeline_json" / (spec_path.stem().string() + ".json"),
              overlap::io::to_json(overlap::sim::simulate(spec.program, model)));
      } catch (const overlap::error& e) {
        std::fprintf(stderr, "make_fuzz_seeds: no timeline seed from %s: %s\n", spec_path.c_str(), e.what());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
