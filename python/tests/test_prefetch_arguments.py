"""overlap.prefetch's argument checks (no GPU: they come before any upload)."""

from __future__ import annotations

import numpy as np
import pytest

import overlap


@pytest.mark.parametrize("slots", [0, -1, 1.5, True])
def test_slots_must_be_a_positive_integer(slots):
    with pytest.raises(ValueError, match="slots"):
        overlap.prefetch([np.zeros(4)], slots=slots)


def test_to_must_name_a_framework():
    with pytest.raises(ValueError, match="to: 'jax'"):
        overlap.prefetch([np.zeros(4)], to="jax")


def test_a_batch_of_something_else_names_where_it_is():
    loop = overlap.prefetch([{"x": np.zeros(4), "y": "text"}], to="torch")
    with pytest.raises(TypeError, match=r"batch\['y'\]: expected a NumPy array"):
        next(loop)


def test_an_empty_source_yields_nothing():
    assert list(overlap.prefetch([], slots=2)) == []


def test_device_and_devices_are_one_gpu_or_several():
    with pytest.raises(ValueError, match="device and devices"):
        overlap.prefetch([np.zeros(4)], device=0, devices=[0, 1])


@pytest.mark.parametrize("devices", ["some", [], [0, 0]])
def test_devices_must_name_gpus(devices):
    with pytest.raises(ValueError, match="devices"):
        overlap.prefetch([np.zeros(4)], devices=devices)
