// overlap.Timeline: a predicted (or measured) run, its spans, metrics and
// every exporter of `overlap simulate --format`. Enumerations cross as the
// lower-case names the CLI and JSON use ("h2d_copy", "event_wait").
#include "overlap/core/timeline.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <string_view>
#include <vector>

#include "bindings.hpp"
#include "overlap/core/file_output.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/io/exporters.hpp"

namespace nb = nanobind;

namespace overlap::python {
namespace {

std::string text(std::string_view view) {
  return std::string(view);
}

std::optional<std::string> direction_of(const Span& span) {
  if (!span.direction) return std::nullopt;
  return text(to_string(*span.direction));
}

std::optional<op_id> waited_for_of(const Span& span) {
  return span.waited_for;
}

// One span as a plain dict: a row for pandas.DataFrame(timeline.records()).
nb::dict record_of(const Timeline& timeline, const Span& span) {
  nb::dict row;
  row["op"] = span.op;
  row["kind"] = text(to_string(span.kind));
  row["direction"] = direction_of(span);
  row["label"] = span.label;
  row["item"] = span.item;
  row["chunk"] = span.chunk;
  row["stream"] = span.stream < timeline.streams.size() ? timeline.streams[span.stream].name : std::string();
  row["engine"] = text(to_string(span.unit));
  row["start"] = span.start;
  row["end"] = span.end;
  row["duration"] = span.duration();
  row["bytes"] = span.bytes;
  row["solo_duration"] = span.solo_duration;
  row["waited_because"] = text(to_string(span.waited_because));
  row["waited_for"] = waited_for_of(span);
  return row;
}

nb::dict metrics_of(const Timeline& timeline) {
  const Metrics metrics = compute_metrics(timeline);
  nb::dict result;
  result["total"] = metrics.total;
  result["sequential"] = metrics.sequential;
  result["speedup"] = metrics.speedup;
  // Keyed by engine; on several GPUs by "GPU1 compute", since each GPU has its own.
  const bool several_gpus = timeline.device_count() > 1;
  nb::dict engines;
  for (const EngineUsage& usage : metrics.engines) {
    nb::dict entry;
    entry["busy"] = usage.busy;
    entry["busy_fraction"] = usage.busy_fraction;
    entry["device"] = usage.device;
    const std::string key =
        several_gpus ? "GPU" + std::to_string(usage.device) + " " + std::string(to_string(usage.unit))
                     : std::string(to_string(usage.unit));
    engines[nb::str(key.data(), key.size())] = entry;
  }
  result["engines"] = engines;
  result["multi_engine_busy_fraction"] = metrics.multi_engine_busy_fraction;
  result["bound_engine"] = text(to_string(metrics.bound_engine));
  result["bound"] = metrics.bound;
  result["bound_attainment"] = metrics.bound_attainment;
  nb::list stalls;
  for (const Stall& stall : metrics.stalls) {
    nb::dict entry;
    entry["engine"] = text(to_string(stall.unit));
    entry["device"] = stall.device;
    entry["idle_from"] = stall.idle_from;
    entry["idle_to"] = stall.idle_to;
    entry["idle"] = stall.idle();
    entry["op"] = stall.op;
    entry["reason"] = text(to_string(stall.reason));
    entry["waited_for"] = stall.waited_for;
    stalls.append(entry);
  }
  result["stalls"] = stalls;
  return result;
}

// A notebook cell shows the HTML report in an iframe, so its styles and
// scripts stay its own; Python's html.escape quotes the page for srcdoc.
nb::str notebook_html(const Timeline& timeline) {
  const nb::object escaped = nb::module_::import_("html").attr("escape")(io::to_html(timeline), true);
  return nb::str(R"(<iframe style="width:100%;height:520px;border:0" srcdoc="{}"></iframe>)").format(escaped);
}

}  // namespace

void bind_timeline(nb::module_& module) {
  nb::class_<Span>(module, "Span", "The run of one stream op: where, when, and what decided its start.")
      .def_ro("op", &Span::op, "The op's index in issue order.")
      .def_prop_ro(
          "kind", [](const Span& span) { return text(to_string(span.kind)); }, "'h2d', 'kernel', ...")
      .def_prop_ro("direction", &direction_of, "'h2d', 'd2h' or 'd2d' for copies, else None.")
      .def_ro("label", &Span::label, "The stage name ('H2D', 'Kernel', ...).")
      .def_ro("item", &Span::item, "The chunk or item name; may be empty.")
      .def_ro("chunk", &Span::chunk, "The chunk index in a pipeline, -1 if none.")
      .def_ro("stream", &Span::stream, "The stream's index into Timeline.streams.")
      .def_prop_ro(
          "engine", [](const Span& span) { return text(to_string(span.unit)); },
          "The engine it occupied: 'h2d_copy', 'd2h_copy', 'compute', ... or 'none'.")
      .def_ro("start", &Span::start, "When it started, in the timeline's time unit.")
      .def_ro("end", &Span::end, "When it finished.")
      .def_prop_ro("duration", &Span::duration, "end - start.")
      .def_ro("bytes", &Span::bytes, "Bytes copied or set; 0 for other kinds.")
      .def_ro("solo_duration", &Span::solo_duration, "What the op takes alone on an idle device.")
      .def_prop_ro(
          "waited_because", [](const Span& span) { return text(to_string(span.waited_because)); },
          "The constraint that set its start: 'stream_order', 'engine_busy', 'event_wait', ...")
      .def_prop_ro("waited_for", &waited_for_of, "The op it waited for, when there is one.")
      .def("__repr__", [](const Span& span) {
        return "Span(op=" + std::to_string(span.op) + ", " + text(to_string(span.kind)) + " '" + span.label +
               "', " + io::format_number(span.start) + ".." + io::format_number(span.end) + ")";
      });

  nb::class_<HostSpan>(module, "HostSpan", "A stretch of the issuing host thread's time.")
      .def_ro("op", &HostSpan::op, "The op whose call, block or work this is.")
      .def_prop_ro(
          "activity", [](const HostSpan& span) { return text(to_string(span.activity)); },
          "'api_call', 'blocked' or 'work'.")
      .def_ro("label", &HostSpan::label, "e.g. 'cudaStreamSynchronize(Stream1)'.")
      .def_ro("start", &HostSpan::start, "When it started.")
      .def_ro("end", &HostSpan::end, "When it ended.");

  nb::class_<Timeline>(module, "Timeline",
                       "What ran where and when: one type for predicted and measured runs.")
      .def_ro("program_name", &Timeline::program_name, "The program's name.")
      .def_ro("device", &Timeline::device, "The device model or GPU it ran on.")
      .def_ro("time_unit", &Timeline::time_unit, "The unit of every time.")
      .def_ro("sequential_time", &Timeline::sequential_time, "The same work one op at a time, no overlap.")
      .def_prop_ro("total", &Timeline::total, "The end of the last span, device or host.")
      .def_prop_ro(
          "streams",
          [](const Timeline& timeline) {
            std::vector<std::string> names;
            for (const Stream& stream : timeline.streams) names.push_back(stream.name);
            return names;
          },
          "The streams' names, indexed by Span.stream.")
      .def_ro("spans", &Timeline::spans, "One Span per stream op, in issue order.")
      .def_ro("host_spans", &Timeline::host_spans, "The host thread's calls, blocked waits and work.")
      .def(
          "records",
          [](const Timeline& timeline) {
            nb::list rows;
            for (const Span& span : timeline.spans) rows.append(record_of(timeline, span));
            return rows;
          },
          "The spans as a list of dicts (stream by name, enumerations as strings): "
          "pandas.DataFrame(t.records()).")
      .def("metrics", &metrics_of,
           "Speedup, engine busy fractions, overlap, the bound engine and the stalls, as a dict.")
      .def("summary", &io::to_summary, "Times, speedup, engine use, the bound and the stalls, as text.")
      .def("ascii", &io::to_ascii, "The seeds' slot-by-slot ASCII timeline.")
      .def("mermaid", &io::to_mermaid, "A Mermaid Gantt block.")
      .def("chrome_trace", &io::to_chrome_trace, "Chrome Trace Event JSON, for ui.perfetto.dev.")
      .def(
          "to_json", [](const Timeline& timeline) { return io::to_json(timeline); },
          "The Timeline as JSON, readable back by Timeline.from_json.")
      .def(
          "to_chrome",
          [](const Timeline& timeline, const nb::object& path) {
            write_file_whole(nb::cast<std::string>(nb::str(path)), io::to_chrome_trace(timeline));
          },
          nb::arg("path"), "Writes the Chrome trace to `path` (a str or os.PathLike).")
      .def(
          "html", [](const Timeline& timeline) { return io::to_html(timeline); },
          "A self-contained HTML page: the summary and the Gantt chart.")
      .def("_repr_html_", &notebook_html, "The HTML report, for notebooks.")
      .def_static("from_json", &io::timeline_from_json, nb::arg("text"), "A Timeline from to_json()'s text.")
      .def("__repr__", [](const Timeline& timeline) {
        return "Timeline('" + timeline.program_name + "' on '" + timeline.device + "', " +
               std::to_string(timeline.spans.size()) + " spans, total " +
               io::format_number(timeline.total()) + " " + timeline.time_unit + ")";
      });
}

}  // namespace overlap::python
