// overlap.Pipeline's engine: the C++ Pipeline (type-erased, so one binding
// serves every dtype) over host arrays that NumPy or PyTorch hand over by
// DLPack or the buffer protocol. python/overlap/_pipeline.py builds the
// options and wraps the user's stage; here the host thread issues the run
// with the GIL released and takes it back only to call the stage, once per
// chunk, so other Python threads run while the GPU works.
#include "overlap/cuda/pipeline.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "overlap/io/exporters.hpp"
#include "reference_kernel.hpp"

namespace nb = nanobind;

namespace overlap::python {
namespace {

using cuda::pipeline_options;
using input_array = nb::ndarray<nb::ro, nb::device::cpu, nb::c_contig>;
using output_array = nb::ndarray<nb::device::cpu, nb::c_contig>;

cuda::pageable_memory pageable_of(const std::string& name) {
  if (name == "reject") return cuda::pageable_memory::reject;
  if (name == "register") return cuda::pageable_memory::register_in_place;
  if (name == "stage") return cuda::pageable_memory::stage;
  if (name == "auto") return cuda::pageable_memory::automatic;
  throw invalid_input("pageable: '" + name + "' is not one of 'reject', 'register', 'stage', 'auto'");
}

cuda::automatic_chunking chunking_of(const std::string& name) {
  if (name == "fixed") return cuda::automatic_chunking::fixed_fraction;
  if (name == "planned") return cuda::automatic_chunking::planned;
  throw invalid_input("chunking: '" + name + "' is not one of 'fixed', 'planned'");
}

cuda::layout_adaptation adaptation_of(const std::string& name) {
  if (name == "first_run") return cuda::layout_adaptation::from_first_run;
  if (name == "off") return cuda::layout_adaptation::off;
  throw invalid_input("adapt: '" + name + "' is not one of 'first_run', 'off'");
}

cuda::graph_scheduling scheduling_of(const std::string& name) {
  if (name == "host") return cuda::graph_scheduling::host;
  if (name == "device") return cuda::graph_scheduling::device;
  throw invalid_input("scheduling: '" + name + "' is not one of 'host', 'device'");
}

template <typename Array>
std::size_t element_bytes(const Array& array, const char* name) {
  const std::size_t bytes = array.itemsize();
  if (bytes == 0) throw invalid_input(std::string(name) + ": an array of elements of 0 bytes");
  return bytes;
}

cuda::detail::erased_run erase(const input_array& input, output_array& output) {
  return {input.data(),  input.size(),  element_bytes(input, "host_in"),
          output.data(), output.size(), element_bytes(output, "host_out")};
}

// Calls the Python adapter for a chunk with the GIL held. A Python exception
// stays in Python (the adapter keeps it, to chain under PipelineError); the
// engine sees a C++ one carrying its type and message, drains and reports
// the chunk.
cuda::detail::erased_stage stage_of(const nb::callable& adapter) {
  return [&adapter](const void* in, std::size_t in_count, void* out, std::size_t out_count,
                    cuda::stream_view stream, std::size_t chunk) {
    const nb::gil_scoped_acquire locked;
    try {
      adapter(reinterpret_cast<std::uintptr_t>(in), in_count, reinterpret_cast<std::uintptr_t>(out),
              out_count, reinterpret_cast<std::uintptr_t>(stream.get()), chunk);
    } catch (const nb::python_error& e) {
      std::string what = nb::borrow<nb::str>(nb::handle(e.type()).attr("__name__")).c_str();
      what += ": ";
      what += nb::str(e.value()).c_str();
      throw std::runtime_error("the stage raised " + what);
    }
  };
}

nb::dict report_of(const cuda::run_report& report) {
  nb::dict result;
  result["chunks"] = report.chunks;
  result["chunk_bytes"] = report.chunk_bytes;
  result["chunk_schedule"] = report.chunk_schedule;
  result["streams"] = report.streams;
  result["ring_depth"] = report.ring_depth;
  result["device_bytes"] = report.device_bytes;
  result["host_issue_ms"] = report.host_issue_ms;
  result["host"] = std::string(cuda::to_string(report.host));
  if (report.bound) {
    result["bound"] = std::string(cuda::to_string(*report.bound));
  } else {
    result["bound"] = nb::none();
  }
  nb::list parts;
  for (const cuda::run_report::device_part& part : report.parts) {
    nb::dict p;
    p["device"] = part.device;
    p["first_chunk"] = part.first_chunk;
    p["first_element"] = part.first_element;
    p["chunks"] = part.report ? part.report->chunks : 0;
    parts.append(p);
  }
  result["parts"] = parts;
  if (report.timeline) {
    result["timeline_json"] = io::to_json(*report.timeline);
  } else {
    result["timeline_json"] = nb::none();
  }
  return result;
}

// The engine and its options; one per overlap.Pipeline. The engine keeps its
// streams, ring and settled plan between runs, as the C++ Pipeline does.
class python_pipeline {
 public:
  explicit python_pipeline(pipeline_options options) : options_(std::move(options)) {}

  nb::dict run(const input_array& input, output_array& output, const nb::callable& adapter) {
    const cuda::detail::erased_run erased = erase(input, output);
    const cuda::detail::erased_stage stage = stage_of(adapter);
    cuda::run_report report;
    {
      const nb::gil_scoped_release unlocked;
      report = engine_.run(erased, options_, stage);
    }
    return report_of(report);
  }

  // The same run with a C++ stage (y = 2x + 1 over float32, no Python per
  // chunk): the reference overlap.bench compares Python stages against.
  nb::dict run_affine(const input_array& input, output_array& output) {
    if (input.dtype() != nb::dtype<float>() || output.dtype() != nb::dtype<float>())
      throw invalid_input("run_affine: host_in and host_out must be float32 arrays");
    const cuda::detail::erased_run erased = erase(input, output);
    const cuda::detail::erased_stage stage = [](const void* in, std::size_t count, void* out, std::size_t,
                                                cuda::stream_view stream, std::size_t) {
      launch_reference_affine(static_cast<const float*>(in), static_cast<float*>(out), count, stream.get());
    };
    cuda::run_report report;
    {
      const nb::gil_scoped_release unlocked;
      report = engine_.run(erased, options_, stage);
    }
    return report_of(report);
  }

  cuda::pipeline_graph capture(const input_array& input, output_array& output, const nb::callable& adapter,
                               const std::string& scheduling) const {
    const cuda::capture_options how{.scheduling = scheduling_of(scheduling)};
    const cuda::detail::erased_run erased = erase(input, output);
    const cuda::detail::erased_stage stage = stage_of(adapter);
    const nb::gil_scoped_release unlocked;
    return cuda::detail::capture_pipeline(erased, options_, stage, how);
  }

  [[nodiscard]] const pipeline_options& options() const noexcept { return options_; }

 private:
  pipeline_options options_;
  cuda::detail::pipeline_engine engine_;
};

pipeline_options options_of(std::optional<std::size_t> chunk_bytes, std::vector<std::size_t> chunk_schedule,
                            std::optional<unsigned> streams, std::optional<unsigned> ring_depth,
                            std::optional<std::size_t> device_budget_bytes, const std::string& chunking,
                            bool calibrate, const std::string& pageable, bool record, std::size_t ratio_out,
                            std::size_t ratio_in, std::vector<int> devices, const std::string& adapt) {
  pipeline_options options;
  options.adapt = adaptation_of(adapt);
  options.devices = std::move(devices);
  options.chunk_bytes = chunk_bytes;
  options.chunk_schedule = std::move(chunk_schedule);
  options.streams = streams;
  options.ring_depth = ring_depth;
  options.device_budget_bytes = device_budget_bytes;
  options.chunking = chunking_of(chunking);
  options.calibrate = calibrate ? cuda::stage_calibration::on : cuda::stage_calibration::off;
  options.pageable = pageable_of(pageable);
  options.record = record ? cuda::recording::on : cuda::recording::off;
  options.ratio = {ratio_out, ratio_in};
  return options;
}

void translate_pipeline_errors() {
  // Registered after the generic translators, so it runs before them.
  nb::register_exception_translator([](const std::exception_ptr& failure, void*) {
    try {
      std::rethrow_exception(failure);
    } catch (const cuda::pipeline_error& e) {
      const nb::object type = nb::module_::import_("overlap._errors").attr("PipelineError");
      const nb::object value = type(e.what(), e.chunk(), e.earlier_chunks_complete());
      PyErr_SetObject(type.ptr(), value.ptr());
    }
  });
}

}  // namespace

void bind_pipeline(nb::module_& module) {
  translate_pipeline_errors();

  nb::class_<cuda::pipeline_graph>(module, "PipelineGraph",
                                   "A captured pipeline run, replayed with one launch.")
      .def(
          "replay",
          [](cuda::pipeline_graph& graph) {
            cuda::replay_report report;
            {
              const nb::gil_scoped_release unlocked;
              report = graph.replay();
            }
            nb::dict result;
            result["chunks"] = report.chunks;
            result["host_launch_ms"] = report.host_launch_ms;
            return result;
          },
          "Runs the captured work again on the same host arrays and waits for it.")
      .def(
          "captured", [](const cuda::pipeline_graph& graph) { return report_of(graph.captured()); },
          "The run the capture recorded, as Pipeline.run reports it.")
      .def_prop_ro("instantiate_ms", &cuda::pipeline_graph::instantiate_ms,
                   "Host time to instantiate the graph.")
      .def_prop_ro(
          "scheduling",
          [](const cuda::pipeline_graph& graph) {
            return graph.scheduling() == cuda::graph_scheduling::device ? "device" : "host";
          },
          "Who walks the graph at each replay: 'host' or 'device'.");

  nb::class_<python_pipeline>(module, "Pipeline", "The C++ Pipeline over host arrays of any dtype.")
      .def(nb::new_([](std::optional<std::size_t> chunk_bytes, std::vector<std::size_t> chunk_schedule,
                       std::optional<unsigned> streams, std::optional<unsigned> ring_depth,
                       std::optional<std::size_t> device_budget_bytes, const std::string& chunking,
                       bool calibrate, const std::string& pageable, bool record, std::size_t ratio_out,
                       std::size_t ratio_in, std::vector<int> devices, const std::string& adapt) {
             return python_pipeline(options_of(chunk_bytes, std::move(chunk_schedule), streams, ring_depth,
                                               device_budget_bytes, chunking, calibrate, pageable, record,
                                               ratio_out, ratio_in, std::move(devices), adapt));
           }),
           nb::kw_only(), nb::arg("chunk_bytes") = nb::none(),
           nb::arg("chunk_schedule") = std::vector<std::size_t>{}, nb::arg("streams") = nb::none(),
           nb::arg("ring_depth") = nb::none(), nb::arg("device_budget_bytes") = nb::none(),
           nb::arg("chunking") = "fixed", nb::arg("calibrate") = false, nb::arg("pageable") = "reject",
           nb::arg("record") = false, nb::arg("ratio_out") = 1, nb::arg("ratio_in") = 1,
           nb::arg("devices") = std::vector<int>{}, nb::arg("adapt") = "first_run")
      .def("run", &python_pipeline::run, nb::arg("host_in"), nb::arg("host_out"), nb::arg("adapter"),
           "Runs the pipeline; `adapter(in_ptr, in_count, out_ptr, out_count, stream_ptr, chunk)` is called "
           "per chunk.")
      .def("run_affine", &python_pipeline::run_affine, nb::arg("host_in"), nb::arg("host_out"),
           "Runs y = 2x + 1 over float32 arrays with a C++ stage: the benchmark's reference.")
      .def("capture", &python_pipeline::capture, nb::arg("host_in"), nb::arg("host_out"), nb::arg("adapter"),
           nb::arg("scheduling") = "host",
           "Captures one run into a PipelineGraph; the adapter is called per chunk during the capture only. "
           "scheduling 'device' lets the GPU walk the graph (one launch's host cost per replay).");
}

}  // namespace overlap::python
