"""pytest setup for the package's tests.

Tests marked ``gpu`` need a CUDA device: without one they are skipped with
the reason "no CUDA device", and the run ends with the line
"skipped: no CUDA device (N GPU tests)", which ctest's python.gpu test reads
to report itself as skipped rather than passed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import overlap

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLES = REPOSITORY / "examples"

_skipped_for_device = 0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA device")


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    global _skipped_for_device
    if overlap.cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
            _skipped_for_device += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if _skipped_for_device:
        terminalreporter.write_line(f"skipped: no CUDA device ({_skipped_for_device} GPU tests)")


@pytest.fixture
def examples() -> Path:
    """The repository's examples/ folder (specs of the seeds' programs)."""
    return EXAMPLES


@pytest.fixture(scope="session")
def cupy():
    """CuPy, or the test is skipped where it is not installed."""
    return pytest.importorskip("cupy")


@pytest.fixture(scope="session")
def torch():
    """PyTorch with CUDA, or the test is skipped."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch
