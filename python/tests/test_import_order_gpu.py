"""overlap imported before PyTorch and CuPy, in one interpreter (a fresh one per case).

The extensions export nothing but their init functions (python/src/
extension.map): before that, importing torch after overlap aborted the
interpreter ("free(): invalid pointer") on the GPU machine, where torch
brings its own copies of the C++ code overlap's libraries instantiate.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

WORK = """
import numpy as np
import overlap
print(overlap.simulate({"pipeline": {"chunks": 3, "stage_time": {"h2d": 1.5, "kernel": 1, "d2h": 1}}}).total)
import torch, cupy
x = overlap.pinned_empty(100_003, np.float32); x[:] = np.arange(x.size, dtype=np.float32)
y = overlap.pinned_empty(x.size, np.float32)
def stage(a, b, stream):
    with torch.cuda.stream(stream.torch()):
        torch.mul(torch.as_tensor(a, device="cuda"), 2.0, out=torch.as_tensor(b, device="cuda")).add_(1.0)
overlap.Pipeline(chunk_bytes=40_000).run(x, y, stage)
assert (y == 2 * x + 1).all()
print("ok")
"""


@pytest.mark.parametrize("first", ["overlap._native", "overlap._cuda"])
def test_torch_and_cupy_import_after_overlap(first):
    pytest.importorskip("torch")
    pytest.importorskip("cupy")
    result = subprocess.run([sys.executable, "-c", f"import {first}\n" + WORK], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["10.5", "ok"]
