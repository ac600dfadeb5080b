"""What a Dask scheduler lists now, asked through a client: the facts round (verify/cluster)
and the smoke tests (verify/smoke, to notice a worker that left) both ask it."""

from __future__ import annotations

from typing import Any


def all_workers_info(client: Any) -> dict:
    """address -> info of every worker. distributed >= 2025 lists only the first few unless
    asked with n_workers=-1, which older versions do not take."""
    try:
        return client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:
        return client.scheduler_info()["workers"]
