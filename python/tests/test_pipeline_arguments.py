"""overlap.Pipeline's argument checks: made before any CUDA call, so no GPU is needed."""

from __future__ import annotations

import numpy as np
import pytest

import overlap

def cuda_layer_built() -> bool:
    try:
        overlap._pipeline._cuda()
        return True
    except RuntimeError:
        return False


pytestmark = pytest.mark.skipif(not cuda_layer_built(), reason="overlap built without its CUDA layer")


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"chunk_bytes": 0}, "chunk_bytes"),
        ({"streams": -1}, "streams"),
        ({"ring_depth": 1.5}, "ring_depth"),
        ({"device_budget_bytes": True}, "device_budget_bytes"),
        ({"pageable": "sometimes"}, "pageable"),
        ({"chunking": "magic"}, "chunking"),
        ({"adapt": "always"}, "adapt"),
        ({"output_ratio": (1, 0)}, "output_ratio"),
        ({"devices": "some"}, "devices"),
        ({"devices": []}, "devices"),
        ({"devices": [0, -1]}, "devices"),
        ({"devices": [1, 1]}, "names a GPU twice"),
        ({"devices": [True]}, "devices"),
    ],
)
def test_bad_options_raise_value_error_naming_the_option(arguments, field):
    with pytest.raises(ValueError, match=field):
        overlap.Pipeline(**arguments)


def test_host_arrays_are_checked_before_the_gpu_is_touched():
    pipeline = overlap.Pipeline()
    out = np.zeros(8, np.float32)

    def stage(chunk_in, chunk_out, stream):
        raise AssertionError("not reached")

    with pytest.raises(TypeError, match="host_in: expected a NumPy array"):
        pipeline.run([1.0, 2.0], out, stage)
    with pytest.raises(ValueError, match="host_in: the array must be C-contiguous"):
        pipeline.run(np.zeros((4, 4), np.float32)[:, 1], out, stage)
    read_only = np.zeros(8, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="host_out: the array is read-only"):
        pipeline.run(out, read_only, stage)
    with pytest.raises(TypeError, match="stage: expected a callable"):
        pipeline.run(out, np.zeros(8, np.float32), "not a function")  # type: ignore[arg-type]


def test_pinned_empty_checks_its_shape():
    with pytest.raises(ValueError, match="shape"):
        overlap.pinned_empty((2, -1), np.float32)
    with pytest.raises(ValueError, match="dtype"):
        overlap.pinned_empty(4, object)
