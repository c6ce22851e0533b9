"""overlap.Pipeline over NumPy arrays and CPU torch tensors, with a Python stage.

The C++ Pipeline cuts the host input into chunks, copies each into a device
ring slot on one of its streams, calls the stage, and copies the result back,
overlapping chunk k's kernel with chunk k+1's upload and chunk k-1's
download. The stage is Python: it gets the chunk's device memory as
DeviceArray views (CuPy, PyTorch and Numba read them without a copy, through
``__cuda_array_interface__`` or DLPack) and the chunk's Stream, and must
launch its work on that stream.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple, Union

import numpy as np

from ._errors import PipelineError

_cuda_module: Any = None
_cuda_failure: Optional[BaseException] = None


def _cuda() -> Any:
    """The _cuda extension, imported on first use: importing overlap needs no CUDA runtime."""
    global _cuda_module, _cuda_failure
    if _cuda_module is None and _cuda_failure is None:
        try:
            from . import _cuda as module  # type: ignore[attr-defined]

            _cuda_module = module
        except ImportError as e:
            _cuda_failure = e
    if _cuda_module is None:
        raise RuntimeError(
            "overlap was built without its CUDA layer, or the CUDA runtime could not be loaded "
            f"({_cuda_failure}); simulate() and check() work without it"
        )
    return _cuda_module


def cuda_available() -> bool:
    """True when the CUDA layer loaded and a CUDA device is visible."""
    try:
        return _cuda().device_count() > 0
    except RuntimeError:
        return False


class Stream:
    """A CUDA stream handle the Pipeline owns, for the stage to launch on.

    ``int(stream)`` and ``stream.ptr`` are the cudaStream_t; ``stream.cupy()``
    and ``stream.torch()`` wrap it as ``cupy.cuda.ExternalStream`` and
    ``torch.cuda.ExternalStream`` (made once per stream, then reused); it also
    speaks the ``__cuda_stream__`` protocol.
    """

    __slots__ = {"ptr": "The cudaStream_t, as an integer.", "_cupy": None, "_torch": None}

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        self._cupy: Any = None
        self._torch: Any = None

    def __int__(self) -> int:
        return self.ptr

    def __cuda_stream__(self) -> Tuple[int, int]:
        return (0, self.ptr)

    def cupy(self) -> Any:
        """This stream as a ``cupy.cuda.ExternalStream`` (use it as a context manager)."""
        if self._cupy is None:
            import cupy

            from_external = getattr(cupy.cuda.Stream, "from_external", None)  # CuPy 14
            self._cupy = from_external(self) if from_external else cupy.cuda.ExternalStream(self.ptr)
        return self._cupy

    def torch(self) -> Any:
        """This stream as a ``torch.cuda.ExternalStream`` (use with ``torch.cuda.stream(...)``)."""
        if self._torch is None:
            import torch

            self._torch = torch.cuda.ExternalStream(self.ptr)
        return self._torch

    def __repr__(self) -> str:
        return f"Stream(0x{self.ptr:x})"


class DeviceArray:
    """A one-dimensional view of a chunk's device memory, valid during the stage call only.

    ``readonly`` is True for chunk_in: the stage reads it and must not write
    it (the views are exported writable, as PyTorch requires).

    ``a.cupy()`` and ``a.torch()`` give views made once per ring slot (the
    fast path); ``cupy.asarray(a)``, ``torch.as_tensor(a, device="cuda")`` and
    ``numba.cuda.as_cuda_array(a)`` read it through
    ``__cuda_array_interface__``; ``torch.from_dlpack(a)`` and
    ``cupy.from_dlpack(a)`` through DLPack. The memory is a ring slot that the
    next chunks reuse: copy out what must outlive the call.
    """

    __slots__ = {
        "ptr": "The chunk's device address, as an integer.",
        "size": "The chunk's element count.",
        "dtype": "The elements' NumPy dtype (the host array's).",
        "readonly": "True for chunk_in, which the stage must not write.",
        "_cupy": None,
        "_torch": None,
    }

    def __init__(self, ptr: int, size: int, dtype: np.dtype, readonly: bool) -> None:
        self.ptr = ptr
        self.size = size
        self.dtype = dtype
        self.readonly = readonly
        self._cupy: Any = None
        self._torch: Any = None

    def cupy(self) -> Any:
        """This chunk as a ``cupy.ndarray`` view, made once per ring slot and reused run after run.

        The fast path: ``cupy.asarray(chunk)`` builds a new view every call.
        """
        if self._cupy is None:
            import cupy

            self._cupy = cupy.asarray(self)
        return self._cupy

    def torch(self) -> Any:
        """This chunk as a CUDA ``torch.Tensor`` view, made once per ring slot and reused run after run.

        The fast path: ``torch.as_tensor(chunk, device="cuda")`` builds a new
        tensor every call, which costs tens of microseconds per chunk.
        """
        if self._torch is None:
            import torch

            self._torch = torch.as_tensor(self, device="cuda")
        return self._torch

    @property
    def shape(self) -> Tuple[int]:
        """(size,): the views are one-dimensional."""
        return (self.size,)

    @property
    def nbytes(self) -> int:
        """The chunk's bytes: size times the dtype's item size."""
        return self.size * self.dtype.itemsize

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        # "stream": None tells the consumer no synchronization is needed:
        # the chunk is ready in the order of its own stream, the one the
        # stage must launch on. Naming the stream instead would make CuPy and
        # Numba synchronize the host with it on every view, every chunk.
        # Exported writable even for the input: PyTorch refuses read-only
        # memory (the stage must not write chunk_in all the same).
        return {
            "shape": (self.size,),
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }

    def __dlpack__(self, **kwargs: Any) -> Any:
        return _cuda().dlpack_view(self.ptr, self.size, self.dtype.str).__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return _cuda().dlpack_view(self.ptr, 0, self.dtype.str).__dlpack_device__()

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"DeviceArray(0x{self.ptr:x}, size={self.size}, dtype={self.dtype})"


def _host_array(array: Any, name: str, writable: bool) -> np.ndarray:
    """A NumPy view of a NumPy array or CPU torch tensor, C-contiguous, never a copy."""
    if isinstance(array, np.ndarray):
        view = array
    elif type(array).__module__.startswith("torch"):
        if array.device.type != "cpu":
            raise ValueError(f"{name}: a host array is needed, not a tensor on {array.device}")
        view = array.detach().numpy()
    else:
        raise TypeError(f"{name}: expected a NumPy array or a CPU torch tensor, not {type(array).__name__}")
    if not view.flags.c_contiguous:
        raise ValueError(f"{name}: the array must be C-contiguous (np.ascontiguousarray makes one)")
    if writable and not view.flags.writeable:
        raise ValueError(f"{name}: the array is read-only")
    if view.dtype.hasobject:
        raise ValueError(f"{name}: an array of Python objects cannot go to the GPU")
    return view


StageFunction = Callable[[DeviceArray, DeviceArray, Stream], Any]


class RunReport:
    """What a Pipeline run did: its chunking, streams, ring and host path, and its measured Timeline.

    Attributes:
        chunks: chunks the input was cut into.
        chunk_bytes: input bytes of a whole chunk.
        chunk_schedule: input bytes of each chunk, when a schedule was given.
        streams: CUDA streams the chunks went round-robin over.
        ring_depth: device chunk slots.
        device_bytes: device memory the ring holds.
        host_issue_ms: host time spent issuing the run (the stage calls included).
        host: how the host arrays were reached: 'pinned', 'registered' or 'staged'.
        bound: what bounded the first run of this size, once measured: 'copies',
            'balanced' or 'stage' (the automatic layout then adapts to it from
            the second run on); None when the layout does not adapt.
        parts: over several GPUs, one dict per GPU that had input: its
            'device', 'first_chunk', 'first_element' and 'chunks'; empty on one GPU.
    """

    def __init__(self, fields: Dict[str, Any]) -> None:
        self.chunks: int = fields["chunks"]
        self.chunk_bytes: int = fields["chunk_bytes"]
        self.chunk_schedule: List[int] = list(fields["chunk_schedule"])
        self.streams: int = fields["streams"]
        self.ring_depth: int = fields["ring_depth"]
        self.device_bytes: int = fields["device_bytes"]
        self.host_issue_ms: float = fields["host_issue_ms"]
        self.host: str = fields["host"]
        self.bound: Optional[str] = fields.get("bound")
        self.parts: List[Dict[str, int]] = [dict(part) for part in fields.get("parts", [])]
        timeline_json = fields.get("timeline_json")
        self._timeline_json: Optional[str] = timeline_json
        self._timeline: Any = None

    @property
    def timeline(self) -> Any:
        """The run measured with CUDA events (a Timeline), when the Pipeline was made with record=True."""
        if self._timeline is None and self._timeline_json is not None:
            from . import _native

            self._timeline = _native.Timeline.from_json(self._timeline_json)
        return self._timeline

    def __repr__(self) -> str:
        return (
            f"RunReport(chunks={self.chunks}, chunk_bytes={self.chunk_bytes}, streams={self.streams}, "
            f"ring_depth={self.ring_depth}, host={self.host!r}, bound={self.bound!r}, "
            f"host_issue_ms={self.host_issue_ms:.3f})"
        )


class CapturedPipeline:
    """One Pipeline run captured into a CUDA graph: ``replay()`` runs it again with one launch.

    The graph reads and writes the same host arrays every replay (refill the
    input in place); it keeps them alive. No Python runs per chunk.
    """

    def __init__(self, graph: Any, host_in: np.ndarray, host_out: np.ndarray) -> None:
        self._graph = graph
        self._arrays = (host_in, host_out)

    def replay(self) -> Dict[str, Any]:
        """Runs the captured work and waits for it; returns {'chunks', 'host_launch_ms'}."""
        return self._graph.replay()

    @property
    def captured(self) -> RunReport:
        """The run the capture recorded."""
        return RunReport(self._graph.captured())

    @property
    def instantiate_ms(self) -> float:
        """Host time the graph took to instantiate."""
        return self._graph.instantiate_ms

    @property
    def scheduling(self) -> str:
        """Who walks the graph at each replay: 'host' or 'device'."""
        return self._graph.scheduling


_PAGEABLE = ("reject", "register", "stage", "auto")
_SCHEDULING = ("host", "device")


def _reraise_with_cause(error: PipelineError, failures: List[BaseException]) -> NoReturn:
    """Raises the pipeline's error with the stage's exception as its cause.

    A KeyboardInterrupt or SystemExit in the stage is raised as itself (the
    pipeline has drained by then): Ctrl-C should stop a script, not become a
    PipelineError.
    """
    if not failures:
        raise error
    cause = failures[0]
    if not isinstance(cause, Exception):
        raise cause from error
    raise error from cause


def _device_list(devices: Union[Sequence[int], str, None]) -> List[int]:
    """The GPUs a Pipeline spreads over: [] for the current one alone."""
    if devices is None:
        return []
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices: {devices!r} is not 'all' or a list of GPU indices")
        return list(range(_cuda().device_count()))
    chosen = list(devices)
    if not chosen or any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in chosen):
        raise ValueError(f"devices: expected 'all' or a non-empty list of GPU indices (ints >= 0), not {devices!r}")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"devices: {chosen!r} names a GPU twice")
    return chosen


class Pipeline:
    """Chunked H2D -> stage -> D2H over host arrays, overlapped across CUDA streams.

    Every argument is optional; with none, the Pipeline chooses the chunking
    (a fixed fraction of the data, with uploads, kernels and downloads each on
    their own streams) and refuses pageable arrays.

    Args:
        chunk_bytes: input bytes per chunk.
        chunk_schedule: input bytes of each chunk in turn (sizes may vary; the
            last one repeats), instead of chunk_bytes.
        streams: CUDA streams the chunks go round-robin over.
        ring_depth: device chunk slots (defaults to the stream count).
        device_budget_bytes: most device memory the ring may hold.
        chunking: 'fixed' (the default) or 'planned' (the planner chooses on
            the built-in model of this GPU).
        calibrate: time the stage on a few chunk sizes and plan with its cost.
        pageable: what to do with pageable (not page-locked) arrays:
            'reject' (raise, the default), 'register' (cudaHostRegister for the
            run), 'stage' (copy through pinned slots with host threads) or
            'auto'. Arrays from pinned_empty() or torch's pin_memory() are
            page-locked already.
        record: measure the run with CUDA events into RunReport.timeline.
        output_ratio: (out, in): output elements per input elements (1, 1).
        devices: spread each run over these GPUs ('all': every visible one):
            one contiguous part of the input per GPU, each with its own
            streams, ring and host thread; the stage is called on the GPU of
            its chunk (the current device there, so CuPy and torch launch on
            it). None: the current GPU alone.
        adapt: 'first_run' (the default): when no layout option is given, the
            first run of each input size is timed and later runs take the
            layout that serves what bounded it (RunReport.bound): one kernel
            stream when the copies did, a ramp of chunks over five kernel
            streams when the stage did. 'off' keeps the first layout.
    """

    def __init__(
        self,
        *,
        chunk_bytes: Optional[int] = None,
        chunk_schedule: Optional[Sequence[int]] = None,
        streams: Optional[int] = None,
        ring_depth: Optional[int] = None,
        device_budget_bytes: Optional[int] = None,
        chunking: str = "fixed",
        calibrate: bool = False,
        pageable: str = "reject",
        record: bool = False,
        output_ratio: Tuple[int, int] = (1, 1),
        devices: Union[Sequence[int], str, None] = None,
        adapt: str = "first_run",
    ) -> None:
        if pageable not in _PAGEABLE:
            raise ValueError(f"pageable: {pageable!r} is not one of {', '.join(map(repr, _PAGEABLE))}")
        for name, value in (("chunk_bytes", chunk_bytes), ("streams", streams), ("ring_depth", ring_depth),
                            ("device_budget_bytes", device_budget_bytes)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise ValueError(f"{name}: expected a positive integer, not {value!r}")
        if len(output_ratio) != 2 or any(not isinstance(v, int) or v <= 0 for v in output_ratio):
            raise ValueError(f"output_ratio: expected two positive integers (out, in), not {output_ratio!r}")
        self._engine = _cuda().Pipeline(
            devices=_device_list(devices),
            chunk_bytes=chunk_bytes,
            chunk_schedule=list(chunk_schedule or []),
            streams=streams,
            ring_depth=ring_depth,
            device_budget_bytes=device_budget_bytes,
            chunking=chunking,
            calibrate=calibrate,
            pageable=pageable,
            record=record,
            ratio_out=output_ratio[0],
            ratio_in=output_ratio[1],
            adapt=adapt,
        )
        self._streams: Dict[int, Stream] = {}
        # One DeviceArray per ring slot, chunk size and dtype: the same
        # objects (and their cached CuPy and torch views) serve every run.
        self._views: Dict[Tuple[int, int, str, bool], DeviceArray] = {}

    def _view(self, ptr: int, count: int, dtype: np.dtype, readonly: bool) -> DeviceArray:
        key = (ptr, count, dtype.str, readonly)
        view = self._views.get(key)
        if view is None:
            if len(self._views) > 1024:  # the ring was remade many times over: start afresh
                self._views.clear()
            view = self._views[key] = DeviceArray(ptr, count, dtype, readonly)
        return view

    def _stream(self, ptr: int) -> Stream:
        stream = self._streams.get(ptr)
        if stream is None:
            stream = self._streams[ptr] = Stream(ptr)
        return stream

    def _adapter(self, stage: StageFunction, host_in: np.ndarray, host_out: np.ndarray,
                 failures: List[BaseException]) -> Callable[..., None]:
        if not callable(stage):
            raise TypeError(f"stage: expected a callable stage(chunk_in, chunk_out, stream), not {type(stage).__name__}")
        in_dtype, out_dtype = host_in.dtype, host_out.dtype
        stream_of, view_of = self._stream, self._view

        def call(in_ptr: int, in_count: int, out_ptr: int, out_count: int, stream_ptr: int, chunk: int) -> None:
            try:
                stage(view_of(in_ptr, in_count, in_dtype, True), view_of(out_ptr, out_count, out_dtype, False),
                      stream_of(stream_ptr))
            except BaseException as e:
                failures.append(e)
                raise

        return call

    def run(self, host_in: Any, host_out: Any, stage: StageFunction) -> RunReport:
        """Runs stage over host_in in chunks, writing host_out; returns when host_out is complete.

        host_in and host_out are NumPy arrays or CPU torch tensors,
        C-contiguous, of any dtype and shape (flattened); host_out holds
        host_in's element count times output_ratio. The GIL is released
        while the host waits on the GPU.

        Raises:
            ValueError: a bad argument (named), e.g. pageable arrays under
                pageable='reject' or an output of the wrong size.
            PipelineError: the stage or a copy failed at a chunk; the stage's
                exception is its __cause__.
        """
        src = _host_array(host_in, "host_in", writable=False)
        dst = _host_array(host_out, "host_out", writable=True)
        failures: List[BaseException] = []
        try:
            return RunReport(self._engine.run(src.reshape(-1), dst.reshape(-1),
                                              self._adapter(stage, src, dst, failures)))
        except PipelineError as e:
            _reraise_with_cause(e, failures)

    def capture(
        self, host_in: Any, host_out: Any, stage: StageFunction, *, scheduling: str = "host"
    ) -> CapturedPipeline:
        """Captures one run into a CUDA graph; replay() repeats it without calling Python.

        The stage is called once per chunk during the capture; what it
        launches (CuPy or torch kernels on the given stream) is recorded.
        The arrays must be page-locked (pinned_empty, pin_memory).
        ``scheduling="device"`` lets the GPU walk the graph: a replay then
        costs the host about one kernel launch whatever the chunk count, and
        the device up to a few percent more time on compute-bound work (and
        far more on copy-bound work; README).
        """
        if scheduling not in _SCHEDULING:
            raise ValueError(f"scheduling: {scheduling!r} is not one of {', '.join(map(repr, _SCHEDULING))}")
        src = _host_array(host_in, "host_in", writable=False)
        dst = _host_array(host_out, "host_out", writable=True)
        failures: List[BaseException] = []
        try:
            graph = self._engine.capture(
                src.reshape(-1), dst.reshape(-1), self._adapter(stage, src, dst, failures), scheduling
            )
        except PipelineError as e:
            _reraise_with_cause(e, failures)
        return CapturedPipeline(graph, src, dst)

    def run_affine(self, host_in: np.ndarray, host_out: np.ndarray) -> RunReport:
        """y = 2x + 1 over float32 arrays with a C++ stage: the reference for a Python stage's cost."""
        src = _host_array(host_in, "host_in", writable=False)
        dst = _host_array(host_out, "host_out", writable=True)
        return RunReport(self._engine.run_affine(src.reshape(-1), dst.reshape(-1)))


def pinned_empty(shape: Union[int, Sequence[int]], dtype: Any = np.float32) -> np.ndarray:
    """An uninitialised NumPy array in page-locked host memory (cudaHostAlloc).

    Copies from and to it run at the link's full rate and asynchronously;
    the memory is freed when the last view of it goes.
    """
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
        raise ValueError(f"shape: expected non-negative integers, not {shape!r}")
    kind = np.dtype(dtype)
    if kind.hasobject:
        raise ValueError("dtype: an array of Python objects cannot be pinned for the GPU")
    nbytes = int(math.prod(dims)) * kind.itemsize
    if nbytes == 0:
        return np.empty(dims, kind)
    return _cuda().pinned_bytes(nbytes).view(kind).reshape(dims)
