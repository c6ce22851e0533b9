"""overlap.prefetch: the PyTorch article's data-loading stream, done right.

While the caller computes on batch k, batch k+1 (up to k+slots-1) is
already on its way to the device on a side stream. What makes it race-free:

- each batch's upload is issued on the side stream and followed by an event;
  the caller's current stream waits on that event when the batch is handed
  over, so the caller's kernels never read a half-copied batch, and the host
  never blocks for it;
- a pageable batch is first copied into a page-locked slot (the host copy
  runs on the caller's thread, the slot ring gives backpressure: a slot is
  refilled only after the upload that read it has finished); pinned batches
  (``pin_memory=True`` tensors, ``overlap.pinned_empty``) go straight up;
- each batch gets fresh device memory, allocated on the side stream; for
  torch, ``record_stream(caller's stream)`` tells the caching allocator not to
  reuse it before the caller's work on it is done; for CuPy, whose pool has
  no such call, the prefetcher keeps each handed-over batch alive until an
  event recorded on the caller's stream after the caller moved on has
  completed.

It serves the same pattern as ``overlap::cuda::Feed`` (N pinned slots,
uploads overlapped with work, backpressure), written over torch's and CuPy's
own streams and allocators, because here the consumer is the caller's loop
on the caller's thread and stream, and the data stays on the device.
"""

from __future__ import annotations

import collections
import importlib.util
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np


# One side stream per framework and device, for every prefetch of the
# process: PyTorch's caching allocator keeps freed blocks per stream, so a
# fresh stream per call (they come round-robin from a pool) would allocate an
# epoch's worth of new device memory each time instead of reusing the last.
_side_streams: Dict[Tuple[str, Any], Any] = {}


def _side_stream(framework: str, device: Any, make: Callable[[], Any]) -> Any:
    stream = _side_streams.get((framework, device))
    if stream is None:
        stream = _side_streams[(framework, device)] = make()
    return stream


def _is_torch_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "is_pinned")


def _leaves(batch: Any, path: str = "batch") -> List[Tuple[str, Any]]:
    """The arrays of a batch (an array, or tuples/lists/dicts of them), in a fixed order."""
    if isinstance(batch, np.ndarray) or _is_torch_tensor(batch):
        return [(path, batch)]
    if isinstance(batch, (tuple, list)):
        found: List[Tuple[str, Any]] = []
        for i, item in enumerate(batch):
            found += _leaves(item, f"{path}[{i}]")
        return found
    if isinstance(batch, dict):
        found = []
        for key, item in batch.items():
            found += _leaves(item, f"{path}[{key!r}]")
        return found
    raise TypeError(f"{path}: expected a NumPy array, a CPU torch tensor, or tuples/lists/dicts of them, "
                    f"not {type(batch).__name__}")


def _rebuild(batch: Any, arrays: Iterator[Any]) -> Any:
    """The batch's structure with its arrays replaced, in _leaves' order."""
    if isinstance(batch, np.ndarray) or _is_torch_tensor(batch):
        return next(arrays)
    if isinstance(batch, tuple):
        items = [_rebuild(item, arrays) for item in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    if isinstance(batch, list):
        return [_rebuild(item, arrays) for item in batch]
    return {key: _rebuild(item, arrays) for key, item in batch.items()}


class _Slot:
    """Page-locked staging buffers for one batch in flight, reused batch after batch."""

    def __init__(self) -> None:
        self.buffers: Dict[int, np.ndarray] = {}
        self.uploaded: Any = None  # event after the upload that last read these buffers

    def staging(self, index: int, host: np.ndarray) -> np.ndarray:
        from ._pipeline import pinned_empty

        buffer = self.buffers.get(index)
        if buffer is None or buffer.nbytes < host.nbytes:
            buffer = self.buffers[index] = pinned_empty(host.nbytes, np.uint8)
        return buffer[: host.nbytes].view(host.dtype).reshape(host.shape)


class _TorchBackend:
    def __init__(self, device: Any) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device if device is not None else "cuda")
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.side = _side_stream("torch", self.device.index, lambda: torch.cuda.Stream(device=self.device))

    def upload(self, leaves: List[Tuple[str, Any]], slot: _Slot) -> Tuple[List[Any], Any]:
        torch = self.torch
        sources = []
        for index, (path, leaf) in enumerate(leaves):
            tensor = leaf if _is_torch_tensor(leaf) else torch.from_numpy(np.ascontiguousarray(leaf))
            if tensor.device.type != "cpu":
                raise ValueError(f"{path}: a host batch is needed, not a tensor on {tensor.device}")
            if not tensor.is_pinned():
                staged = torch.from_numpy(slot.staging(index, tensor.numpy()))
                staged.copy_(tensor)
                tensor = staged
            sources.append(tensor)
        with torch.cuda.stream(self.side):
            uploaded = [source.to(self.device, non_blocking=True) for source in sources]
            ready = torch.cuda.Event()
            ready.record(self.side)
        return uploaded, ready

    def hand_over(self, arrays: List[Any], ready: Any) -> None:
        consumer = self.torch.cuda.current_stream(self.device)
        consumer.wait_event(ready)
        for array in arrays:
            array.record_stream(consumer)

    def moved_on(self, arrays: List[Any]) -> None:
        pass  # record_stream keeps the allocator from reusing them early

    def finish(self) -> None:
        self.side.synchronize()


class _CupyBackend:
    def __init__(self, device: Any) -> None:
        import cupy

        self.cupy = cupy
        self.device = cupy.cuda.Device(device if device is not None else cupy.cuda.Device().id)
        with self.device:
            self.side = _side_stream("cupy", self.device.id, lambda: cupy.cuda.Stream(non_blocking=True))
        # Batches handed over, kept alive until the caller's stream has passed them.
        self.retiring: Deque[Tuple[Any, List[Any]]] = collections.deque()

    def upload(self, leaves: List[Tuple[str, Any]], slot: _Slot) -> Tuple[List[Any], Any]:
        from ._pipeline import _cuda

        cupy = self.cupy
        sources = []
        for index, (path, leaf) in enumerate(leaves):
            host = leaf.detach().numpy() if _is_torch_tensor(leaf) else leaf
            if _is_torch_tensor(leaf) and leaf.device.type != "cpu":
                raise ValueError(f"{path}: a host batch is needed, not a tensor on {leaf.device}")
            host = np.ascontiguousarray(host)
            if host.nbytes and not _cuda().is_pinned(host.ctypes.data):
                staged = slot.staging(index, host)
                np.copyto(staged, host)
                host = staged
            sources.append(host)
        with self.device, self.side:
            uploaded = []
            for host in sources:
                device_array = cupy.empty(host.shape, host.dtype)
                device_array.set(host, stream=self.side)
                uploaded.append(device_array)
            ready = cupy.cuda.Event(disable_timing=True)
            ready.record(self.side)
        return uploaded, ready

    def hand_over(self, arrays: List[Any], ready: Any) -> None:
        with self.device:
            self.cupy.cuda.get_current_stream().wait_event(ready)

    def moved_on(self, arrays: List[Any]) -> None:
        with self.device:
            passed = self.cupy.cuda.Event(disable_timing=True)
            passed.record(self.cupy.cuda.get_current_stream())
        self.retiring.append((passed, arrays))
        while self.retiring and self.retiring[0][0].done:
            self.retiring.popleft()

    def finish(self) -> None:
        self.side.synchronize()
        for passed, _ in self.retiring:
            passed.synchronize()
        self.retiring.clear()


def _backend_for(first: List[Tuple[str, Any]], to: Optional[str], device: Any) -> Any:
    if to is None:
        if any(_is_torch_tensor(leaf) for _, leaf in first):
            to = "torch"
        else:
            to = "cupy" if importlib.util.find_spec("cupy") is not None else "torch"
    if to == "torch":
        return _TorchBackend(device)
    if to == "cupy":
        return _CupyBackend(device)
    raise ValueError(f"to: {to!r} is not one of 'torch', 'cupy'")


def prefetch(batches: Iterable[Any], slots: int = 2, *, to: Optional[str] = None,
             device: Any = None, devices: Any = None) -> Iterator[Any]:
    """Yields each host batch as device arrays, uploading the next ones while the caller computes.

    Args:
        batches: an iterable of host batches: NumPy arrays, CPU torch tensors,
            or tuples, lists and dicts of them (the structure is kept).
        slots: batches in flight at once, the one handed over included (2 =
            the next batch uploads while the caller works on this one).
        to: 'torch' (torch tensors) or 'cupy' (CuPy arrays); by default torch
            when the batches hold torch tensors, else CuPy when installed.
        device: the CUDA device (an index, or a torch device); the current one by default.
        devices: several GPUs instead (a list of indices, or 'all'): batch k
            goes to devices[k % len(devices)], in order, each GPU with its own
            side stream and ``slots`` batches in flight; each yielded batch is
            on its GPU and ready on that GPU's current stream.

    Each yielded batch is ready on the caller's current stream (the stream
    waits for its upload; the host does not), and stays valid for as long as
    the caller keeps it. Page-locked batches upload straight away; pageable
    ones are first copied into page-locked slots on the caller's thread.
    """
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise ValueError(f"slots: expected a positive integer, not {slots!r}")
    if to is not None and to not in ("torch", "cupy"):
        raise ValueError(f"to: {to!r} is not one of 'torch', 'cupy'")
    if devices is not None and device is not None:
        raise ValueError("device and devices: give one GPU or several, not both")
    targets: List[Any] = [device] if devices is None else _device_indices(devices)
    return _prefetching(iter(batches), slots, to, targets)


def _device_indices(devices: Any) -> List[int]:
    from ._pipeline import _device_list

    return _device_list(devices)


def _prefetching(source: Iterator[Any], slots: int, to: Optional[str], targets: List[Any]) -> Iterator[Any]:
    ring = [_Slot() for _ in range(slots * len(targets))]
    in_flight: Deque[Tuple[Any, List[Any], Any, _Slot, Any]] = collections.deque()
    backends: List[Any] = []
    issued = 0
    failure: Optional[BaseException] = None

    def issue_next() -> bool:
        # A failure (the source's, or a batch that cannot go up) is raised
        # only after the batches before it were handed over.
        nonlocal failure
        if failure is not None:
            return False
        try:
            return issue(next(source))
        except StopIteration:
            return False
        except Exception as e:  # noqa: BLE001 - re-raised in order below
            failure = e
            return False

    def issue(batch: Any) -> bool:
        nonlocal issued
        leaves = _leaves(batch)
        if not backends:  # the first batch decides the framework, for every GPU
            backends.extend(_backend_for(leaves, to, target) for target in targets)
        backend = backends[issued % len(backends)]
        slot = ring[issued % len(ring)]
        if slot.uploaded is not None:
            slot.uploaded.synchronize()  # backpressure: the upload that read this slot is done
        arrays, ready = backend.upload(leaves, slot)
        slot.uploaded = ready
        in_flight.append((batch, arrays, ready, slot, backend))
        issued += 1
        return True

    try:
        while len(in_flight) < len(ring) and issue_next():
            pass
        while in_flight:
            batch, arrays, ready, _, backend = in_flight.popleft()
            backend.hand_over(arrays, ready)
            yield _rebuild(batch, iter(arrays))
            backend.moved_on(arrays)
            issue_next()
        if failure is not None:
            raise failure
    finally:
        for backend in backends:
            backend.finish()
