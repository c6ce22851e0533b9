// overlap.DeviceModel: the simulator's view of a GPU, from a preset, a JSON
// file `overlap probe` wrote, or JSON text. The Python package adds save()
// and to_dict() on top of to_json().
#include "overlap/core/device_model.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "overlap/core/file_output.hpp"

namespace nb = nanobind;

namespace overlap::python {

void bind_device_model(nb::module_& module) {
  nb::class_<DeviceModel>(
      module, "DeviceModel",
      "A device as the simulator sees it: copy engines, bandwidth curves, host call costs. "
      "Every time is in milliseconds.")
      .def_static("preset_names", &DeviceModel::preset_names, "Names of the built-in presets.")
      .def_static("preset", &DeviceModel::preset, nb::arg("name"),
                  "A built-in preset by name; ValueError naming the presets for an unknown one.")
      .def_static("load", &DeviceModel::load, nb::arg("preset_or_path"),
                  "A preset name, or the path of a model JSON file (`overlap probe -o FILE`).")
      .def_static("from_json", &DeviceModel::from_json, nb::arg("text"),
                  "A model from JSON text; ValueError naming a missing, negative or zero figure.")
      .def("to_json", &DeviceModel::to_json, "The model as indented JSON, readable by from_json.")
      .def(
          "save",
          [](const DeviceModel& model, const nb::object& path) {
            write_file_whole(nb::cast<std::string>(nb::str(path)), model.to_json());
          },
          nb::arg("path"), "Writes the model as JSON, loadable by DeviceModel.load and `--device FILE`.")
      .def(
          "to_dict",
          [](const DeviceModel& model) {
            return nb::module_::import_("json").attr("loads")(model.to_json());
          },
          "The model's fields as a dict (its JSON, parsed).")
      .def_rw("name", &DeviceModel::name,
              "The preset name or a label; simulated timelines carry it as their device.")
      .def("__repr__", [](const DeviceModel& model) { return "DeviceModel('" + model.name + "')"; });
}

}  // namespace overlap::python
