"""Turns what a user hands simulate() and check() into a Program."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional, Tuple, Union

from . import _native

SpecLike = Union[str, "os.PathLike[str]", Mapping[str, Any], _native.Program]

_SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def load(spec: SpecLike) -> Tuple[_native.Program, Optional[str]]:
    """(Program, the device the spec names) from a path, YAML/JSON text, a dict or a Program.

    A str is a path when it names an existing file or ends in .yaml, .yml or
    .json and has no newline; otherwise it is spec text.
    """
    if isinstance(spec, _native.Program):
        return spec, None
    if isinstance(spec, Mapping):
        try:
            text = json.dumps(spec, indent=1)
        except (TypeError, ValueError) as e:
            raise ValueError(f"spec: the dict is not JSON-serialisable: {e}") from None
        return _native.parse_spec(text, "spec")
    if isinstance(spec, os.PathLike):
        return _load_file(os.fspath(spec))
    if isinstance(spec, str):
        if "\n" not in spec and (os.path.isfile(spec) or spec.lower().endswith(_SPEC_SUFFIXES)):
            return _load_file(spec)
        return _native.parse_spec(spec, "spec")
    raise TypeError(
        f"spec: expected a path, YAML or JSON text, a dict or a Program, not {type(spec).__name__}"
    )


def _load_file(path: str) -> Tuple[_native.Program, Optional[str]]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"spec: no such file: {path}") from None
    return _native.parse_spec(text, os.path.basename(path))


def model(device: Union[None, str, "os.PathLike[str]", _native.DeviceModel], named: Optional[str]) -> _native.DeviceModel:
    """The DeviceModel for `device`, else the one the spec names, else the 'unit' preset (as the CLI does)."""
    if isinstance(device, _native.DeviceModel):
        return device
    if device is None:
        device = named if named else "unit"
    return _native.DeviceModel.load(os.fspath(device))
