"""overlap.check: findings as objects (no GPU)."""

from __future__ import annotations

import json

import pytest

import overlap

# Two kernels on two streams write the same buffer and nothing orders them.
RACE = {
    "name": "race",
    "streams": [{"name": "s1"}, {"name": "s2"}],
    "buffers": {"y": "1 MiB"},
    "ops": [
        {"op": "kernel", "label": "kernel1", "stream": "s1", "time": 1, "writes": ["y"]},
        {"op": "kernel", "label": "kernel2", "stream": "s2", "time": 1, "reads": ["y"]},
    ],
}


def test_the_default_stream_trap_is_a_warning_with_its_cost(examples):
    report = overlap.check(examples / "default-stream-trap.yaml")
    assert report.program == "default-stream-trap" and report.device == "unit"
    rules = [f.rule for f in report.findings]
    assert "legacy-default-stream" in rules
    trap = report.findings[rules.index("legacy-default-stream")]
    assert trap.severity == "warning"
    assert trap.time_lost == pytest.approx(10.0)  # kernelA's 10 ms...: the CLI says "time lost: 10 ms"
    assert trap.ops[0].text == "ops[2] copy 'H2D' on default"
    assert trap.ops[0].stream == "default" and trap.ops[0].id == 2
    assert "cudaMemcpyAsync" in trap.fix
    assert report.fails("warning") and not report.fails("error")
    assert report.count("warning") >= 1


def test_a_race_is_an_error_naming_both_ops_and_the_fix():
    report = overlap.check(RACE)
    races = [f for f in report.findings if f.rule == "race"]
    assert len(races) == 1
    race = races[0]
    assert race.severity == "error" and race.time_lost is None
    assert [op.label for op in race.ops] == ["kernel1", "kernel2"]
    assert sorted(race.streams) == ["s1", "s2"]
    assert "cudaStreamWaitEvent" in race.fix
    assert report.fails("error")


def test_races_only_and_text_and_json_match_the_cli_forms():
    report = overlap.check(RACE, traps=False)
    assert [f.rule for f in report.findings] == ["race"]
    text = report.text()
    assert "race" in text and "FAIL" in text
    parsed = json.loads(report.to_json())
    assert parsed["findings"][0]["rule"] == "race"


def test_a_clean_program_has_no_findings(examples):
    report = overlap.check(examples / "seed004.yaml", device="h100")
    assert [f for f in report.findings if f.severity != "info"] == []
    assert not report.fails("warning")


def test_an_unknown_severity_is_a_value_error(examples):
    report = overlap.check(examples / "seed004.yaml")
    with pytest.raises(ValueError, match="fatal"):
        report.fails("fatal")
