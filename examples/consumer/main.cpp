// A program built against an installed overlap (or overlap as a CMake
// subdirectory): reads a spec, simulates it on the device it names (or the
// `unit` preset; a preset name or a model file), and prints the predicted total.
//
//   consumer examples/seed004.yaml   ->   seed004-2-stream-pipeline: total 4 units
#include <exception>
#include <iostream>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"
#include "overlap/version.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer SPEC.yaml   (overlap " << overlap::version_string << ")\n";
    return 2;
  }
  try {
    const overlap::io::Spec spec = overlap::io::load_spec(argv[1]);
    const overlap::DeviceModel model = overlap::DeviceModel::load(spec.device.value_or("unit"));
    const overlap::Timeline timeline = overlap::sim::simulate(spec.program, model);
    std::cout << spec.program.name << ": total " << timeline.total() << ' ' << spec.program.time_unit << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "consumer: " << e.what() << '\n';
    return 2;
  }
}
