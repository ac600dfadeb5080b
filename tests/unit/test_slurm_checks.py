"""Slurm checks on described workers: Slurm's environment as srun/sbatch set it (values seen
on slurm-wlm 22.05 with GRES GPUs), NVML as on a real node or absent."""

from __future__ import annotations

import dataclasses

import pytest

from envcheck.report import Status
from envcheck.verify.across.hostlist import expand_hostlist
from envcheck.verify.across.slurm import check_slurm
from tests.support.deadlines import HANG
from tests.support.factories import h200x2, no_driver_node, with_env


def worker(
    host: str = "gpu1",
    *,
    cvd: str | None,
    step: str | None,
    job: str = "0,1",
    job_id: str = "77",
    nodelist: str = "gpu1",
    nvml: bool = False,
    pid: int = 100,
):
    base = h200x2() if nvml else no_driver_node()
    env = {} if cvd is None else {"CUDA_VISIBLE_DEVICES": cvd}
    slurm = {"SLURM_JOB_ID": job_id, "SLURM_JOB_NODELIST": nodelist, "SLURMD_NODENAME": host}
    if job:
        slurm["SLURM_JOB_GPUS"] = job
    if step is not None:
        slurm["SLURM_STEP_GPUS"] = step
    f = with_env(dataclasses.replace(base, env={}), **env)
    return dataclasses.replace(f, host=host, pid=pid, slurm=slurm, role="worker")


def by(results, check):
    return [r for r in results if r.check == check]


def test_two_workers_each_on_their_granted_gpu_pass():
    out = check_slurm({"tcp://a:1": worker(cvd="0", step="0"),
                       "tcp://a:2": worker(cvd="1", step="1")})
    assert {r.status for r in out} == {Status.PASS}, out
    assert "GPU 0, 1" in by(out, "slurm.gpu-binding")[0].message


def test_worker_started_without_gres_shares_and_is_named():
    # srun without --gres inside a gres=gpu:2 job: the step gets both, CUDA sees both
    out = check_slurm({"tcp://a:1": worker(cvd="0", step="0"),
                       "tcp://a:2": worker(cvd="0,1", step="0,1")})
    shared = by(out, "slurm.gpu-shared")
    assert shared and shared[0].status is Status.FAIL
    assert "tcp://a:2 sees all of job 77's GPUs: started without --gres" in shared[0].message
    idle = by(out, "slurm.gpu-idle")
    assert idle[0].status is Status.FAIL and "GPU 1 of gpu1" in idle[0].message


def test_gpu_not_granted_to_the_step_fails():
    out = check_slurm({"tcp://a:1": worker(cvd="3", step="0", job="0")})
    (r,) = by(out, "slurm.gpu-binding")
    assert r.status is Status.FAIL and "did not grant" in r.message


def test_unset_cuda_visible_devices_fails():
    out = check_slurm({"tcp://a:1": worker(cvd=None, step="0", job="0")})
    assert by(out, "slurm.gpu-binding")[0].status is Status.FAIL
    assert "unset" in by(out, "slurm.gpu-binding")[0].message


def test_cgroup_renumbered_devices_are_understood():
    # ConstrainDevices: each task sees its GPU as 0; SLURM_STEP_GPUS keeps the node's number
    out = check_slurm({"tcp://a:1": worker(cvd="0", step="0"),
                       "tcp://a:2": worker(cvd="0", step="1")})
    assert {r.status for r in out} == {Status.PASS}, out


def test_dask_cuda_rotation_in_one_step_passes():
    out = check_slurm({"tcp://a:1": worker(cvd="0,1", step="0,1"),
                       "tcp://a:2": worker(cvd="1,0", step="0,1")})
    assert {r.status for r in out} == {Status.PASS}, out


def test_nodes_must_be_exactly_the_allocation():
    ws = {
        "tcp://a:1": worker("gpu1", cvd="0", step="0", job="0", nodelist="gpu[1-3]"),
        "tcp://b:1": worker("gpu2", cvd="0", step="0", job="0", nodelist="gpu[1-3]"),
        "tcp://x:1": worker("login1", cvd="0", step="0", job="0", nodelist="gpu[1-3]"),
    }
    nodes = by(check_slurm(ws), "slurm.nodes")
    assert {r.status for r in nodes} == {Status.FAIL}
    text = " ".join(r.message for r in nodes)
    assert "login1, which it was not allocated" in text and "no worker: gpu3" in text


def test_worker_outside_slurm_fails_and_no_slurm_means_no_results():
    inside = worker(cvd="0", step="0", job="0")
    outside = dataclasses.replace(inside, slurm={})
    out = check_slurm({"tcp://a:1": inside, "tcp://z:1": outside})
    assert by(out, "slurm.job")[0].status is Status.FAIL
    assert by(out, "slurm.job")[0].node == "tcp://z:1"
    assert check_slurm({"tcp://z:1": outside}) == []


def test_nvml_disagreeing_with_slurm_numbering_warns():
    # NVML sees both GPUs; CUDA_VISIBLE_DEVICES by UUID of GPU 1, Slurm granted 0
    f = worker(cvd="0", step="0", job="0", nvml=True)
    uuid1 = f.gpus[1].uuid
    f = dataclasses.replace(f, env={"CUDA_VISIBLE_DEVICES": "0"}, visible_gpu_uuids=(uuid1,))
    (r,) = [r for r in check_slurm({"tcp://a:1": f}) if r.status is Status.WARN]
    assert "NVML GPU 1" in r.message


def test_cpu_job_skips_gpu_checks():
    out = check_slurm({"tcp://a:1": worker(cvd=None, step=None, job="")})
    assert by(out, "slurm.gpus")[0].status is Status.SKIP


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("gpu1", ["gpu1"]),
        ("gpu[01-03,07],login1", ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]),
        ("r[1-2]-n[8-9]", ["r1-n8", "r1-n9", "r2-n8", "r2-n9"]),
    ],
)
def test_expand_hostlist(text, hosts):
    assert expand_hostlist(text) == hosts


def test_bad_hostlist_raises():
    with pytest.raises(ValueError):
        expand_hostlist("gpu[1-")


def test_gpu_resource_claim_without_nvml_defers_to_slurms_grant():
    from envcheck.verify.across.pinning import check_pinning

    granted = dataclasses.replace(worker(cvd="0", step="0", job="0"), resources={"GPU": 1.0})
    assert [r for r in check_pinning({"tcp://a:1": granted}) if r.status is Status.FAIL] == []
    bare = dataclasses.replace(granted, slurm={})
    (r,) = [r for r in check_pinning({"tcp://a:1": bare}) if r.status is Status.FAIL]
    assert r.check == "pinning.visible"


@pytest.mark.parametrize(
    "text", ["n[0-9999999999]", "a[0-999]b[0-999]", ",".join(f"n{i}" for i in range(70000))]
)
def test_a_hostlist_naming_too_many_hosts_is_refused_before_expanding(text):
    import time

    started = time.monotonic()
    with pytest.raises(ValueError, match="names more than 65536 hosts"):
        expand_hostlist(text)
    # expanding n[0-9999999999] would take hours and all memory: seconds mean it never began
    # (the bound leaves room for a loaded 2-core CI machine)
    assert time.monotonic() - started < HANG
    assert len(expand_hostlist("n[00001-65536]")) == 65536
