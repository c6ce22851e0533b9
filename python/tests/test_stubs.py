"""The type stubs shipped with the package match the extensions they describe.

python/overlap/_native.pyi and _cuda.pyi are written by nanobind's stubgen
from the built extensions (regenerate: ``python -m nanobind.stubgen -m
overlap._native -o python/overlap/_native.pyi``, likewise _cuda); this test
regenerates them and fails on any difference, so a binding that changes
without its stub is caught.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import overlap

stubgen = pytest.importorskip("nanobind.stubgen", reason="nanobind not installed here")


def cuda_layer_built() -> bool:
    try:
        importlib.import_module("overlap._cuda")
        return True
    except ImportError:
        return False


@pytest.mark.parametrize("module", ["_native", "_cuda"])
def test_the_stub_matches_the_extension(module, tmp_path):
    if module == "_cuda" and not cuda_layer_built():
        pytest.skip("overlap built without its CUDA layer")
    shipped = Path(overlap.__file__).parent / f"{module}.pyi"
    assert shipped.exists(), f"{shipped} is not installed with the package"
    generator = stubgen.StubGen(importlib.import_module(f"overlap.{module}"), quiet=True)
    generator.put(importlib.import_module(f"overlap.{module}"))
    assert generator.get() == shipped.read_text(), f"{module}.pyi is stale: regenerate it (see this file's docstring)"
