"""overlap.bench: what a Python stage costs the overlapped Pipeline, and what overlap.prefetch hides.

    python -m overlap.bench [--quick] [--reps N] [--only {pipeline,prefetch}] [--json FILE]

Two sections run, one after the other (--only picks one): the pipeline
section, host array to host array through overlap.Pipeline against the
idioms it replaces, and the prefetch section, a training-loop-like run of
overlap.prefetch against the same loop without it.

Pipeline section
----------------

The workload is transfer-bound: 256 MiB of float32 in (--quick: 32 MiB),
y = 2x + 1, as much out. The input is uniform in [-1000, 1000) from a fixed
seed; input and output live in page-locked memory (overlap.pinned_empty) for
every row. Each row is timed as the wall time of one whole run, host array to
host array, including the final synchronisation. Rows run round-robin, one
run each per repetition, so that drift (clocks, temperature, other tenants)
hits every row alike; each row has one untimed warm-up run first. Objects a
row needs (Pipeline, streams, device buffers, the compiled kernel) are made
once, before the warm-up, and reused: the timings are of steady-state runs.

Rows:

cpp_pipeline
    ``Pipeline().run_affine(x, y)``: the C++ Pipeline with a C++ stage, no
    Python per chunk. The reference a Python stage is judged against.
overlap_cupy
    ``Pipeline().run(x, y, stage)`` with a CuPy stage: one ElementwiseKernel
    (``y = 2 * x + 1``, one kernel per chunk) over the chunk's ``.cupy()``
    views (made once per ring slot), launched inside ``with stream.cupy():``.
    Its cost over cpp_pipeline is what calling Python once per chunk costs.
overlap_torch
    The same with a PyTorch stage: the chunk's ``.torch()`` views and one
    kernel, ``torch.addcmul(one, x, two, out=y)`` (1 + 2x, with 0-d device
    tensors broadcast), inside ``with torch.cuda.stream(...)``.
overlap_torch_as_tensor
    The stage as a PyTorch user first writes it: views made with
    ``torch.as_tensor(chunk, device="cuda")`` on every chunk and two kernels,
    ``torch.mul(x, 2.0, out=y).add_(1.0)`` (reported, no target).
cupy_set_get
    CuPy as its users write it: the same chunks and stream count as
    overlap_cupy, and per chunk ``d_in.set(x_chunk, stream=s)``, the kernel
    on s, ``d_out.get(stream=s, out=y_chunk)`` with default arguments; one
    device buffer pair per stream, allocated once. Since CuPy 13, ``get()``
    waits for its copy unless given ``blocking=False``, so this loop issues
    chunk k+1 only once chunk k is back on the host; older CuPy copies
    asynchronously. The run prints which one it measured.
torch_streams
    PyTorch with hand-written streams: the same chunks and stream count as
    overlap_torch over ``torch.cuda.Stream()``s, and per chunk a
    ``non_blocking`` upload into a preallocated device buffer, the same
    one kernel, and a ``non_blocking`` download into the pinned output (x and y
    are shared with torch through ``torch.from_numpy``).
link_floor
    The honest floor: one whole-size upload and one whole-size download at
    once, on two non-blocking streams, nothing else. No overlapped pipeline
    of this workload can beat it.

Checking: y is filled with NaN before every run (so a stale output cannot
pass) and every output element of every run, warm-ups included, must equal
2x + 1 computed once on the host in float32 (2x is exact, so the GPU's
fused multiply-add rounds as NumPy does). link_floor's output does not
depend on its input, so its device input is NaN-filled before each run and
compared on the device with the input afterwards. A mismatch ends the run
with exit status 1, naming the row and the first bad element.

Output: progress on stderr, one line per repetition; on stdout a table of
each row's median, min..max, and its ratio to cpp_pipeline and link_floor,
then the issue's acceptance checks as measured facts: overlap_cupy and
overlap_torch within 1.10x of cpp_pipeline, and cupy_set_get at least 1.6x
overlap_cupy and overlap_torch. --quick prints the ratios but judges nothing
(its data is too small for the targets). CuPy and PyTorch are optional: a
missing one skips its rows, saying so.

Prefetch section
----------------

A loop over 40 batches (--quick: 12) of 32 MiB of float32 each (--quick:
8 MiB), uniform in [0, 1) from a fixed seed (non-negative, so that their sum
is far from zero and a relative tolerance on it means something), in
page-locked torch tensors (``torch.empty(n, pin_memory=True)``) made once
before anything is timed. One batch's upload takes about 0.6-0.7 ms at the
~50 GB/s one direction of an H100's PCIe link.

The compute per batch is a fixed stretch of GPU time longer than its copy,
then a real read of the batch: ``torch.cuda._sleep(cycles)`` on the current
stream, then ``acc += batch.sum()`` into a float64 device scalar. cycles is
calibrated once, at the start: one batch's upload is timed with CUDA events
(median of 5), ``torch.cuda._sleep`` of 1e6 cycles likewise, and cycles is
set so that the sleep lasts 1.5x the upload. The whole compute (sleep and
sum) is then timed the same way; the header prints both times.

Each row is one whole loop over all the batches, timed as wall time up to
and including ``torch.cuda.synchronize()``; rows run round-robin, one
untimed warm-up each, as in the pipeline section.

compute_alone
    The batches already on the device (uploaded once, untimed, before any
    row runs); the loop only computes. The floor.
no_prefetch
    Per batch ``batch.to("cuda", non_blocking=True)`` on the current stream,
    then the compute: copy and compute serialize on one stream, so the loop
    pays both (about 1 + copy/compute times compute_alone).
prefetch_2
    ``for batch in overlap.prefetch(batches, slots=2): compute(batch)``: the
    next batch uploads on a side stream while this one computes.
prefetch_3
    The same with slots=3.
copy_alone
    Only the uploads, ``batch.to("cuda", non_blocking=True)`` per batch on
    the default stream, for context.

Checking: acc is zeroed before every run, and after every run, warm-ups
included, it must equal the float64 host sum of all the batches (computed
once) within a relative 1e-3. copy_alone keeps what it uploaded until the run
is over and compares each batch with compute_alone's device copy. A mismatch
ends the run with exit status 1, naming the row.

Output: a table of each row's median, min..max, per batch, and its ratio to
compute_alone, then the issue's acceptance item as measured facts:
prefetch_2 within 1.10x of compute_alone (judged only when the compute per
batch is at least as long as its copy, as the item assumes), and
no_prefetch / compute_alone beside the 1 + copy/compute it is expected to be
near. --quick judges nothing. Without PyTorch (or without its CUDA) the
section is skipped, saying so.

Exit status: 0 on success, 1 on a wrong output, 2 without a CUDA device or
on bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import Pipeline, RunReport, __version__, cuda_available, pinned_empty, prefetch

MIB = 1 << 20
FULL_BYTES = 256 * MIB
QUICK_BYTES = 32 * MIB
FULL_REPS = 15
QUICK_REPS = 5
SEED = 20240601
INPUT_LOW, INPUT_HIGH = -1000.0, 1000.0
DTYPE = np.dtype(np.float32)
FILL_BLOCK = 8 * MIB  # elements drawn per call while filling the input (bounds the float64 temporary)

CPP = "cpp_pipeline"
OVERLAP_CUPY = "overlap_cupy"
OVERLAP_TORCH = "overlap_torch"
OVERLAP_TORCH_AS_TENSOR = "overlap_torch_as_tensor"
CUPY_SET_GET = "cupy_set_get"
TORCH_STREAMS = "torch_streams"
LINK_FLOOR = "link_floor"
ROW_ORDER = (CPP, OVERLAP_CUPY, OVERLAP_TORCH, OVERLAP_TORCH_AS_TENSOR, CUPY_SET_GET, TORCH_STREAMS, LINK_FLOOR)

# (numerator, denominator, comparison, target): the acceptance checks.
CHECKS = (
    (OVERLAP_CUPY, CPP, "<=", 1.10),
    (OVERLAP_TORCH, CPP, "<=", 1.10),
    (CUPY_SET_GET, OVERLAP_CUPY, ">=", 1.6),
    (CUPY_SET_GET, OVERLAP_TORCH, ">=", 1.6),
)
# Reported beside the checks, with no target.
INFO_RATIOS = ((TORCH_STREAMS, OVERLAP_TORCH), (OVERLAP_TORCH_AS_TENSOR, CPP))

# The prefetch section.
PREFETCH_BATCHES = 40
QUICK_PREFETCH_BATCHES = 12
PREFETCH_BATCH_ELEMENTS = 8 * MIB  # float32: 32 MiB a batch
QUICK_PREFETCH_BATCH_ELEMENTS = 2 * MIB  # 8 MiB a batch
PREFETCH_SEED = SEED + 1
COMPUTE_OVER_COPY = 1.5  # the sleep per batch lasts this many times one batch's upload
SLEEP_PROBE_CYCLES = 1_000_000  # torch.cuda._sleep calibrated on this many cycles
CALIBRATION_SAMPLES = 5  # event timings per calibration measurement (the median is kept)
SUM_RTOL = 1e-3  # the device sum of the batches against the host's

COMPUTE_ALONE = "compute_alone"
NO_PREFETCH = "no_prefetch"
PREFETCH_2 = "prefetch_2"
PREFETCH_3 = "prefetch_3"
COPY_ALONE = "copy_alone"
PREFETCH_ROW_ORDER = (COMPUTE_ALONE, NO_PREFETCH, PREFETCH_2, PREFETCH_3, COPY_ALONE)
# The acceptance item for prefetch, as (numerator, denominator, comparison, target).
PREFETCH_CHECK = (PREFETCH_2, COMPUTE_ALONE, "<=", 1.10)
# "Without prefetch it pays both": reported beside 1 + copy/compute, with no target.
PAYS_BOTH = (NO_PREFETCH, COMPUTE_ALONE)
# Reported beside them, with no target.
PREFETCH_INFO_RATIOS = ((PREFETCH_3, COMPUTE_ALONE), (COPY_ALONE, COMPUTE_ALONE))

CUDA_MEMCPY_HOST_TO_DEVICE = 1
CUDA_MEMCPY_DEVICE_TO_HOST = 2
NO_DEVICE_MESSAGE = "no CUDA device: overlap.bench needs one"


class Mismatch(Exception):
    """A run's output (or link_floor's device input, or a prefetch row's sum) differs from the reference."""


def _nothing() -> None:
    pass


def _no_defect() -> Optional[str]:
    return None


@dataclass
class Row:
    """One benchmark row: a whole host-to-host run and what must happen around it, untimed.

    run: issues the run and returns once the output is on the host (its
        return value, a RunReport for the Pipeline rows, is kept from the warm-up).
    reset: called before each run, after y is NaN-filled.
    defect: called after each run; a description of what is wrong, or None.
    """

    name: str
    run: Callable[[], Any]
    reset: Callable[[], None] = _nothing
    defect: Callable[[], Optional[str]] = _no_defect
    samples_ms: List[float] = field(default_factory=list)


@dataclass
class Workload:
    """The host arrays every row reads and writes, and the expected output."""

    x: np.ndarray
    y: np.ndarray
    ref: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.x.nbytes


@dataclass
class Libraries:
    """The optional array libraries, each with why it is absent when it is."""

    cupy: Any = None
    torch: Any = None
    missing: Dict[str, str] = field(default_factory=dict)


@dataclass
class Setup:
    """The rows to time, and what was skipped or is worth knowing about them."""

    rows: List[Row] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    report: Optional[RunReport] = None  # cpp_pipeline's warm-up: the chunking the rows share


@dataclass
class Batches:
    """The prefetch section's host batches (page-locked torch tensors) and what is known of them."""

    host: List[Any]
    host_sum: float  # float64 sum of every element of every batch
    elements: int  # per batch

    @property
    def nbytes(self) -> int:
        """Bytes per batch."""
        return self.elements * DTYPE.itemsize


@dataclass
class ComputeCost:
    """The calibrated compute per batch of the prefetch section, and the copy it is measured against."""

    cycles: int  # torch.cuda._sleep's argument
    copy_ms: float  # one batch's upload (events, median)
    cycles_per_ms: float  # what torch.cuda._sleep did on SLEEP_PROBE_CYCLES (events, median)
    compute_ms: float  # the whole compute: the sleep and the sum (events, median)


# ----------------------------------------------------------------------------
# Arguments, libraries and data
# ----------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


def _mib(elements: int) -> int:
    """MiB of float32 in `elements` elements."""
    return elements * DTYPE.itemsize // MIB


def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m overlap.bench",
        description=(
            "Times y = 2x + 1 over 256 MiB of float32, host to host, through overlap.Pipeline with a C++ "
            "stage (cpp_pipeline), a CuPy stage (overlap_cupy) and a PyTorch stage (overlap_torch), "
            "against CuPy's set/get per chunk (cupy_set_get), PyTorch with hand-written streams "
            "(torch_streams) and the link's floor (link_floor: one upload and one download at once). "
            "Then a training-loop-like run: 40 pinned batches of 32 MiB, each computed on for 1.5x its "
            "upload time, without prefetch (no_prefetch), through overlap.prefetch with 2 and 3 slots "
            "(prefetch_2, prefetch_3), and against the compute alone (compute_alone) and the uploads alone "
            "(copy_alone). Every output of every run is checked. Needs a CUDA device; CuPy and PyTorch are "
            "optional (rows that need one are skipped without it; the prefetch section needs PyTorch)."
        ),
        epilog=(
            "Exit status: 0 on success, 1 when a run's output is wrong, 2 without a CUDA device. "
            "The module docstring (pydoc overlap.bench) says what each row measures and why."
        ),
    )
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_BYTES // MIB} MiB instead of {FULL_BYTES // MIB} MiB, "
                             f"{QUICK_PREFETCH_BATCHES} batches of {_mib(QUICK_PREFETCH_BATCH_ELEMENTS)} MiB "
                             f"instead of {PREFETCH_BATCHES} of {_mib(PREFETCH_BATCH_ELEMENTS)} MiB, and "
                             f"{QUICK_REPS} repetitions by default; prints the ratios but no verdicts")
    parser.add_argument("--reps", type=_positive_int, metavar="N",
                        help=f"timed runs of each row (default {FULL_REPS}, or {QUICK_REPS} with --quick)")
    parser.add_argument("--only", choices=("pipeline", "prefetch"),
                        help="run only this section (default: both, pipeline first)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write the device, date, sizes, every sample and the ratios to FILE as JSON "
                             "(the prefetch section's under the key \"prefetch\")")
    args = parser.parse_args(argv)
    if args.reps is None:
        args.reps = QUICK_REPS if args.quick else FULL_REPS
    return args


def _load_cupy() -> Tuple[Any, Optional[str]]:
    try:
        return importlib.import_module("cupy"), None
    except ImportError:
        return None, "cupy not installed"
    except Exception as e:  # a broken install fails in many ways; say how and go on without it
        return None, f"cupy failed to load: {e}"


def _load_torch() -> Tuple[Any, Optional[str]]:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None, "torch not installed"
    except Exception as e:
        return None, f"torch failed to load: {e}"
    if not torch.cuda.is_available():
        return None, "torch has no CUDA"
    return torch, None


def _load_libraries() -> Libraries:
    libraries = Libraries()
    libraries.cupy, cupy_missing = _load_cupy()
    libraries.torch, torch_missing = _load_torch()
    for name, reason in (("cupy", cupy_missing), ("torch", torch_missing)):
        if reason is not None:
            libraries.missing[name] = reason
    return libraries


def _device_name(libraries: Libraries) -> str:
    if libraries.torch is not None:
        return str(libraries.torch.cuda.get_device_name(0))
    if libraries.cupy is not None:
        name = libraries.cupy.cuda.runtime.getDeviceProperties(0)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    return "unknown (neither cupy nor torch can name it)"


def _make_workload(nbytes: int) -> Workload:
    """Pinned x uniform in [INPUT_LOW, INPUT_HIGH) from SEED, pinned y, and ref = 2x + 1 in float32."""
    count = nbytes // DTYPE.itemsize
    x = pinned_empty(count, DTYPE)
    rng = np.random.default_rng(SEED)
    for start in range(0, count, FILL_BLOCK):
        stop = min(start + FILL_BLOCK, count)
        x[start:stop] = rng.uniform(INPUT_LOW, INPUT_HIGH, stop - start)
    ref = np.float32(2) * x + np.float32(1)
    return Workload(x=x, y=pinned_empty(count, DTYPE), ref=ref)


def _chunk_bounds(report: RunReport, count: int) -> List[Tuple[int, int]]:
    """The [start, stop) element ranges of the chunks a Pipeline run cut `count` elements into."""
    sizes = [size // DTYPE.itemsize for size in report.chunk_schedule] or [report.chunk_bytes // DTYPE.itemsize]
    bounds: List[Tuple[int, int]] = []
    start = 0
    while start < count:
        size = sizes[min(len(bounds), len(sizes) - 1)]
        bounds.append((start, min(start + size, count)))
        start += size
    if len(bounds) != report.chunks:
        raise RuntimeError(f"overlap.bench: cut the input into {len(bounds)} chunks where the Pipeline "
                           f"reported {report.chunks}; the rows would not compare like with like")
    return bounds


# ----------------------------------------------------------------------------
# Rows
# ----------------------------------------------------------------------------


def _cpp_row(work: Workload) -> Row:
    pipeline = Pipeline()
    return Row(CPP, lambda: pipeline.run_affine(work.x, work.y))


def _cupy_affine_kernel(cupy: Any) -> Any:
    return cupy.ElementwiseKernel("float32 x", "float32 y", "y = 2 * x + 1", "overlap_affine")


def _overlap_cupy_row(work: Workload, cupy: Any) -> Row:
    pipeline = Pipeline()
    kernel = _cupy_affine_kernel(cupy)

    def stage(chunk_in: Any, chunk_out: Any, stream: Any) -> None:
        with stream.cupy():
            kernel(chunk_in.cupy(), chunk_out.cupy())

    return Row(OVERLAP_CUPY, lambda: pipeline.run(work.x, work.y, stage))


def _overlap_torch_row(work: Workload, torch: Any) -> Row:
    pipeline = Pipeline()
    # 1 + x * 2 in one kernel (addcmul broadcasts the 0-d tensors); rounds
    # once, as the reference does.
    one = torch.ones((), device="cuda")
    two = torch.full((), 2.0, device="cuda")

    def stage(chunk_in: Any, chunk_out: Any, stream: Any) -> None:
        with torch.cuda.stream(stream.torch()):
            torch.addcmul(one, chunk_in.torch(), two, out=chunk_out.torch())

    return Row(OVERLAP_TORCH, lambda: pipeline.run(work.x, work.y, stage))


def _overlap_torch_as_tensor_row(work: Workload, torch: Any) -> Row:
    pipeline = Pipeline()

    def stage(chunk_in: Any, chunk_out: Any, stream: Any) -> None:
        t_in = torch.as_tensor(chunk_in, device="cuda")
        t_out = torch.as_tensor(chunk_out, device="cuda")
        with torch.cuda.stream(stream.torch()):
            torch.mul(t_in, 2.0, out=t_out).add_(1.0)

    return Row(OVERLAP_TORCH_AS_TENSOR, lambda: pipeline.run(work.x, work.y, stage))


def _cupy_set_get_row(work: Workload, cupy: Any, report: RunReport) -> Row:
    bounds = _chunk_bounds(report, work.x.size)
    longest = max(stop - start for start, stop in bounds)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(report.streams)]
    d_in = [cupy.empty(longest, DTYPE) for _ in streams]
    d_out = [cupy.empty(longest, DTYPE) for _ in streams]
    kernel = _cupy_affine_kernel(cupy)
    x, y = work.x, work.y

    def run() -> None:
        for k, (start, stop) in enumerate(bounds):
            slot = k % len(streams)
            stream, a, b = streams[slot], d_in[slot][: stop - start], d_out[slot][: stop - start]
            a.set(x[start:stop], stream=stream)
            with stream:
                kernel(a, b)
            b.get(stream=stream, out=y[start:stop])
        for stream in streams:
            stream.synchronize()

    def reset() -> None:  # a skipped upload must not find the right input left over
        for buffer in d_in:
            buffer.fill(np.nan)
        cupy.cuda.Device().synchronize()

    return Row(CUPY_SET_GET, run, reset)


def _torch_streams_row(work: Workload, torch: Any, report: RunReport) -> Row:
    bounds = _chunk_bounds(report, work.x.size)
    longest = max(stop - start for start, stop in bounds)
    streams = [torch.cuda.Stream() for _ in range(report.streams)]
    d_in = [torch.empty(longest, dtype=torch.float32, device="cuda") for _ in streams]
    d_out = [torch.empty(longest, dtype=torch.float32, device="cuda") for _ in streams]
    x, y = torch.from_numpy(work.x), torch.from_numpy(work.y)
    one = torch.ones((), device="cuda")  # overlap_torch's one kernel
    two = torch.full((), 2.0, device="cuda")

    def run() -> None:
        for k, (start, stop) in enumerate(bounds):
            slot = k % len(streams)
            a, b = d_in[slot][: stop - start], d_out[slot][: stop - start]
            with torch.cuda.stream(streams[slot]):
                a.copy_(x[start:stop], non_blocking=True)
                torch.addcmul(one, a, two, out=b)
                y[start:stop].copy_(b, non_blocking=True)
        for stream in streams:
            stream.synchronize()

    def reset() -> None:
        for buffer in d_in:
            buffer.fill_(float("nan"))
        torch.cuda.synchronize()

    return Row(TORCH_STREAMS, run, reset)


def _link_floor_cupy(work: Workload, cupy: Any) -> Row:
    memcpy = cupy.cuda.runtime.memcpyAsync
    up, down = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    d_in = cupy.empty(work.x.size, DTYPE)
    d_out = cupy.asarray(work.ref)  # what the download brings back: the expected output
    d_x = cupy.asarray(work.x)  # what the upload must leave in d_in
    nbytes = work.nbytes

    def run() -> None:
        memcpy(d_in.data.ptr, work.x.ctypes.data, nbytes, CUDA_MEMCPY_HOST_TO_DEVICE, up.ptr)
        memcpy(work.y.ctypes.data, d_out.data.ptr, nbytes, CUDA_MEMCPY_DEVICE_TO_HOST, down.ptr)
        up.synchronize()
        down.synchronize()

    def reset() -> None:
        d_in.fill(np.nan)
        cupy.cuda.Device().synchronize()

    def defect() -> Optional[str]:
        if bool(cupy.array_equal(d_in, d_x)):
            return None
        return f"device input differs from x at index {int(cupy.flatnonzero(d_in != d_x)[0])}"

    return Row(LINK_FLOOR, run, reset, defect)


def _link_floor_torch(work: Workload, torch: Any) -> Row:
    up, down = torch.cuda.Stream(), torch.cuda.Stream()
    x, y = torch.from_numpy(work.x), torch.from_numpy(work.y)
    d_in = torch.empty(work.x.size, dtype=torch.float32, device="cuda")
    d_out = torch.from_numpy(work.ref).to("cuda")
    d_x = x.to("cuda")

    def run() -> None:
        with torch.cuda.stream(up):
            d_in.copy_(x, non_blocking=True)
        with torch.cuda.stream(down):
            y.copy_(d_out, non_blocking=True)
        up.synchronize()
        down.synchronize()

    def reset() -> None:
        d_in.fill_(float("nan"))
        torch.cuda.synchronize()

    def defect() -> Optional[str]:
        if bool(torch.equal(d_in, d_x)):
            return None
        return f"device input differs from x at index {int(torch.nonzero(d_in != d_x)[0, 0])}"

    return Row(LINK_FLOOR, run, reset, defect)


# ----------------------------------------------------------------------------
# Running and checking
# ----------------------------------------------------------------------------


def _verify(row: Row, work: Workload, when: str) -> None:
    if not np.array_equal(work.y, work.ref):
        bad = int(np.flatnonzero(work.y != work.ref)[0])
        raise Mismatch(f"{row.name}: wrong output at index {bad} ({when}): "
                       f"got {float(work.y[bad])}, expected {float(work.ref[bad])}")
    defect = row.defect()
    if defect is not None:
        raise Mismatch(f"{row.name}: {defect} ({when})")


def _one_run(row: Row, work: Workload, when: str) -> Tuple[float, Any]:
    """(wall ms, the run's return value) of one checked run."""
    work.y.fill(np.nan)
    row.reset()
    start = time.perf_counter()
    result = row.run()
    elapsed_ms = (time.perf_counter() - start) * 1e3
    _verify(row, work, when)
    return elapsed_ms, result


def _warm(row: Row, work: Workload, setup: Setup) -> Any:
    """Runs the row once untimed (checked), adds it to the setup, and returns what its run returned."""
    _, result = _one_run(row, work, "warm-up")
    setup.rows.append(row)
    return result


def _cupy_notes(cupy: Any) -> List[str]:
    notes = [f"{CUPY_SET_GET}: "
             + ("this CuPy's ndarray.get() waits for its copy by default, so each chunk is back on the host "
                "before the next is issued (as code written this way runs)"
                if "blocking" in (cupy.ndarray.get.__doc__ or "")
                else "this CuPy's ndarray.get(stream=s, out=pinned) copies asynchronously")]
    return notes


def _torch_notes(torch: Any, work: Workload) -> List[str]:
    if torch.from_numpy(work.x).is_pinned() and torch.from_numpy(work.y).is_pinned():
        return []
    return [f"{TORCH_STREAMS}: torch does not see overlap.pinned_empty memory as pinned; "
            "its non_blocking copies may run synchronously"]


def _add_cupy_rows(work: Workload, cupy: Any, setup: Setup) -> None:
    report = _warm(_overlap_cupy_row(work, cupy), work, setup)
    _warm(_cupy_set_get_row(work, cupy, report), work, setup)
    setup.notes.extend(_cupy_notes(cupy))


def _add_torch_rows(work: Workload, torch: Any, setup: Setup) -> None:
    report = _warm(_overlap_torch_row(work, torch), work, setup)
    _warm(_overlap_torch_as_tensor_row(work, torch), work, setup)
    _warm(_torch_streams_row(work, torch, report), work, setup)
    setup.notes.extend(_torch_notes(torch, work))


def _build_rows(work: Workload, libraries: Libraries) -> Setup:
    """Makes and warms up every row the installed libraries allow, in ROW_ORDER."""
    setup = Setup()
    setup.report = _warm(_cpp_row(work), work, setup)
    for name, add in (("cupy", _add_cupy_rows), ("torch", _add_torch_rows)):
        module = getattr(libraries, name)
        if module is not None:
            add(work, module, setup)
        else:
            rows = ((OVERLAP_CUPY, CUPY_SET_GET) if name == "cupy"
                    else (OVERLAP_TORCH, OVERLAP_TORCH_AS_TENSOR, TORCH_STREAMS))
            setup.skipped.extend(f"{row} ({libraries.missing[name]})" for row in rows)
    if libraries.cupy is not None:
        _warm(_link_floor_cupy(work, libraries.cupy), work, setup)
    elif libraries.torch is not None:
        _warm(_link_floor_torch(work, libraries.torch), work, setup)
    else:
        setup.skipped.append(f"{LINK_FLOOR} (neither cupy nor torch installed)")
    setup.rows.sort(key=lambda row: ROW_ORDER.index(row.name))
    return setup


def _time_rows(rows: List[Row], reps: int, one_run: Callable[[Row, str], float], label: str = "rep") -> None:
    """reps rounds; each round runs every row once, in order, and logs one line to stderr.

    one_run(row, when) runs the row once, checked, and returns its wall time in ms.
    """
    for rep in range(1, reps + 1):
        for row in rows:
            row.samples_ms.append(one_run(row, f"repetition {rep}"))
        timings = ", ".join(f"{row.name} {row.samples_ms[-1]:.2f}" for row in rows)
        print(f"{label} {rep}/{reps}: {timings} ms", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------


def _medians(rows: List[Row]) -> Dict[str, float]:
    return {row.name: statistics.median(row.samples_ms) for row in rows}


def _ratio(medians: Dict[str, float], numerator: str, denominator: str) -> Optional[float]:
    if numerator not in medians or denominator not in medians:
        return None
    return medians[numerator] / medians[denominator]


def _ratio_key(numerator: str, denominator: str) -> str:
    return f"{numerator}/{denominator}"


def _all_ratios(medians: Dict[str, float]) -> Dict[str, Optional[float]]:
    pairs = [(n, d) for n, d, _, _ in CHECKS] + list(INFO_RATIOS)
    return {_ratio_key(n, d): _ratio(medians, n, d) for n, d in pairs}


def _format_ratio(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


def _print_header(work: Workload, device: str, setup: Setup, reps: int) -> None:
    report = setup.report
    print(f"overlap.bench {__version__}: y = 2x + 1 over {work.nbytes // MIB} MiB of float32 in and out, "
          f"pinned, on {device}")
    if report is not None:
        print(f"Pipeline defaults: {report.chunks} chunks of {report.chunk_bytes / MIB:g} MiB "
              f"on {report.streams} streams; {reps} timed runs per row, round-robin")
    for line in setup.skipped:
        print(f"skipped: {line}")
    for line in setup.notes:
        print(f"note: {line}")


def _print_table(rows: List[Row], medians: Dict[str, float]) -> None:
    print()
    print(f"{'row':<24}{'median ms':>11}{'min..max ms':>22}{'x ' + CPP:>16}{'x ' + LINK_FLOOR:>14}")
    for row in rows:
        span = f"{min(row.samples_ms):.2f}..{max(row.samples_ms):.2f}"
        print(f"{row.name:<24}{medians[row.name]:>11.2f}{span:>22}"
              f"{_format_ratio(_ratio(medians, row.name, CPP)):>16}"
              f"{_format_ratio(_ratio(medians, row.name, LINK_FLOOR)):>14}")


def _verdict(value: float, comparison: str, target: float) -> bool:
    return value <= target if comparison == "<=" else value >= target


def _checks(medians: Dict[str, float], quick: bool) -> List[Dict[str, Any]]:
    results = []
    for numerator, denominator, comparison, target in CHECKS:
        value = _ratio(medians, numerator, denominator)
        met = None if value is None or quick else _verdict(value, comparison, target)
        results.append({"ratio": _ratio_key(numerator, denominator), "value": value,
                        "target": f"{comparison} {target:.2f}", "met": met})
    return results


def _print_checks(checks: List[Dict[str, Any]], medians: Dict[str, float], quick: bool) -> None:
    print()
    for check in checks:
        numerator, denominator = check["ratio"].split("/")
        if check["value"] is None:
            absent = numerator if numerator not in medians else denominator
            print(f"{numerator} / {denominator}: not measured ({absent} skipped) (target {check['target']})")
            continue
        verdict = "" if check["met"] is None else (": met" if check["met"] else ": NOT met")
        print(f"{numerator} / {denominator} = {check['value']:.2f} (target {check['target']}){verdict}")
    for numerator, denominator in INFO_RATIOS:
        value = _ratio(medians, numerator, denominator)
        if value is not None:
            print(f"{numerator} / {denominator} = {value:.2f} (reported, no target)")
    if quick:
        print("quick sizes: no verdicts")


# ----------------------------------------------------------------------------
# The prefetch section
# ----------------------------------------------------------------------------


def _make_batches(torch: Any, count: int, elements: int) -> Batches:
    """count page-locked float32 batches, uniform in [0, 1) from PREFETCH_SEED, and their float64 host sum."""
    rng = np.random.default_rng(PREFETCH_SEED)
    host: List[Any] = []
    total = 0.0
    for _ in range(count):
        values = rng.random(elements, dtype=np.float32)
        batch = torch.empty(elements, dtype=torch.float32, pin_memory=True)
        batch.copy_(torch.from_numpy(values))
        host.append(batch)
        total += float(values.sum(dtype=np.float64))
    return Batches(host=host, host_sum=total, elements=elements)


def _compute_step(torch: Any, cycles: int, acc: Any) -> Callable[[Any], None]:
    """The compute per batch: `cycles` of GPU sleep on the current stream, then acc += batch.sum()."""

    def step(batch: Any) -> None:
        torch.cuda._sleep(cycles)
        acc.add_(batch.sum())

    return step


def _event_median_ms(torch: Any, work: Callable[[], Any]) -> float:
    """The median GPU time of work() on the current stream over CALIBRATION_SAMPLES runs, after one warm-up."""
    work()
    samples = []
    for _ in range(CALIBRATION_SAMPLES):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def _calibrate(torch: Any, batches: Batches, resident: List[Any]) -> ComputeCost:
    """Times one batch's upload and torch.cuda._sleep, sets the sleep to last COMPUTE_OVER_COPY uploads,
    and times the whole compute per batch (the sleep and the sum) on a batch already on the device."""
    source = batches.host[0]
    target = torch.empty_like(source, device="cuda")
    copy_ms = _event_median_ms(torch, lambda: target.copy_(source, non_blocking=True))
    cycles_per_ms = SLEEP_PROBE_CYCLES / _event_median_ms(torch, lambda: torch.cuda._sleep(SLEEP_PROBE_CYCLES))
    cycles = max(1, round(COMPUTE_OVER_COPY * copy_ms * cycles_per_ms))
    step = _compute_step(torch, cycles, torch.zeros((), dtype=torch.float64, device="cuda"))
    compute_ms = _event_median_ms(torch, lambda: step(resident[0]))
    return ComputeCost(cycles=cycles, copy_ms=copy_ms, cycles_per_ms=cycles_per_ms, compute_ms=compute_ms)


def _sum_defect(got: float, expected: float) -> Optional[str]:
    """What is wrong with a run's device sum of all the batches, or None when it is within SUM_RTOL."""
    if abs(got - expected) <= SUM_RTOL * abs(expected):
        return None
    return (f"the device sum of all the batches is {got!r}, the host's (float64) {expected!r}: "
            f"off by more than a relative {SUM_RTOL:g}")


def _summed_row(name: str, torch: Any, batches: Batches, cycles: int,
                loop: Callable[[Callable[[Any], None]], None]) -> Row:
    """A row whose run is loop(step) then torch.cuda.synchronize(), checked by its sum of all the batches.

    step(batch) is the compute per batch, adding into this row's own accumulator,
    which is zeroed before each run and compared with the host's sum after it.
    """
    acc = torch.zeros((), dtype=torch.float64, device="cuda")
    step = _compute_step(torch, cycles, acc)

    def run() -> None:
        loop(step)
        torch.cuda.synchronize()

    def reset() -> None:
        acc.zero_()
        torch.cuda.synchronize()

    def defect() -> Optional[str]:
        return _sum_defect(float(acc.item()), batches.host_sum)

    return Row(name, run, reset, defect)


def _compute_alone_row(torch: Any, batches: Batches, cycles: int, resident: List[Any]) -> Row:
    """The compute over batches already on the device: the floor."""

    def loop(step: Callable[[Any], None]) -> None:
        for batch in resident:
            step(batch)

    return _summed_row(COMPUTE_ALONE, torch, batches, cycles, loop)


def _no_prefetch_row(torch: Any, batches: Batches, cycles: int) -> Row:
    """Each batch's upload and its compute, one after the other on the current stream."""

    def loop(step: Callable[[Any], None]) -> None:
        for batch in batches.host:
            step(batch.to("cuda", non_blocking=True))

    return _summed_row(NO_PREFETCH, torch, batches, cycles, loop)


def _prefetch_row(name: str, slots: int, torch: Any, batches: Batches, cycles: int) -> Row:
    """The compute over overlap.prefetch(batches, slots=slots)."""

    def loop(step: Callable[[Any], None]) -> None:
        for batch in prefetch(batches.host, slots=slots):
            step(batch)

    return _summed_row(name, torch, batches, cycles, loop)


def _copy_alone_row(torch: Any, batches: Batches, resident: List[Any]) -> Row:
    """The uploads alone on the default stream, kept until the run is checked against compute_alone's copies."""
    kept: List[Any] = []

    def run() -> None:
        for batch in batches.host:
            kept.append(batch.to("cuda", non_blocking=True))
        torch.cuda.synchronize()

    def defect() -> Optional[str]:
        uploaded, _ = list(kept), kept.clear()
        if len(uploaded) != len(resident):
            return f"{len(uploaded)} batches uploaded, expected {len(resident)}"
        for k, (got, want) in enumerate(zip(uploaded, resident)):
            if not bool(torch.equal(got, want)):
                return f"batch {k} on the device differs from the same batch in {COMPUTE_ALONE}"
        return None

    return Row(COPY_ALONE, run, kept.clear, defect)


def _prefetch_rows(torch: Any, batches: Batches, resident: List[Any], cycles: int) -> List[Row]:
    """The section's rows, in PREFETCH_ROW_ORDER."""
    return [
        _compute_alone_row(torch, batches, cycles, resident),
        _no_prefetch_row(torch, batches, cycles),
        _prefetch_row(PREFETCH_2, 2, torch, batches, cycles),
        _prefetch_row(PREFETCH_3, 3, torch, batches, cycles),
        _copy_alone_row(torch, batches, resident),
    ]


def _checked_run(row: Row, when: str) -> float:
    """Wall ms of one run of the row, reset before and checked after (both untimed)."""
    row.reset()
    start = time.perf_counter()
    row.run()
    elapsed_ms = (time.perf_counter() - start) * 1e3
    defect = row.defect()
    if defect is not None:
        raise Mismatch(f"{row.name}: {defect} ({when})")
    return elapsed_ms


def _print_prefetch_header(batches: Batches, cost: ComputeCost, device: str, reps: int) -> None:
    print(f"overlap.bench {__version__} prefetch: a loop over {len(batches.host)} batches of "
          f"{_mib(batches.elements)} MiB of float32, pinned, on {device}")
    print(f"one batch's upload {cost.copy_ms:.3f} ms ({batches.nbytes / cost.copy_ms / 1e6:.1f} GB/s); "
          f"compute per batch {cost.compute_ms:.3f} ms: torch.cuda._sleep({cost.cycles}) and a sum "
          f"({cost.compute_ms / cost.copy_ms:.2f}x the upload); {reps} timed runs per row, round-robin")


def _print_prefetch_table(rows: List[Row], medians: Dict[str, float], batch_count: int) -> None:
    print()
    print(f"{'row':<16}{'median ms':>11}{'min..max ms':>22}{'ms/batch':>11}{'x ' + COMPUTE_ALONE:>17}")
    for row in rows:
        span = f"{min(row.samples_ms):.2f}..{max(row.samples_ms):.2f}"
        print(f"{row.name:<16}{medians[row.name]:>11.2f}{span:>22}{medians[row.name] / batch_count:>11.3f}"
              f"{_format_ratio(_ratio(medians, row.name, COMPUTE_ALONE)):>17}")


def _prefetch_check(medians: Dict[str, float], cost: ComputeCost, quick: bool) -> Dict[str, Any]:
    """The acceptance item, judged unless quick or its premise (compute per batch >= its copy) fails."""
    numerator, denominator, comparison, target = PREFETCH_CHECK
    value = _ratio(medians, numerator, denominator)
    premise = cost.compute_ms >= cost.copy_ms
    met = None if value is None or quick or not premise else _verdict(value, comparison, target)
    return {"ratio": _ratio_key(numerator, denominator), "value": value,
            "target": f"{comparison} {target:.2f}", "met": met, "compute_at_least_copy": premise}


def _pays_both_expected(cost: ComputeCost) -> float:
    """What no_prefetch / compute_alone should be near when copy and compute serialize: 1 + copy/compute."""
    return 1.0 + cost.copy_ms / cost.compute_ms


def _print_prefetch_checks(check: Dict[str, Any], medians: Dict[str, float], cost: ComputeCost,
                           quick: bool) -> None:
    print()
    numerator, denominator = check["ratio"].split("/")
    verdict = "" if check["met"] is None else (": met" if check["met"] else ": NOT met")
    print(f"{numerator} / {denominator} = {_format_ratio(check['value'])} (target {check['target']}){verdict}")
    if not check["compute_at_least_copy"] and not quick:
        print(f"not judged: the compute per batch ({cost.compute_ms:.3f} ms) is shorter than its copy "
              f"({cost.copy_ms:.3f} ms), and the target assumes it is not")
    numerator, denominator = PAYS_BOTH
    print(f"{numerator} / {denominator} = {_format_ratio(_ratio(medians, numerator, denominator))} "
          f"(pays both: expect about 1 + copy/compute = {_pays_both_expected(cost):.2f})")
    for numerator, denominator in PREFETCH_INFO_RATIOS:
        print(f"{numerator} / {denominator} = {_format_ratio(_ratio(medians, numerator, denominator))} "
              f"(reported, no target)")
    if quick:
        print("quick sizes: no verdicts")


def _prefetch_json(batches: Batches, cost: ComputeCost, rows: List[Row], check: Dict[str, Any]) -> Dict[str, Any]:
    """The section's part of the --json document."""
    medians = _medians(rows)
    pairs = [PREFETCH_CHECK[:2], PAYS_BOTH] + list(PREFETCH_INFO_RATIOS)
    return {
        "skipped": None,
        "batches": len(batches.host),
        "batch_bytes": batches.nbytes,
        "copy_ms_per_batch": cost.copy_ms,
        "compute_ms_per_batch": cost.compute_ms,
        "sleep_cycles": cost.cycles,
        "sleep_cycles_per_ms": cost.cycles_per_ms,
        "rows": _rows_json(rows, medians),
        "ratios": {_ratio_key(n, d): _ratio(medians, n, d) for n, d in pairs},
        "expected_no_prefetch_ratio": _pays_both_expected(cost),
        "checks": [check],
    }


def _prefetch_section(args: argparse.Namespace, device: str, libraries: Libraries) -> Dict[str, Any]:
    """Runs and prints the prefetch section; returns its part of the --json document.

    Without torch it prints why it is skipped and returns {"skipped": why}.
    Raises Mismatch when a run's sum (or copy_alone's upload) is wrong.
    """
    torch = libraries.torch
    if torch is None:
        reason = libraries.missing.get("torch", "torch not installed")
        print(f"skipped: prefetch ({reason})")
        return {"skipped": reason}
    count = QUICK_PREFETCH_BATCHES if args.quick else PREFETCH_BATCHES
    elements = QUICK_PREFETCH_BATCH_ELEMENTS if args.quick else PREFETCH_BATCH_ELEMENTS
    batches = _make_batches(torch, count, elements)
    resident = [batch.to("cuda") for batch in batches.host]
    torch.cuda.synchronize()
    cost = _calibrate(torch, batches, resident)
    rows = _prefetch_rows(torch, batches, resident, cost.cycles)
    _print_prefetch_header(batches, cost, device, args.reps)
    sys.stdout.flush()
    for row in rows:
        _checked_run(row, "warm-up")
    _time_rows(rows, args.reps, _checked_run, "prefetch rep")
    medians = _medians(rows)
    _print_prefetch_table(rows, medians, count)
    check = _prefetch_check(medians, cost, args.quick)
    _print_prefetch_checks(check, medians, cost, args.quick)
    return _prefetch_json(batches, cost, rows, check)


def _versions(libraries: Libraries) -> Dict[str, Optional[str]]:
    return {"overlap": __version__, "numpy": np.__version__,
            "cupy": getattr(libraries.cupy, "__version__", None),
            "torch": getattr(libraries.torch, "__version__", None)}


def _write_json(path: str, document: Dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2)
        f.write("\n")


def _rows_json(rows: List[Row], medians: Dict[str, float]) -> Dict[str, Dict[str, Any]]:
    """Each row's median, min, max and every sample, in ms, by name."""
    return {row.name: {"median_ms": medians[row.name], "min_ms": min(row.samples_ms),
                       "max_ms": max(row.samples_ms), "samples_ms": row.samples_ms}
            for row in rows}


def _json_document(args: argparse.Namespace, work: Optional[Workload], device: str, libraries: Libraries,
                   setup: Setup, checks: List[Dict[str, Any]],
                   prefetched: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The --json document: the pipeline section's keys (null or empty under --only prefetch),
    then "only" and "prefetch" (the prefetch section's results; null under --only pipeline)."""
    medians = _medians(setup.rows)
    report = setup.report
    return {
        "device": device,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "bytes": None if work is None else work.nbytes,
        "reps": args.reps,
        "quick": args.quick,
        "chunks": None if report is None else report.chunks,
        "chunk_bytes": None if report is None else report.chunk_bytes,
        "streams": None if report is None else report.streams,
        "versions": _versions(libraries),
        "rows": _rows_json(setup.rows, medians),
        "ratios": _all_ratios(medians),
        "checks": checks,
        "skipped": setup.skipped,
        "notes": setup.notes,
        "only": args.only,
        "prefetch": prefetched,
    }


def _pipeline_section(args: argparse.Namespace, device: str,
                      libraries: Libraries) -> Tuple[Workload, Setup, List[Dict[str, Any]]]:
    """Runs and prints the pipeline section; returns its workload, rows and checks for --json.

    Raises Mismatch when a run's output is wrong.
    """
    work = _make_workload(QUICK_BYTES if args.quick else FULL_BYTES)
    setup = _build_rows(work, libraries)
    _print_header(work, device, setup, args.reps)
    sys.stdout.flush()
    _time_rows(setup.rows, args.reps, lambda row, when: _one_run(row, work, when)[0])
    medians = _medians(setup.rows)
    _print_table(setup.rows, medians)
    checks = _checks(medians, args.quick)
    _print_checks(checks, medians, args.quick)
    return work, setup, checks


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse_args(argv)
    if not cuda_available():
        print(NO_DEVICE_MESSAGE, file=sys.stderr)
        return 2
    libraries = _load_libraries()
    device = _device_name(libraries)
    work: Optional[Workload] = None
    setup, checks = Setup(), _checks({}, args.quick)
    prefetched: Optional[Dict[str, Any]] = None
    try:
        if args.only in (None, "pipeline"):
            work, setup, checks = _pipeline_section(args, device, libraries)
        if args.only in (None, "prefetch"):
            if args.only is None:
                print()
            prefetched = _prefetch_section(args, device, libraries)
    except Mismatch as e:
        print(f"overlap.bench: {e}", file=sys.stderr)
        return 1
    if args.json:
        _write_json(args.json, _json_document(args, work, device, libraries, setup, checks, prefetched))
    return 0


if __name__ == "__main__":
    sys.exit(main())
