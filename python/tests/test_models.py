"""overlap.DeviceModel: presets, files, validation (no GPU)."""

from __future__ import annotations

import json

import pytest

import overlap


def test_presets_are_listed_and_loadable():
    names = overlap.DeviceModel.preset_names()
    assert {"unit", "h100", "hyperq", "fermi-2ce", "fermi-1ce"} <= set(names)
    for name in names:
        assert overlap.DeviceModel.preset(name).name == name


def test_a_model_saves_and_loads_back_unchanged(tmp_path):
    model = overlap.DeviceModel.preset("h100")
    path = tmp_path / "model.json"
    model.save(path)
    again = overlap.DeviceModel.load(str(path))
    assert again.to_json() == model.to_json()
    assert again.to_dict()["name"] == "h100"


def test_a_loaded_model_drives_simulate(tmp_path, examples):
    model = overlap.DeviceModel.preset("h100")
    model.name = "my-gpu"
    path = tmp_path / "my-gpu.json"
    model.save(path)
    timeline = overlap.simulate(examples / "seed004.yaml", device=path)
    assert timeline.device == "my-gpu"


@pytest.mark.parametrize("field, value", [("api_call_cost_ms", -1.0), ("max_concurrent_kernels", 0)])
def test_a_hand_edited_model_with_a_bad_figure_names_the_field(field, value):
    fields = json.loads(overlap.DeviceModel.preset("h100").to_json())
    assert field in fields, sorted(fields)
    fields[field] = value
    with pytest.raises(ValueError, match=field):
        overlap.DeviceModel.from_json(json.dumps(fields))


def test_a_model_missing_a_required_curve_names_it():
    fields = json.loads(overlap.DeviceModel.preset("h100").to_json())
    del fields["h2d_pinned"]
    with pytest.raises(ValueError, match="h2d_pinned"):
        overlap.DeviceModel.from_json(json.dumps(fields))


def test_an_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="h100"):
        overlap.DeviceModel.preset("no-such-gpu")
