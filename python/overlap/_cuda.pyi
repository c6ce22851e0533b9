"""
overlap's CUDA layer (run); use the `overlap` package, not this module.
"""

from collections.abc import Callable, Sequence
from typing import Annotated

import numpy
from numpy.typing import NDArray


def device_count() -> int:
    """CUDA devices visible to this process (0 without one)."""

def pinned_bytes(bytes: int) -> Annotated[NDArray[numpy.uint8], dict(shape=(None,))]:
    """
    `bytes` page-locked bytes (cudaHostAlloc) as a uint8 NumPy array; bytes > 0.
    """

def is_pinned(pointer: int) -> bool:
    """
    True when host memory at `pointer` is page-locked (allocated or registered with CUDA).
    """

class PipelineGraph:
    """A captured pipeline run, replayed with one launch."""

    def replay(self) -> dict:
        """Runs the captured work again on the same host arrays and waits for it."""

    def captured(self) -> dict:
        """The run the capture recorded, as Pipeline.run reports it."""

    @property
    def instantiate_ms(self) -> float:
        """Host time to instantiate the graph."""

    @property
    def scheduling(self) -> str:
        """Who walks the graph at each replay: 'host' or 'device'."""

class Pipeline:
    """The C++ Pipeline over host arrays of any dtype."""

    def __init__(self, *, chunk_bytes: int | None = None, chunk_schedule: Sequence[int] = [], streams: int | None = None, ring_depth: int | None = None, device_budget_bytes: int | None = None, chunking: str = 'fixed', calibrate: bool = False, pageable: str = 'reject', record: bool = False, ratio_out: int = 1, ratio_in: int = 1, devices: Sequence[int] = [], adapt: str = 'first_run') -> None: ...

    def run(self, host_in: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], host_out: Annotated[NDArray, dict(order='C', device='cpu')], adapter: Callable) -> dict:
        """
        Runs the pipeline; `adapter(in_ptr, in_count, out_ptr, out_count, stream_ptr, chunk)` is called per chunk.
        """

    def run_affine(self, host_in: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], host_out: Annotated[NDArray, dict(order='C', device='cpu')]) -> dict:
        """
        Runs y = 2x + 1 over float32 arrays with a C++ stage: the benchmark's reference.
        """

    def capture(self, host_in: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], host_out: Annotated[NDArray, dict(order='C', device='cpu')], adapter: Callable, scheduling: str = 'host') -> PipelineGraph:
        """
        Captures one run into a PipelineGraph; the adapter is called per chunk during the capture only. scheduling 'device' lets the GPU walk the graph (one launch's host cost per replay).
        """

def dlpack_view(pointer: int, size: int, typestr: str) -> object:
    """
    A DLPack-capable view of `size` elements of device memory at `pointer`.
    """
