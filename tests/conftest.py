"""Shared test configuration. GPU skips are decided here, once, from the `gpu` marker."""

from __future__ import annotations

import pytest


def _gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (NVML found none); run on the device")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
