"""`verify cluster --jobqueue slurm --workers N`: workers started through dask-jobqueue.

dask-jobqueue's SLURMCluster runs the scheduler in this process and submits one Slurm job per
worker; its own configuration (`jobqueue.slurm` in ~/.config/dask/jobqueue.yaml, or the file
given with --jobqueue-config) applies first, then --jobqueue-option KEY=VALUE. envcheck fills
only what it needs when the configuration does not say: one core and one GPU (`--gres=gpu:1`,
`--resources GPU=1`) per worker, a dashboard on 127.0.0.1, and waits for all N workers within
the timeout. Closing the cluster cancels the jobs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.errors import BadInput, EnvcheckError, Unreachable

if TYPE_CHECKING:
    from distributed import Client

KINDS = ("slurm",)


def parse_options(items: list[str]) -> dict[str, Any]:
    """["queue=debug", "cores=2", "job_extra_directives=[\"--gres=gpu:1\"]"] -> typed values."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"--jobqueue-option {item!r}: use KEY=VALUE, e.g. queue=gpu")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def _config(path: Path | None) -> dict[str, Any]:
    """jobqueue.slurm from dask's config, overlaid with a YAML file's when one is given."""
    import dask.config

    if path is not None:
        import yaml

        from envcheck.inputs import read_text

        text = read_text(path, "--jobqueue-config", 1 << 20)
        try:
            data = yaml.safe_load(text) or {}
        except (yaml.YAMLError, RecursionError) as e:
            first = (str(e).strip().splitlines() or ["nested too deep"])[0]
            raise BadInput(f"--jobqueue-config {path}: not YAML ({first})") from None
        if not isinstance(data, dict):
            raise BadInput(f"--jobqueue-config {path}: not a mapping of dask config")
        dask.config.update(dask.config.config, data, priority="new")
    return dict(dask.config.get("jobqueue.slurm", default={}) or {})


def cluster_kwargs(
    configured: dict[str, Any], options: dict[str, Any], gpus_per_worker: int
) -> dict[str, Any]:
    """SLURMCluster's keyword arguments: options win, then the config, then envcheck's needs."""
    kw: dict[str, Any] = {}
    if configured.get("cores") is None:
        kw["cores"] = 1
    if configured.get("memory") is None:
        kw["memory"] = "2GiB"
    if configured.get("processes") is None:
        kw["processes"] = 1
    directives = list(configured.get("job-extra-directives") or [])
    worker_args = list(configured.get("worker-extra-args") or [])
    if gpus_per_worker and not any("gres" in d or "gpus" in d for d in directives):
        kw["job_extra_directives"] = [*directives, f"--gres=gpu:{gpus_per_worker}"]
    if gpus_per_worker and "--resources" not in worker_args:
        kw["worker_extra_args"] = [*worker_args, "--resources", f"GPU={gpus_per_worker}"]
    kw["scheduler_options"] = {"dashboard_address": "127.0.0.1:0"}
    kw.update(options)
    return kw


@contextlib.contextmanager
def jobqueue_cluster(
    kind: str,
    n_workers: int,
    options: dict[str, Any],
    timeout: float,
    config: Path | None = None,
    gpus_per_worker: int = 1,
) -> Iterator[tuple[Client, str]]:
    """A client to N jobqueue workers, and a line describing them; jobs cancelled on exit."""
    if kind not in KINDS:
        raise BadInput(f"--jobqueue {kind}: supported: {', '.join(KINDS)}")
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise BadInput("--jobqueue needs dask-jobqueue: pip install dask-jobqueue") from None
    from distributed import Client

    kwargs = cluster_kwargs(_config(config), options, gpus_per_worker)
    try:
        cluster = SLURMCluster(**kwargs)
    except (TypeError, ValueError) as e:
        raise BadInput(f"SLURMCluster refused the options: {e}") from None
    with contextlib.closing(cluster):
        cluster.scale(n_workers)
        client = Client(cluster, timeout=timeout, set_as_default=False)
        with contextlib.closing(client):
            try:
                client.wait_for_workers(n_workers, timeout=timeout)
            except Exception as e:
                have = len(client.scheduler_info()["workers"])
                why = _pending_reason()
                if isinstance(e, EnvcheckError):
                    raise
                raise Unreachable(
                    f"dask-jobqueue: {have} of {n_workers} workers registered within "
                    f"{timeout:g} s{why}"
                ) from None
            yield client, f"dask-jobqueue SLURMCluster ({n_workers} jobs)"


def _pending_reason() -> str:
    """What squeue says about our pending jobs, when it can be asked."""
    import getpass
    import subprocess

    try:
        p = subprocess.run(
            ["squeue", "-h", "-u", getpass.getuser(), "-t", "PD", "-o", "%i %r"],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = p.stdout.split("\n")[:3]
    pending = "; ".join(ln.strip() for ln in lines if ln.strip())
    return f" (pending jobs: {pending})" if pending else ""
