"""overlap.prefetch on a GPU: order, integrity and race-freedom of every batch.

Each batch is big enough (16 MiB) that a consumer reading it before its
upload finished would see another batch's bytes or garbage, and the caller's
stream is kept busy with a spin kernel so uploads run while it computes.
"""

from __future__ import annotations

import numpy as np
import pytest

import overlap

pytestmark = pytest.mark.gpu

ELEMENTS = 4 * 1024 * 1024 + 3  # 16 MiB of float32 and a remainder


def host_batches(count: int, pinned: bool, seed: int = 5):
    rng = np.random.default_rng(seed)
    batches = []
    for k in range(count):
        array = overlap.pinned_empty(ELEMENTS - k, np.float32) if pinned else np.empty(ELEMENTS - k, np.float32)
        array[:] = rng.uniform(-1.0, 1.0, array.size).astype(np.float32)
        batches.append(array)
    return batches


@pytest.mark.parametrize("slots", [1, 2, 3])
@pytest.mark.parametrize("pinned", [True, False])
def test_torch_batches_arrive_in_order_and_whole(torch, slots, pinned):
    batches = [torch.from_numpy(b) for b in host_batches(7, pinned)]
    if pinned:
        assert all(b.is_pinned() for b in batches)
    seen = []
    for k, device_batch in enumerate(overlap.prefetch(iter(batches), slots=slots)):
        assert device_batch.is_cuda and device_batch.dtype == torch.float32
        torch.cuda._sleep(2_000_000)  # the caller's stream is busy while the next uploads go
        seen.append(device_batch)  # kept past its iteration: must stay valid
        assert device_batch.numel() == ELEMENTS - k
    torch.cuda.synchronize()
    assert len(seen) == 7
    for k, device_batch in enumerate(seen):
        assert torch.equal(device_batch.cpu(), batches[k]), f"batch {k}"


def test_dict_and_tuple_batches_keep_their_structure(torch):
    arrays = host_batches(4, pinned=False)
    labels = [np.arange(k, k + 10, dtype=np.int64) for k in range(4)]
    batches = [{"x": torch.from_numpy(a), "y": (torch.from_numpy(l), l)} for a, l in zip(arrays, labels)]
    for k, batch in enumerate(overlap.prefetch(batches, slots=2)):
        assert set(batch) == {"x", "y"} and isinstance(batch["y"], tuple)
        assert torch.equal(batch["x"].cpu(), torch.from_numpy(arrays[k]))
        assert torch.equal(batch["y"][0].cpu(), torch.from_numpy(labels[k]))
        assert torch.equal(batch["y"][1].cpu(), torch.from_numpy(labels[k]))


def test_a_consumer_on_its_own_stream_waits_for_each_batch(torch):
    arrays = host_batches(6, pinned=True)
    expected = [float(a.astype(np.float64).sum()) for a in arrays]
    stream = torch.cuda.Stream()
    sums = []
    with torch.cuda.stream(stream):
        for batch in overlap.prefetch([torch.from_numpy(a) for a in arrays], slots=3):
            sums.append(batch.double().sum())  # on `stream`, which must wait for the upload
    stream.synchronize()
    assert [s.item() for s in sums] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("pinned", [True, False])
def test_cupy_batches_arrive_in_order_and_whole(cupy, pinned):
    arrays = host_batches(6, pinned)
    expected = [float(a.astype(np.float64).sum()) for a in arrays]
    sums = []
    for k, batch in enumerate(overlap.prefetch(arrays, slots=2, to="cupy")):
        assert isinstance(batch, cupy.ndarray) and batch.size == ELEMENTS - k
        sums.append(batch.astype(cupy.float64).sum())
    cupy.cuda.get_current_stream().synchronize()
    assert [float(s) for s in sums] == pytest.approx(expected, rel=1e-9)


def test_a_failing_source_stops_cleanly_after_the_batches_before_it(torch):
    arrays = host_batches(3, pinned=True)

    def source():
        yield from (torch.from_numpy(a) for a in arrays)
        raise OSError("the loader failed at batch 3")

    got = []
    with pytest.raises(OSError, match="batch 3"):
        for batch in overlap.prefetch(source(), slots=2):
            got.append(batch.cpu())
    assert len(got) == 3
    for k, batch in enumerate(got):
        assert torch.equal(batch, torch.from_numpy(arrays[k]))


def test_leaving_the_loop_early_drains_the_side_stream(torch):
    arrays = host_batches(5, pinned=True)
    loop = overlap.prefetch([torch.from_numpy(a) for a in arrays], slots=3)
    first = next(loop)
    loop.close()  # the uploads of batches 1 and 2 were in flight
    assert torch.equal(first.cpu(), torch.from_numpy(arrays[0]))


def test_epochs_reuse_the_device_memory_of_the_epoch_before(torch):
    batches = [torch.from_numpy(b) for b in host_batches(6, pinned=True)]
    for _ in overlap.prefetch(batches, slots=2):
        pass
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    for _ in range(3):
        for _ in overlap.prefetch(batches, slots=2):
            pass
    torch.cuda.synchronize()
    assert torch.cuda.memory_reserved() <= reserved + (64 << 20)


def _needs_two_gpus():
    if overlap._pipeline._cuda().device_count() < 2:
        pytest.skip("skipped: needs 2 GPUs")


@pytest.mark.parametrize("pinned", [True, False])
def test_torch_batches_go_to_the_gpus_in_turn_in_order_and_whole(torch, pinned):
    _needs_two_gpus()
    batches = [torch.from_numpy(b) for b in host_batches(7, pinned)]
    seen = []
    for k, device_batch in enumerate(overlap.prefetch(batches, slots=2, devices=[0, 1])):
        assert device_batch.device == torch.device("cuda", k % 2), f"batch {k} on {device_batch.device}"
        with torch.cuda.device(k % 2):
            torch.cuda._sleep(1_000_000)  # that GPU's stream is busy while the next uploads go
        seen.append(device_batch)
    for d in (0, 1):
        torch.cuda.synchronize(d)
    assert len(seen) == 7
    for k, device_batch in enumerate(seen):
        assert torch.equal(device_batch.cpu(), batches[k]), f"batch {k}"


def test_cupy_batches_go_to_every_gpu(cupy):
    _needs_two_gpus()
    arrays = host_batches(5, pinned=False)
    expected = [float(a.astype(np.float64).sum()) for a in arrays]
    sums = []
    for k, batch in enumerate(overlap.prefetch(arrays, slots=2, to="cupy", devices="all")):
        assert batch.device.id == k % cupy.cuda.runtime.getDeviceCount()
        with batch.device:
            sums.append(float(batch.astype(cupy.float64).sum()))
    assert sums == pytest.approx(expected, rel=1e-9)
