"""verify job's judgements on facts built here (the hardware's description, not the code path
that collects it): GPU binding, local ranks, skew naming a rank, missing ranks, kernels, the
known-answer all-reduce, Slurm's binding per node."""

from __future__ import annotations

import dataclasses

from envcheck.report import Status
from envcheck.verify.job.checks import (
    Collective,
    JobFacts,
    check_allreduce,
    check_gpu_binding,
    check_kernels,
    check_launcher_views,
    check_local_ranks,
    check_ranks,
    check_skew,
    check_slurm_binding,
    nccl_blocker,
    run_job_checks,
)
from envcheck.verify.job.launch import LaunchInfo, launcher_views, views_disagree
from envcheck.verify.job.rank import RankFacts, choose_device
from tests.support.factories import expect, gpu_uuid, node, with_env

TORCHRUN = LaunchInfo("torchrun", 0, 4, 0, 4, 0, "127.0.0.1", 29500)


def rank(r: int, host: str = "gpu-node-1", local: int | None = None, device: int | None = None,
         uuid: str | None = None, **kw: object) -> RankFacts:
    local = r if local is None else local
    device = local if device is None else device
    base = dict(rank=r, world_size=4, local_rank=local, local_world_size=4, node_rank=0,
                launcher="torchrun", host=host, pid=5000 + r, torch="2.13.0", torch_cuda="12.8",
                torch_nccl="2.27.5", cuda_available=True, device_count=8, device=device,
                device_uuid=gpu_uuid(device) if uuid is None else uuid, capability="8.0",
                arch_list=("sm_80", "sm_90"))
    return RankFacts(**{**base, **kw})  # type: ignore[arg-type]


def job(ranks, launch=TORCHRUN, facts=None, **kw) -> JobFacts:
    facts = facts or tuple(node(8, host=r.host, pid=r.pid, own_pids=(r.pid,)) for r in ranks)
    return JobFacts(launch, tuple(ranks), tuple(facts), **kw)


def failing(results):
    return [r for r in results if r.status in (Status.FAIL, Status.ERROR)]


def test_four_ranks_on_four_gpus_pass_and_idle_gpus_warn():
    results = check_gpu_binding(job([rank(r) for r in range(4)]), expect())
    assert not failing(results)
    idle = [r for r in results if r.check == "job.gpu-binding.idle"]
    assert idle and idle[0].status is Status.WARN and "GPU 4, 5, 6, 7 idle" in idle[0].message


def test_two_ranks_on_one_gpu_in_a_host_fail_naming_both():
    ranks = [rank(0), rank(1, device=0), rank(2), rank(3)]
    bad = failing(check_gpu_binding(job(ranks), expect()))
    assert [r.check for r in bad] == ["job.gpu-binding.shared"]
    assert "ranks 0, 1 compute on one GPU" in bad[0].message and bad[0].node == "gpu-node-1"


def test_the_same_gpu_index_on_two_hosts_is_not_shared():
    ranks = [rank(0, "a", 0), rank(1, "a", 1), rank(2, "b", 0), rank(3, "b", 1)]
    assert not failing(check_gpu_binding(job(ranks), expect()))


def test_a_rank_without_a_gpu_among_gpu_ranks_fails():
    ranks = [rank(0), rank(1), rank(2),
             rank(3, device=-1, uuid="", device_note="LOCAL_RANK 3 but only 2 devices visible")]
    bad = failing(check_gpu_binding(job(ranks), expect()))
    assert bad and bad[0].node == "rank 3" and "only 2 devices visible" in bad[0].message


def test_one_visible_gpu_per_rank_and_local_rank_above_zero_warns_for_torchrun():
    ranks = [dataclasses.replace(rank(r), device_count=1, device=0, device_uuid=gpu_uuid(r))
             for r in range(4)]
    results = check_gpu_binding(job(ranks), expect())
    warned = sorted(r.node for r in results if r.check == "job.gpu-binding.local-rank")
    assert warned == ["rank 1", "rank 2", "rank 3"]
    # srun --gpus-per-task: SLURM_LOCALID is no LOCAL_RANK the script reads
    slurm = [dataclasses.replace(r, launcher="slurm") for r in ranks]
    assert not [r for r in check_gpu_binding(job(slurm), expect())
                if r.check == "job.gpu-binding.local-rank"]


def test_duplicate_and_gapped_local_ranks_fail():
    dup = check_local_ranks(job([rank(0), rank(1), rank(2, local=1), rank(3)]), expect())
    assert dup[0].status is Status.FAIL and "local rank 1 is given to several ranks" in (
        dup[0].message)
    gap = check_local_ranks(job([rank(0, local=1), rank(1, local=2)]), expect())
    assert gap[0].status is Status.FAIL and "not 0..1" in gap[0].message
    ok = check_local_ranks(job([rank(0, "a", 0), rank(1, "b", 0)]), expect())
    assert ok[0].status is Status.PASS


def test_missing_rank_is_an_error_naming_it_and_its_host():
    got = check_ranks(job([rank(0), rank(1), rank(2)],
                          missing=((3, "rank 3 (host gpu-node-2)"),)), expect())
    assert [r.status for r in got] == [Status.ERROR]
    assert got[0].node == "rank 3" and "gpu-node-2" in got[0].message


def test_numpy_skew_fails_naming_the_rank():
    ranks = [rank(r) for r in range(4)]
    facts = [node(8, pid=r.pid) for r in ranks]
    f = facts[2]
    facts[2] = dataclasses.replace(f, packages={**f.packages, "numpy": "1.26.4"},
                                   python_packages={**f.python_packages, "numpy": "1.26.4"})
    bad = failing(check_skew(job(ranks, facts=facts), expect()))
    assert [r.check for r in bad] == ["job.skew.numpy"] and bad[0].node == "rank 2"
    assert "rank 2 has 1.26.4" in bad[0].message


def test_torch_cuda_runtime_and_nccl_skew_fail():
    ranks = [rank(0), rank(1), rank(2), rank(3, torch_cuda="12.1", torch_nccl="2.18.1")]
    bad = failing(check_skew(job(ranks), expect()))
    assert {r.check for r in bad} == {"job.skew.cuda-runtime", "job.skew.nccl"}
    assert all(r.node == "rank 3" for r in bad)


def test_no_kernel_image_names_the_missing_architecture():
    ranks = [rank(0), rank(1, capability="12.0",
                        kernel_error="RuntimeError: CUDA error: no kernel image is available "
                                     "for execution on the device")]
    bad = failing(check_kernels(job(ranks), expect()))
    assert bad[0].node == "rank 1" and "targets sm_80, sm_90, not sm_120" in bad[0].message


def test_allreduce_wrong_sum_and_error():
    ok = Collective("gloo", 10.0, ((0, 10.0, 10.0), (1, 10.0, 10.0)))
    wrong = Collective("nccl", 10.0, ((0, 10.0, 10.0), (1, 9.0, 10.0)))
    err = Collective("nccl", 10.0, error="timed out")
    got = check_allreduce(job([rank(0)], collectives=(ok, wrong, err)), expect())
    assert [r.status for r in got] == [Status.PASS, Status.FAIL, Status.ERROR]
    assert got[1].node == "rank 1"


def test_slurm_binding_per_node_against_cuda_visible_devices():
    launch = dataclasses.replace(TORCHRUN, launcher="slurm")
    ranks, facts = [], []
    for r, (host, gpu) in enumerate((("sn1", "0"), ("sn1", "0"), ("sn2", "0"), ("sn2", "1"))):
        ranks.append(rank(r, host, local=r % 2, uuid=f"{host}-{gpu}", launcher="slurm"))
        f = with_env(node(2, host=host, pid=5000 + r), CUDA_VISIBLE_DEVICES=gpu)
        facts.append(dataclasses.replace(f, slurm={
            "SLURM_JOB_ID": "7", "SLURMD_NODENAME": host, "SLURM_JOB_GPUS": "0,1",
            "SLURM_STEP_GPUS": "0,1", "SLURM_JOB_NODELIST": "sn[1-2]"}))
    bad = failing(check_slurm_binding(job(ranks, launch, facts), expect()))
    assert {r.check for r in bad} == {"job.slurm.gpu-shared", "job.slurm.gpu-idle"}
    assert all("sn1" in r.message for r in bad)


def test_a_check_that_raises_is_an_error_and_the_rest_run():
    broken = job([rank(0)], facts=(None,))  # type: ignore[arg-type]
    results = run_job_checks(broken, expect())
    assert any(r.status is Status.ERROR and "raised" in r.message for r in results)
    assert any(r.check == "job.ranks" and r.status is Status.PASS for r in results)


def test_choose_device():
    assert choose_device(0, 0)[0] == -1
    assert choose_device(1, 3)[0] == 0
    assert choose_device(8, 3)[0] == 3
    assert choose_device(2, 3)[0] == -1


def test_ranks_sharing_a_gpu_block_the_nccl_all_reduce_and_say_why():
    # NCCL refuses two ranks of one communicator on one GPU ("invalid usage", seen on an H200):
    # the collective is not attempted, the binding check fails, the all-reduce skips saying why
    ranks = [rank(0), rank(1, device=0)]
    assert "ranks 0 and 1 share one GPU on gpu-node-1" in nccl_blocker(ranks)
    results = check_allreduce(job(ranks), expect())
    assert [(r.check, r.status) for r in results] == [("job.allreduce.nccl", Status.SKIP)]
    assert "share one GPU" in results[0].message


def test_distinct_gpus_and_the_same_index_on_two_hosts_do_not_block_nccl():
    assert nccl_blocker([rank(0), rank(1)]) == ""
    assert nccl_blocker([rank(0, "a", 0), rank(1, "b", 0)]) == ""
    assert nccl_blocker([rank(0), rank(1, device=-1)]) == "not every rank has a working GPU"


def test_skip_names_a_job_check_that_then_reports_skipped_and_runs_nothing():
    exp = dataclasses.replace(expect(), skip=frozenset({"job.kernel"}))
    ranks = [rank(0, kernel_error="no kernel image is available"), rank(1)]
    results = run_job_checks(job(ranks), exp)
    kernel = [r for r in results if r.check.startswith("job.kernel")]
    assert [(r.check, r.status, r.message) for r in kernel] == [
        ("job.kernel", Status.SKIP, "skipped by --skip")
    ]


def test_skip_names_a_node_check_that_is_said_skipped_once_not_once_per_rank():
    exp = dataclasses.replace(expect(), skip=frozenset({"glibc"}))
    results = run_job_checks(job([rank(0), rank(1, "b", 0)]), exp)
    glibc = [r for r in results if r.check == "glibc"]
    assert [(r.status, r.message, r.node, r.group) for r in glibc] == [
        (Status.SKIP, "skipped by --skip", "", "node")
    ]
    assert [r for r in results if r.check == "driver"]  # the other node checks ran


def test_launcher_views_are_read_from_every_launcher_and_nested_launches_are_not_compared():
    env = {"SLURM_PROCID": "1", "SLURM_LOCALID": "1", "SLURM_NTASKS": "2",
           "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "x"}
    views = launcher_views(env)
    assert views == (("slurm", 1, 1, 2), ("torch", 0, 0, 2))
    assert views_disagree(views) == "slurm says rank 1 (local 1), torch says rank 0 (local 0)"
    # torchrun's 8 workers under 2 srun tasks: another world, a nested launch, not a conflict
    assert views_disagree((("slurm", 1, 0, 2), ("torch", 5, 1, 8))) == ""


def test_a_rank_whose_launchers_disagree_fails_naming_it():
    agree = (("slurm", 0, 0, 2), ("submitit", 0, 0, 2))
    ranks = [dataclasses.replace(rank(0), launcher_views=agree),
             dataclasses.replace(rank(1, local=1),
                                 launcher_views=(("slurm", 1, 1, 2), ("torch", 0, 0, 2)))]
    (bad,) = failing(check_launcher_views(job(ranks), expect()))
    assert bad.node == "rank 1" and "slurm says rank 1 (local 1), torch says rank 0" in bad.message
    ok = [dataclasses.replace(r, launcher_views=agree) for r in ranks]
    (good,) = check_launcher_views(job(ok), expect())
    assert good.status is Status.PASS and good.message == "slurm and submitit agree on every rank"


# --- Horovod's step: hvd.size(), rank(), local_rank() against the launcher -----------------

HOROVODRUN = LaunchInfo("horovod", 0, 4, 0, 4, 0, "127.0.0.1", 29500)
MPIRUN = LaunchInfo("openmpi", 0, 2, 0, 2, -1, "127.0.0.1", 29500)


def hvd_rank(r: int, size: int = 4, **kw: object):
    from envcheck.verify.job.horovod_job import HorovodRank

    base = dict(rank=r, host="gpu-node-1", version="0.28.1", controller="Gloo", size=size,
                hvd_rank=r, local_rank=r, local_size=size, reduced=(10.0, 10.0))
    return HorovodRank(**{**base, **kw})  # type: ignore[arg-type]


def test_horovod_world_as_horovodrun_set_it_passes():
    from envcheck.verify.job.checks import check_horovod_ranks

    ranks = [rank(r, launcher="horovod") for r in range(4)]
    [r] = check_horovod_ranks(job(ranks, HOROVODRUN, horovod=tuple(map(hvd_rank, range(4)))),
                              expect())
    assert r.status is Status.PASS and "hvd.size() 4" in r.message


def test_gloo_only_horovod_under_mpirun_runs_each_rank_alone_and_fails():
    # what a Gloo-only build does outside horovodrun: size 1, rank 0 on every rank
    from envcheck.verify.job.checks import check_horovod_ranks

    ranks = [rank(r, world_size=2, local_world_size=2, launcher="openmpi") for r in range(2)]
    alone = tuple(hvd_rank(r, size=1, hvd_rank=0, local_rank=0, reduced=(r + 1.0, r + 1.0))
                  for r in range(2))
    results = check_horovod_ranks(job(ranks, MPIRUN, horovod=alone), expect())
    [size] = results  # its rank and local rank follow from the size: not named again
    assert size.message == ("hvd.size() is 1 on ranks 0, 1, but openmpi says 2; its all-reduce "
                            "summed 1 on rank 0, 2 on rank 1, not 3")
    assert size.status is Status.FAIL and "horovodrun --gloo -np 2" in size.fix


def test_a_local_rank_horovod_numbers_otherwise_fails_naming_set_device():
    from envcheck.verify.job.checks import check_horovod_ranks

    ranks = [rank(r, launcher="horovod") for r in range(4)]
    hv = tuple(hvd_rank(r, local_rank=3 - r) for r in range(4))
    results = check_horovod_ranks(job(ranks, HOROVODRUN, horovod=hv), expect())
    assert [r.message for r in results][0] == "hvd.local_rank() is 3 on rank 0, but horovod says 0"
    assert all("set_device(hvd.local_rank())" in r.fix for r in results) and len(results) == 4


def test_a_rank_whose_horovod_failed_is_named():
    from envcheck.verify.job.checks import check_horovod_ranks

    ranks = [rank(r, launcher="horovod") for r in range(4)]
    timed_out = "hvd.init() failed: RuntimeError: Gloo context timed out"
    hv = tuple(hvd_rank(r) for r in range(2)) + tuple(
        hvd_rank(r, error=timed_out) for r in (2, 3))
    bad = failing(check_horovod_ranks(job(ranks, HOROVODRUN, horovod=hv), expect()))
    assert [(r.node, r.message) for r in bad] == [
        ("rank 2, rank 3", f"ranks 2, 3 on gpu-node-1: {timed_out}")]


# --- one id per check: a result's check is its catalog id, or that id and an aspect ----------


def _is_id_or_aspect(check: str, check_id: str) -> bool:
    return check == check_id or check.startswith(f"{check_id}.")


def test_every_job_result_reports_under_its_catalog_id_or_an_aspect_of_it():
    from envcheck.verify.catalog import checks_of
    from envcheck.verify.job.checks import JOB_CHECKS

    node_ids = {c.id for c in checks_of("job") if c.kind == "node"}
    slurm = dataclasses.replace(TORCHRUN, launcher="slurm")
    ranks, facts = [], []
    for r, (host, gpu) in enumerate((("sn1", "0"), ("sn1", "0"), ("sn2", "0"), ("sn2", "1"))):
        ranks.append(rank(r, host, local=r % 2 + 1, device=0, uuid=f"{host}-{gpu}",
                          device_count=1, launcher="slurm"))
        f = with_env(node(2, host=host, pid=5000 + r), CUDA_VISIBLE_DEVICES=gpu)
        f = dataclasses.replace(f, packages={**f.packages, "numpy": f"1.2{r}"},
                                python_packages={**f.python_packages, "numpy": f"1.2{r}"})
        facts.append(dataclasses.replace(f, slurm={
            "SLURM_JOB_ID": "7", "SLURMD_NODENAME": host, "SLURM_JOB_GPUS": "0,1",
            "SLURM_STEP_GPUS": "0,1", "SLURM_JOB_NODELIST": "sn[1-2]"}))
    jobs = [
        job(ranks, slurm, facts, missing=((4, "rank 4 on sn3"),), bench_skipped="one host",
            collectives=(Collective("gloo", 10.0, error="timed out"),)),
        job([rank(0), rank(1, device=0, device_count=1), rank(2, torch_cuda="12.1"),
             rank(3, device=-1)]),
        job([rank(r, launcher="horovod") for r in range(4)], HOROVODRUN,
            horovod=tuple(hvd_rank(r, size=2) for r in range(4))),
    ]
    seen = set()
    for j in jobs:
        for check_id, fn in JOB_CHECKS.items():
            for r in fn(j, expect()):
                seen.add(r.check)
                if check_id == "job.node":  # verify node's checks, under their own ids
                    assert r.check in node_ids, r
                else:
                    assert _is_id_or_aspect(r.check, check_id), (check_id, r)
    assert {"job.gpu-binding.shared", "job.gpu-binding.idle", "job.gpu-binding.local-rank",
            "job.slurm.gpu-shared", "job.skew.cuda-runtime", "job.skew.numpy"} <= seen, seen


def test_every_result_id_written_in_verify_job_is_a_catalog_id_or_an_aspect_of_one():
    # run.py and facts_wire.py make the results of a group that fails (no rendezvous, a step,
    # facts that cannot be used, another rank's verdict) outside the registry: the ids are
    # read from the sources of verify/job/
    import re
    from pathlib import Path

    from envcheck.verify.catalog import checks_of
    from envcheck.verify.job import run

    ids = {i for path in Path(run.__file__).parent.glob("*.py")
           for i in re.findall(r'(?:_err|_r|Result)\(\s*"([^"]+)"', path.read_text())}
    job_ids = {c.id for c in checks_of("job") if c.kind == "job"}
    assert {"job.ranks.rendezvous", "job.ranks.step", "job.ranks.verdict",
            "job.ranks.facts", "job.gpu-binding.shared"} <= ids
    assert all(any(_is_id_or_aspect(i, c) for c in job_ids) for i in ids), ids
