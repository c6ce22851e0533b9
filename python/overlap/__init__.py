"""overlap: predict, run, see and check GPU programs that overlap copies with kernels.

Predict and check (no GPU needed)::

    import overlap
    timeline = overlap.simulate("examples/seed004.yaml", device="h100")
    print(timeline.total, timeline.summary())
    report = overlap.check("examples/seed004.yaml")
    for finding in report.findings:
        print(finding.severity, finding.rule, finding.fix)

Run (CUDA): chunked H2D -> your stage -> D2H over CUDA streams::

    x = overlap.pinned_empty(1 << 26, "float32"); y = overlap.pinned_empty(1 << 26, "float32")
    def stage(chunk_in, chunk_out, stream):
        with stream.cupy():
            cupy.multiply(chunk_in.cupy(), 2, out=chunk_out.cupy())
    overlap.Pipeline().run(x, y, stage)

Feed a training loop, the next batch uploading while this one computes::

    for batch in overlap.prefetch(loader, slots=2):   # torch tensors on the device
        loss = model(batch["x"]); ...
"""

from __future__ import annotations

import os
from typing import Union

from . import _native
from ._errors import PipelineError
from ._native import DeviceModel, Finding, HostSpan, OpRef, Program, Report, Span, Timeline
from ._pipeline import (
    CapturedPipeline,
    DeviceArray,
    Pipeline,
    RunReport,
    Stream,
    cuda_available,
    pinned_empty,
)
from ._prefetch import prefetch
from ._spec import SpecLike
from . import _spec

__version__: str = _native.__version__

ModelLike = Union[None, str, "os.PathLike[str]", DeviceModel]

__all__ = [
    "CapturedPipeline",
    "DeviceArray",
    "DeviceModel",
    "Finding",
    "HostSpan",
    "OpRef",
    "Pipeline",
    "PipelineError",
    "Program",
    "Report",
    "RunReport",
    "Span",
    "Stream",
    "Timeline",
    "check",
    "cuda_available",
    "load_spec",
    "pinned_empty",
    "prefetch",
    "simulate",
]


def load_spec(spec: SpecLike) -> Program:
    """The Program a spec describes: a path, YAML or JSON text, or a dict of the same fields.

    Raises ValueError naming the line and field of a bad spec, as ``overlap simulate`` does.
    """
    return _spec.load(spec)[0]


def simulate(spec: SpecLike, device: ModelLike = None) -> Timeline:
    """Predicts how the spec's stream program runs on a device model.

    Args:
        spec: a spec path, YAML or JSON text, a dict, or a Program.
        device: a preset name ('h100', 'hyperq', 'fermi-2ce', ...), a model
            JSON file from ``overlap probe``, or a DeviceModel; by default the
            device the spec names, else the 'unit' preset.
    Returns:
        the predicted Timeline: ``.total``, ``.spans``, ``.summary()``,
        ``.chrome_trace()`` / ``to_chrome(path)``, and HTML in notebooks.
    """
    program, named = _spec.load(spec)
    return _native.simulate(program, _spec.model(device, named))


def check(spec: SpecLike, device: ModelLike = None, *, races: bool = True, traps: bool = True,
          max_races: int = 1000) -> Report:
    """Finds races and concurrency traps in the spec's stream program.

    Races are errors (nothing orders two accesses to the same bytes); traps
    are warnings priced on the device model (the time each costs). The
    device defaults as in simulate().
    """
    program, named = _spec.load(spec)
    return _native.check(program, _spec.model(device, named), races=races, traps=traps, max_races=max_races)
