"""GPU measurements on real LocalCUDACluster clusters over TCP and over UCX: run on the device.

python3 -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

import importlib.util

import pytest

from envcheck.verify.smoke.measure import MiB, first_gpu, reference_bandwidth, run_measurements

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

SIZES = (64 * MiB, 256 * MiB)


def _measure(protocol: str):
    from envcheck.verify.cluster.connect import embedded_cluster
    from envcheck.verify.cluster.gather import gather_facts

    with embedded_cluster(protocol) as client:
        facts = dict(gather_facts(client, 60).workers)
        if len(facts) < 2:
            pytest.skip("needs two GPU workers")
        return facts, run_measurements(
            client, facts, sizes=SIZES, repeats=2, allreduce_sizes=(256 * MiB,), timeout=180
        )


def _check_transfers(facts, ms, protocol: str) -> None:
    """Every pair measured has both sizes; each pair judged by its best size. How many pairs
    depends on the GPU count (one with 2 GPUs, more with 4): no count is assumed."""
    transfers = [m for m in ms if m.name.startswith(f"transfer {protocol} GPU (CuPy)")]
    pairs: dict[str, list] = {}
    for m in transfers:
        pairs.setdefault(m.node, []).append(m)
    assert pairs, ms
    for node, got in pairs.items():
        assert sorted(m.name.rsplit(" ", 2)[-2] for m in got) == ["256", "64"], got
        a, b = (facts[w] for w in node.split(" -> "))
        ref, _ = reference_bandwidth(a, b, protocol)
        best = max(m.value for m in got)
        for m in got:
            assert m.value > 0.1, m  # GB/s: anything slower is broken, not slow
            assert m.reference == ref
            # the pair is judged by its best size: all get the verdict, or none does
            assert bool(m.verdict) == (ref is not None and best < 0.25 * ref), m


def test_tcp_transfer_between_gpu_workers_and_nccl_allreduce():
    pytest.importorskip("dask_cuda")
    pytest.importorskip("cupy")
    facts, ms = _measure("tcp")
    assert ms.problems == [], ms.problems
    _check_transfers(facts, ms, "tcp")
    gpus = [first_gpu(f) for f in facts.values()]
    if all(g is not None and g.nvlinks_active for g in gpus):
        # TCP copies through host memory: against NVLink it must get the use-UCX verdict
        assert all("use UCX" in m.verdict for m in ms if m.name.startswith("transfer tcp"))
    busbw = [m for m in ms if m.name == "nccl all-reduce 256 MiB busbw"]
    algbw = [m for m in ms if m.name == "nccl all-reduce 256 MiB algbw"]
    assert busbw and algbw
    n = len(facts)
    assert busbw[0].value == pytest.approx(algbw[0].value * 2 * (n - 1) / n, rel=1e-3)
    assert busbw[0].value > 1.0


def test_ucx_transfer_between_gpu_workers():
    pytest.importorskip("dask_cuda")
    pytest.importorskip("cupy")
    if importlib.util.find_spec("distributed_ucxx") is None:
        pytest.skip("distributed-ucxx is not installed")
    facts, ms = _measure("ucx")
    assert [p for p in ms.problems if p.check == "bench.transfer"] == []
    _check_transfers(facts, ms, "ucx")
