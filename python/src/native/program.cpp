// Specs and the simulator: overlap.simulate parses a spec into a Program
// and runs it on a DeviceModel. A Program stays opaque in Python (the spec
// is the way to write one); it says its name, size and streams, and writes
// itself back as a spec.
#include "overlap/core/program.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/io/spec_writer.hpp"
#include "overlap/sim/simulator.hpp"

namespace nb = nanobind;

namespace overlap::python {

void bind_program(nb::module_& module) {
  nb::class_<Program>(module, "Program", "A stream program: streams, events and ops in host issue order.")
      .def_ro("name", &Program::name, "The program's name, for reports.")
      .def_ro("time_unit", &Program::time_unit, "The unit of every duration in the program.")
      .def(
          "__len__", [](const Program& program) { return program.ops().size(); }, "The number of ops.")
      .def_prop_ro(
          "streams",
          [](const Program& program) {
            std::vector<std::string> names;
            for (const Stream& stream : program.streams()) names.push_back(stream.name);
            return names;
          },
          "The declared streams' names, indexed by stream id.")
      .def(
          "to_spec", [](const Program& program) { return io::to_spec(program); },
          "The program as an explicit-form spec (YAML), readable back by simulate and check.")
      .def("__repr__", [](const Program& program) {
        return "Program('" + program.name + "', " + std::to_string(program.ops().size()) + " ops, " +
               std::to_string(program.streams().size()) + " streams)";
      });

  module.def(
      "parse_spec",
      [](std::string_view text, std::string_view source) {
        io::Spec spec = io::parse_spec(text, source);
        return std::make_pair(std::move(spec.program), std::move(spec.device));
      },
      nb::arg("text"), nb::arg("source"),
      "Parses spec text (YAML or JSON) into (Program, the device the spec names or None). "
      "ValueError: 'source:line: field: problem'.");

  module.def(
      "simulate",
      [](const Program& program, const DeviceModel& model) {
        const nb::gil_scoped_release unlocked;  // large programs take a while; nothing here touches Python
        return sim::simulate(program, model);
      },
      nb::arg("program"), nb::arg("model"), "The predicted Timeline of `program` on `model`.");
}

}  // namespace overlap::python
