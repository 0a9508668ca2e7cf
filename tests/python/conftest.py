"""Shared fixtures of the Python module's tests.

The module is imported from the build folder (ctest puts it on PYTHONPATH).
Tests marked `gpu` need an NVIDIA GPU and skip, saying why, without one;
`-rs` in the ctest command prints the reason.
"""
import pytest

import coolbench


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (ctest label gpu)")


def _gpu_count():
    try:
        return coolbench.gpu_count()
    except coolbench.Error:
        return 0


def pytest_collection_modifyitems(config, items):
    if _gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU visible to the CUDA runtime (gpu_count() == 0)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def has_gpu():
    return _gpu_count() > 0
