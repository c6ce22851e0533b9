"""overlap.simulate and the Timeline it returns (no GPU)."""

from __future__ import annotations

import json

import pytest

import overlap

# The seeds' 2-stream pipeline (examples/seed004.yaml): two items of 1-unit
# H2D, kernel and D2H each, depth-first over two streams. On the 'unit'
# preset nothing costs but the stages: A's three stages run 0-3, B's H2D
# overlaps A's kernel (1-2), its kernel A's D2H (2-3), its D2H ends at 4.
SEED004_TOTAL = 4.0

PIPELINE_DICT = {
    "name": "from-a-dict",
    "time_unit": "units",
    "pipeline": {"items": ["A", "B"], "streams": 2, "issue": "depth",
                 "stage_time": {"h2d": 1, "kernel": 1, "d2h": 1}},
}


def test_seed004_on_the_unit_preset_takes_four_units(examples):
    timeline = overlap.simulate(examples / "seed004.yaml")
    assert timeline.device == "unit"  # the spec's device: line
    assert timeline.total == pytest.approx(SEED004_TOTAL)
    assert timeline.time_unit == "units"
    assert len(timeline.spans) == 6
    b_d2h = [s for s in timeline.spans if s.item == "B" and s.label == "D2H"]
    assert len(b_d2h) == 1 and b_d2h[0].start == pytest.approx(3.0) and b_d2h[0].end == pytest.approx(4.0)


def test_a_path_text_dict_and_program_give_the_same_timeline(examples):
    path = examples / "seed004.yaml"
    text = path.read_text()
    by_path = overlap.simulate(path)
    by_str_path = overlap.simulate(str(path))
    by_text = overlap.simulate(text)
    by_dict = overlap.simulate(PIPELINE_DICT, device="unit")
    by_json = overlap.simulate(json.dumps(PIPELINE_DICT), device="unit")
    by_program = overlap.simulate(overlap.load_spec(path), device="unit")
    for other in (by_str_path, by_text, by_dict, by_json, by_program):
        assert [(s.start, s.end, s.label) for s in other.spans] == [(s.start, s.end, s.label) for s in by_path.spans]
    assert by_dict.program_name == "from-a-dict"


def test_device_argument_overrides_the_spec_and_changes_the_prediction(examples):
    unit = overlap.simulate(examples / "seed004.yaml")
    h100 = overlap.simulate(examples / "seed004.yaml", device="h100")
    model = overlap.DeviceModel.preset("h100")
    by_model = overlap.simulate(examples / "seed004.yaml", device=model)
    assert h100.device == "h100"
    assert h100.total > unit.total  # h100's host call costs and start latencies
    assert by_model.total == h100.total


def test_records_are_the_spans_as_dicts(examples):
    timeline = overlap.simulate(examples / "seed004.yaml")
    records = timeline.records()
    assert len(records) == len(timeline.spans)
    first = records[0]
    assert first["stream"] == timeline.streams[timeline.spans[0].stream]
    assert first["kind"] == "copy" and first["direction"] == "h2d"
    assert first["duration"] == pytest.approx(first["end"] - first["start"])
    assert {"op", "label", "item", "chunk", "engine", "bytes", "waited_because", "waited_for"} <= set(first)


def test_metrics_summary_and_exporters(examples, tmp_path):
    timeline = overlap.simulate(examples / "seed004.yaml")
    metrics = timeline.metrics()
    assert metrics["total"] == pytest.approx(SEED004_TOTAL)
    assert metrics["sequential"] == pytest.approx(6.0)
    assert metrics["speedup"] == pytest.approx(1.5)
    assert "seed004-2-stream-pipeline" in timeline.summary()
    assert "gantt" in timeline.mermaid()
    assert "Stream1" in timeline.ascii()
    trace_path = tmp_path / "trace.json"
    timeline.to_chrome(trace_path)
    trace = json.loads(trace_path.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert sum(1 for e in events if e.get("ph") == "X") >= len(timeline.spans)
    html = timeline._repr_html_()
    assert html.startswith("<iframe") and "srcdoc=" in html and "<script" not in html
    assert "<html" in timeline.html().lower()


def test_a_timeline_round_trips_through_json(examples):
    timeline = overlap.simulate(examples / "seed004.yaml", device="h100")
    again = overlap.Timeline.from_json(timeline.to_json())
    assert again.total == pytest.approx(timeline.total)
    assert [s.label for s in again.spans] == [s.label for s in timeline.spans]


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"pipeline": {"chunks": -1, "stage_time": {"h2d": 1}}}, "pipeline.chunks"),
        ({"pipeline": {"chunks": 4, "streams": 0, "stage_time": {"h2d": 1}}}, "pipeline.streams"),
        ({"streams": [{"name": "s"}], "ops": [{"op": "kernel", "stream": "nowhere", "time": 1}]}, "stream"),
        ("pipeline: {chunks: 2, stage_time: {h2d: -3}}", "h2d"),
    ],
)
def test_a_bad_spec_raises_value_error_naming_the_field(spec, field):
    with pytest.raises(ValueError, match=field):
        overlap.simulate(spec)


def test_a_missing_file_and_a_wrong_type_are_told_apart():
    with pytest.raises(FileNotFoundError, match="no-such-spec.yaml"):
        overlap.simulate("no-such-spec.yaml")
    with pytest.raises(TypeError, match="spec: expected"):
        overlap.simulate(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        overlap.simulate({"pipeline": {1, 2}})


def test_an_unknown_device_preset_is_a_value_error(examples):
    with pytest.raises(ValueError, match="no-such-gpu"):
        overlap.simulate(examples / "seed004.yaml", device="no-such-gpu")


def test_program_describes_itself_and_writes_back_a_spec(examples):
    program = overlap.load_spec(examples / "seed004.yaml")
    assert len(program) == 7  # six stream ops and the closing synchronize
    assert program.streams == ["Stream1", "Stream2"]
    again = overlap.simulate(program.to_spec(), device="unit")
    assert again.total == pytest.approx(SEED004_TOTAL)
