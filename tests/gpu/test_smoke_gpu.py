"""GPU smoke tests on a real LocalCUDACluster (one worker per GPU): run on the device machine.

python3 -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from envcheck.report import Status
from envcheck.verify.smoke.suite import run_smoke
from tests.support.smoke_cluster import local_client

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def _gpus() -> int:
    from envcheck.verify.cluster.connect import gpu_count

    return gpu_count()


@pytest.fixture(scope="module")
def cuda_cluster() -> Iterator[tuple[object, dict]]:
    pytest.importorskip("dask_cuda")
    from envcheck.verify.cluster.connect import embedded_cluster
    from envcheck.verify.cluster.gather import gather_facts

    with embedded_cluster("tcp") as client:
        yield client, dict(gather_facts(client, 60).workers)


def _by_check(results: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in results:
        out.setdefault(r.check, []).append(r)
    return out


def test_gpu_kernel_runs_and_checks_out_on_every_gpu_worker(cuda_cluster):
    client, facts = cuda_cluster
    assert len(facts) == _gpus()
    results = run_smoke(client, facts, {"gpu-kernel"}, timeout=120)
    assert sorted(r.node for r in results) == sorted(facts)
    assert all(r.status is Status.PASS for r in results), [r.message for r in results]
    # each worker's kernel ran on the worker's own GPU, and the GPUs differ
    for r in results:
        assert facts[r.node].visible_gpu_uuids[0] in r.message
    assert len({facts[r.node].visible_gpu_uuids[0] for r in results}) == len(results)


def test_torch_ddp_all_reduce_over_nccl(cuda_cluster):
    pytest.importorskip("torch")
    client, facts = cuda_cluster
    results = run_smoke(client, facts, {"torch-ddp"}, timeout=180)
    assert [r.status for r in results] == [Status.PASS] * len(facts), [r.message for r in results]
    assert all("over nccl on cuda:0 = GPU " in r.message for r in results)
    # each rank names its own physical GPU (UUID), so two ranks never read as one GPU
    for r in results:
        assert facts[r.node].visible_gpu_uuids[0] in r.message


def test_xgboost_trains_on_the_gpus_or_says_why_not(cuda_cluster):
    client, facts = cuda_cluster
    (r,) = run_smoke(client, facts, {"xgboost"}, timeout=180)
    if importlib.util.find_spec("xgboost") is None:  # named in --smoke: a warning says why
        assert r.status is Status.WARN, r.message
        assert r.message == "asked for (--smoke) but not run: xgboost is not installed on the " \
            "workers"
    else:
        assert r.status is Status.PASS, r.message
        assert "device=cuda" in r.message


def test_dask_cudf_groupby_or_skip_saying_cudf_is_absent(cuda_cluster):
    client, facts = cuda_cluster
    (r,) = run_smoke(client, facts, {"dask-cudf"}, timeout=180)
    if importlib.util.find_spec("cudf") is None:  # named in --smoke: a warning says why
        assert r.status is Status.WARN, r.message
        why = r.message.removeprefix("asked for (--smoke) but not run: ")
        assert why in (
            "cudf is not installed on the workers",
            "dask-cudf is not installed on the workers",
        ) or why.startswith("dask_cudf does not import on the client")
    else:
        assert r.status is Status.PASS, r.message


def test_two_workers_on_one_gpu_fail_the_nccl_all_reduce():
    """NCCL refuses two ranks on one GPU: the DDP smoke test must fail on them."""
    pytest.importorskip("torch")
    pytest.importorskip("cupy")
    from envcheck.verify.cluster.gather import gather_facts

    # What a user gets by exporting CUDA_VISIBLE_DEVICES=0 for every worker (dask-cuda itself
    # refuses a device list with repeats).
    with local_client(2, threads_per_worker=2, env={"CUDA_VISIBLE_DEVICES": "0"}) as client:
        facts = dict(gather_facts(client, 60).workers)
        firsts = {f.visible_gpu_uuids[0] for f in facts.values()}
        assert len(facts) == 2 and len(firsts) == 1  # the two workers asked for, any GPU count
        results = run_smoke(client, facts, {"gpu-kernel", "torch-ddp"}, timeout=60)
    by = _by_check(results)
    assert [r.status for r in by["smoke.gpu-kernel"]] == [Status.PASS] * 2  # kernels can share
    ddp = by["smoke.torch-ddp"]
    assert any(r.status is Status.FAIL for r in ddp), [r.message for r in ddp]
    assert all(r.status is not Status.PASS for r in ddp)
