"""overlap.Pipeline on a GPU with CuPy and PyTorch stages.

Every output element is checked against a host reference on random data,
with sizes that leave a remainder chunk. Skipped without a CUDA device.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.gpu

# 1,000,003 floats in chunks of 65,539 floats: 15 whole chunks and a
# remainder of 16,918, over 3 streams (so streams get unequal counts).
ODD_ELEMENTS = 1_000_003
ODD_CHUNK_BYTES = 65_539 * 4


def random_input(elements: int, dtype=np.float32, seed: int = 7) -> np.ndarray:
    host = overlap.pinned_empty(elements, dtype)
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        host[:] = rng.uniform(-1000.0, 1000.0, elements).astype(dtype)
    else:
        host[:] = rng.integers(-(2**20), 2**20, elements).astype(dtype)
    return host


def affine_reference(x: np.ndarray) -> np.ndarray:
    return (x.dtype.type(2) * x + x.dtype.type(1)).astype(x.dtype)


@pytest.fixture(scope="module")
def cupy_affine(cupy):
    kernel = cupy.ElementwiseKernel("T x", "T y", "y = x * (T)2 + (T)1", "overlap_test_affine")

    def stage(chunk_in, chunk_out, stream):
        with stream.cupy():
            kernel(cupy.asarray(chunk_in), cupy.asarray(chunk_out))

    return stage


def test_pinned_empty_is_page_locked_host_memory(cupy):
    host = overlap.pinned_empty((3, 5), np.float64)
    assert host.shape == (3, 5) and host.dtype == np.float64
    attributes = cupy.cuda.runtime.pointerGetAttributes(host.ctypes.data)
    assert attributes.type == cupy.cuda.runtime.memoryTypeHost
    assert overlap.pinned_empty(0, np.float32).size == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_a_cupy_stage_computes_every_element(cupy_affine, dtype):
    host_in = random_input(ODD_ELEMENTS, dtype)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, dtype)
    host_out.fill(-7)
    report = overlap.Pipeline(chunk_bytes=65_539 * np.dtype(dtype).itemsize, streams=3).run(
        host_in, host_out, cupy_affine)
    assert report.chunks == 16 and report.streams == 3 and report.host == "pinned"
    np.testing.assert_array_equal(host_out, affine_reference(host_in))


def test_a_torch_stage_on_pinned_tensors_computes_every_element(torch):
    host_in = torch.from_numpy(random_input(ODD_ELEMENTS))
    host_out = torch.full((ODD_ELEMENTS,), float("nan")).pin_memory()

    def stage(chunk_in, chunk_out, stream):
        with torch.cuda.stream(stream.torch()):
            x = torch.as_tensor(chunk_in, device="cuda")
            y = torch.as_tensor(chunk_out, device="cuda")
            torch.mul(x, 2.0, out=y).add_(1.0)

    report = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3).run(host_in, host_out, stage)
    assert report.chunks == 16
    np.testing.assert_array_equal(host_out.numpy(), affine_reference(host_in.numpy()))


def _needs_two_gpus():
    if overlap._pipeline._cuda().device_count() < 2:
        pytest.skip("skipped: needs 2 GPUs")


def test_a_cupy_stage_over_two_gpus_computes_every_element(cupy, cupy_affine):
    _needs_two_gpus()
    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    host_out.fill(-7)
    on = set()

    def stage(chunk_in, chunk_out, stream):
        on.add(cupy.cuda.runtime.getDevice())
        cupy_affine(chunk_in, chunk_out, stream)

    report = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3, devices=[0, 1]).run(host_in, host_out, stage)
    np.testing.assert_array_equal(host_out, affine_reference(host_in))
    assert on == {0, 1}
    assert [p["device"] for p in report.parts] == [0, 1]
    assert report.parts[0]["first_chunk"] == 0 and report.parts[0]["first_element"] == 0
    assert report.parts[1]["first_chunk"] == report.parts[0]["chunks"]
    assert sum(p["chunks"] for p in report.parts) == report.chunks


def test_a_torch_stage_over_every_gpu_on_pageable_tensors(torch):
    _needs_two_gpus()
    host_in = torch.from_numpy(np.array(random_input(ODD_ELEMENTS)))  # pageable copies
    host_out = torch.full((ODD_ELEMENTS,), float("nan"))

    def stage(chunk_in, chunk_out, stream):
        with torch.cuda.stream(stream.torch()):
            x = torch.as_tensor(chunk_in, device="cuda")
            y = torch.as_tensor(chunk_out, device="cuda")
            torch.mul(x, 2.0, out=y).add_(1.0)

    report = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, pageable="register", devices="all").run(
        host_in, host_out, stage)
    np.testing.assert_array_equal(host_out.numpy(), affine_reference(host_in.numpy()))
    assert len(report.parts) == torch.cuda.device_count()


def test_dlpack_views_reach_torch_and_cupy(torch, cupy):
    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    seen = []

    def stage(chunk_in, chunk_out, stream):
        x = torch.from_dlpack(chunk_in)
        y = cupy.from_dlpack(chunk_out)
        assert x.device.type == "cuda" and x.numel() == chunk_in.size
        seen.append(chunk_in.size)
        with torch.cuda.stream(stream.torch()):
            torch.as_tensor(y, device="cuda").copy_(x * 2.0 + 1.0)

    overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=2).run(host_in, host_out, stage)
    assert sum(seen) == ODD_ELEMENTS and seen[-1] == ODD_ELEMENTS - 15 * 65_539
    np.testing.assert_array_equal(host_out, affine_reference(host_in))


def test_an_output_ratio_halves_the_output(cupy):
    pair_sum = cupy.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0", "overlap_test_pairs")
    host_in = random_input(2 * 300_007)
    host_out = overlap.pinned_empty(300_007, np.float32)

    def stage(chunk_in, chunk_out, stream):
        with stream.cupy():
            pair_sum(cupy.asarray(chunk_in).reshape(-1, 2), axis=1, out=cupy.asarray(chunk_out))

    overlap.Pipeline(chunk_bytes=40_000 * 4, output_ratio=(1, 2)).run(host_in, host_out, stage)
    expected = host_in.reshape(-1, 2).sum(axis=1, dtype=np.float32)
    np.testing.assert_array_equal(host_out, expected)


class StageFailure(Exception):
    pass


def test_a_stage_failing_at_chunk_k_drains_names_the_chunk_and_leaks_nothing(cupy, cupy_affine):
    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    pipeline = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3)
    pipeline.run(host_in, host_out, cupy_affine)  # the ring exists now
    free_before = cupy.cuda.runtime.memGetInfo()[0]
    for k in (0, 5, 15):
        host_out.fill(np.nan)

        def stage(chunk_in, chunk_out, stream, calls=[0], k=k):
            if calls[0] == k:
                raise StageFailure(f"boom at {k}")
            calls[0] += 1
            cupy_affine(chunk_in, chunk_out, stream)

        with pytest.raises(overlap.PipelineError) as failure:
            pipeline.run(host_in, host_out, stage)
        assert failure.value.chunk == k
        assert f"chunk {k} of 16" in str(failure.value)
        assert isinstance(failure.value.__cause__, StageFailure)
        assert failure.value.earlier_chunks_complete
        done = k * 65_539
        np.testing.assert_array_equal(host_out[:done], affine_reference(host_in[:done]))
    # The same pipeline runs again, correctly, and holds no more device memory.
    host_out.fill(np.nan)
    pipeline.run(host_in, host_out, cupy_affine)
    np.testing.assert_array_equal(host_out, affine_reference(host_in))
    assert cupy.cuda.runtime.memGetInfo()[0] >= free_before - (2 << 20)


def test_pageable_arrays_are_refused_by_default_and_run_when_asked(cupy_affine):
    host_in = np.random.default_rng(3).uniform(-1000, 1000, ODD_ELEMENTS).astype(np.float32)
    host_out = np.full(ODD_ELEMENTS, np.nan, np.float32)
    with pytest.raises(ValueError, match="pageable"):
        overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES).run(host_in, host_out, cupy_affine)
    for policy, path in (("register", "registered"), ("stage", "staged")):
        host_out.fill(np.nan)
        report = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, pageable=policy).run(host_in, host_out, cupy_affine)
        assert report.host == path
        np.testing.assert_array_equal(host_out, affine_reference(host_in))


def test_a_captured_run_replays_on_new_input_without_python(cupy):
    kernel = cupy.ElementwiseKernel("float32 x", "float32 y", "y = 2 * x + 1", "overlap_test_capture")
    calls = []

    def stage(chunk_in, chunk_out, stream):
        calls.append(chunk_in.size)
        with stream.cupy():
            kernel(cupy.asarray(chunk_in), cupy.asarray(chunk_out))

    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    pipeline = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3)
    # CuPy compiles and loads a kernel (and sets itself up) on its first
    # call, which a capture cannot record: one direct run first.
    pipeline.run(host_in, host_out, stage)
    calls.clear()
    graph = pipeline.capture(host_in, host_out, stage)
    assert len(calls) == 16
    assert graph.scheduling == "host"
    for seed in (11, 12):
        host_in[:] = np.random.default_rng(seed).uniform(-1000, 1000, ODD_ELEMENTS).astype(np.float32)
        host_out.fill(np.nan)
        replay = graph.replay()
        assert replay["chunks"] == 16
        np.testing.assert_array_equal(host_out, affine_reference(host_in))
    assert len(calls) == 16  # no Python ran per chunk in the replays


def test_a_run_captured_for_the_device_to_walk_replays_exactly(cupy):
    kernel = cupy.ElementwiseKernel("float32 x", "float32 y", "y = 2 * x + 1", "overlap_test_capture_device")

    def stage(chunk_in, chunk_out, stream):
        with stream.cupy():
            kernel(cupy.asarray(chunk_in), cupy.asarray(chunk_out))

    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    pipeline = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3)
    pipeline.run(host_in, host_out, stage)  # CuPy's first call of a kernel cannot be captured
    graph = pipeline.capture(host_in, host_out, stage, scheduling="device")
    assert graph.scheduling == "device"
    for seed in (21, 22):
        host_in[:] = np.random.default_rng(seed).uniform(-1000, 1000, ODD_ELEMENTS).astype(np.float32)
        host_out.fill(np.nan)
        assert graph.replay()["chunks"] == 16
        np.testing.assert_array_equal(host_out, affine_reference(host_in))
    with pytest.raises(ValueError, match="scheduling: 'sideways' is not one of 'host', 'device'"):
        pipeline.capture(host_in, host_out, stage, scheduling="sideways")


def test_a_recorded_run_returns_its_measured_timeline(cupy_affine):
    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    report = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3, record=True).run(host_in, host_out, cupy_affine)
    timeline = report.timeline
    assert timeline is not None
    assert len([s for s in timeline.spans if s.label == "D2H"]) == 16
    assert timeline.total > 0


def test_other_python_threads_run_while_the_gpu_works(cupy):
    spin = cupy.RawKernel(r'''
extern "C" __global__ void spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
}''', "spin")
    host_in = random_input(4 * 65_536)
    host_out = overlap.pinned_empty(4 * 65_536, np.float32)
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    def stage(chunk_in, chunk_out, stream):
        with stream.cupy():
            spin((1,), (1,), (np.int64(200_000_000),))  # ~0.1 s at 2 GHz
            cupy.asarray(chunk_out)[:] = cupy.asarray(chunk_in)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        before = ticks[0]
        overlap.Pipeline(chunk_bytes=65_536 * 4, streams=1).run(host_in, host_out, stage)
        during = ticks[0] - before
    finally:
        stop.set()
        counter.join()
    assert during > 1000  # the counter ran while run() waited for ~0.4 s of kernels
    np.testing.assert_array_equal(host_out, host_in)


def test_the_fast_views_are_made_once_per_ring_slot(torch, cupy):
    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    pipeline = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3)
    views = []

    def torch_stage(chunk_in, chunk_out, stream):
        views.append((id(chunk_in.torch()), id(chunk_out.torch())))
        with torch.cuda.stream(stream.torch()):
            torch.mul(chunk_in.torch(), 2.0, out=chunk_out.torch()).add_(1.0)

    def cupy_stage(chunk_in, chunk_out, stream):
        with stream.cupy():
            cupy.multiply(chunk_in.cupy(), 2, out=chunk_out.cupy())
            chunk_out.cupy()[:] += 1

    for stage in (torch_stage, torch_stage, cupy_stage):
        host_out.fill(np.nan)
        pipeline.run(host_in, host_out, stage)
        np.testing.assert_array_equal(host_out, affine_reference(host_in))
    first, second = views[:16], views[16:]
    assert first == second  # the same tensors, run after run
    assert len(set(first)) == 4  # 3 ring slots of whole chunks, and the remainder chunk


def test_ctrl_c_in_the_stage_stops_the_run_as_itself(cupy_affine):
    host_in = random_input(ODD_ELEMENTS)
    host_out = overlap.pinned_empty(ODD_ELEMENTS, np.float32)
    pipeline = overlap.Pipeline(chunk_bytes=ODD_CHUNK_BYTES, streams=3)

    def stage(chunk_in, chunk_out, stream, calls=[0]):
        if calls[0] == 2:
            raise KeyboardInterrupt
        calls[0] += 1
        cupy_affine(chunk_in, chunk_out, stream)

    with pytest.raises(KeyboardInterrupt) as interrupted:
        pipeline.run(host_in, host_out, stage)
    assert isinstance(interrupted.value.__cause__, overlap.PipelineError)
    assert interrupted.value.__cause__.chunk == 2
    host_out.fill(np.nan)
    pipeline.run(host_in, host_out, cupy_affine)  # drained: the pipeline runs again
    np.testing.assert_array_equal(host_out, affine_reference(host_in))
