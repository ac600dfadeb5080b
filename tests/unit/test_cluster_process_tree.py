"""busy-gpus over a cluster's process tree: facts built here describe the processes (pids,
ppid chains, who holds GPU memory); the judgement is the code under test.

A UCX cluster started as `dask scheduler --protocol ucx` + `dask cuda worker` on one host:
bash (2600) -> dask scheduler (2700), dask cuda worker (2767) -> four workers (2801..2804),
and the envcheck client (2900). The launcher holds a CUDA context on GPU 0 with UCX.
"""

from __future__ import annotations

import dataclasses

from envcheck.report import Result, Status
from envcheck.verify.across.workers import cluster_pids_by_host, node_checks_per_worker
from envcheck.verify.facts import NodeFacts, ProcessInfo
from envcheck.verify.job.checks import JobFacts
from envcheck.verify.job.checks import check_node as job_check_node
from envcheck.verify.job.launch import LaunchInfo
from envcheck.verify.job.rank import RankFacts
from envcheck.verify.node.checks.gpu.busy import check_busy
from envcheck.verify.ray.checks import check_node as ray_check_node
from envcheck.verify.ray.model import RayExpect, RayFacts, RayNode
from tests.support.factories import H200, expect, node, with_process

HOST = "gpu-node-1"
INIT = ProcessInfo(1, 0, "root", "/sbin/init")
BASH = ProcessInfo(2600, 1, "alice", "-bash")
LAUNCHER = ProcessInfo(2767, 2600, "alice",
                       "/opt/conda/bin/python /opt/conda/bin/dask cuda worker "
                       "--scheduler-file /shared/sched.json")
SCHEDULER_CMD = "dask scheduler --protocol ucx --scheduler-file /shared/sched.json"


def chain(*procs: ProcessInfo) -> tuple[ProcessInfo, ...]:
    return tuple(procs)


def facts(pid: int, role: str, ancestors: tuple[ProcessInfo, ...], host: str = HOST,
          **kw: object) -> NodeFacts:
    base = node(4, H200, host=host, pid=pid, role=role, own_pids=(pid,), ancestors=ancestors)
    return dataclasses.replace(base, **kw) if kw else base


def holding(f: NodeFacts, held: list[tuple[int, int, str, str]]) -> NodeFacts:
    """f with (gpu, pid, user, command) on its GPUs: what NVML lists on that host."""
    for gpu, pid, user, command in held:
        f = with_process(f, gpu, pid=pid, user=user, mib=520, command=command)
    return f


def ucx_cluster(held: list[tuple[int, int, str, str]], above: tuple[ProcessInfo, ...] = (
        LAUNCHER, BASH, INIT), host: str = HOST) -> dict[str, NodeFacts]:
    """label -> facts, as ClusterFacts.by_process() gives them: client, scheduler, workers."""
    held = [(0, 2767, "alice", LAUNCHER.command), (0, 2700, "alice", SCHEDULER_CMD),
            *((i, 2801 + i, "alice", "python -c from multiprocessing.spawn ...")
              for i in range(4)), *held]
    out = {"client": facts(2900, "client", chain(BASH, INIT), host),
           "scheduler": facts(2700, "scheduler", chain(BASH, INIT), host)}
    for i in range(4):
        order = ",".join(str((i + k) % 4) for k in range(4))  # dask-cuda: own GPU first
        w = facts(2801 + i, "worker", above, host, address=f"ucx://10.0.0.1:4000{i}",
                  env={"CUDA_VISIBLE_DEVICES": order})
        out[w.address] = w
    return {label: holding(f, held) for label, f in out.items()}


def busy(f: NodeFacts, e, n: str) -> list[Result]:
    return [dataclasses.replace(r, node=n) for r in check_busy(f, e)]


def judged(processes: dict[str, NodeFacts], noun: str = "worker") -> list[Result]:
    workers = {a: f for a, f in processes.items() if f.role == "worker"}
    return node_checks_per_worker(workers, expect(), busy,
                                  cluster_pids_by_host(processes, noun), noun)


def test_the_dask_cuda_worker_launcher_and_scheduler_on_a_gpu_pass_each_named():
    cluster = ucx_cluster([])
    [r] = judged(cluster)  # every worker judges alike: one result for the host
    assert r.status is Status.PASS and r.node == f"{HOST} (4 workers)", r
    assert "GPU 0 pid 2767: nanny (dask cuda worker) above 4 workers" in r.message
    assert "GPU 0 pid 2700: scheduler" in r.message
    assert "GPU 2 pid 2803: worker ucx://10.0.0.1:40002" in r.message
    # without the cluster's tree the launcher is "another user" (the bug this fixes)
    alone = node_checks_per_worker({"w": cluster["ucx://10.0.0.1:40000"]}, expect(), busy)
    assert alone[0].status is Status.FAIL and "pid 2767" in alone[0].message


def test_a_step_daemon_above_the_nanny_is_a_launcher_of_the_workers():
    stepd = ProcessInfo(2500, 1, "root", "slurmstepd: [1234.0]")
    launcher = dataclasses.replace(LAUNCHER, ppid=2500)
    cluster = ucx_cluster([(1, 2500, "root", stepd.command)], above=(launcher, stepd, INIT))
    [r] = judged(cluster)
    assert r.status is Status.PASS, r
    assert "GPU 1 pid 2500: launcher (Slurm step daemon) above 4 workers" in r.message
    assert "GPU 0 pid 2767: nanny (dask cuda worker) above 4 workers" in r.message


def test_the_schedulers_launcher_and_a_workers_child_are_the_clusters_own():
    script = ProcessInfo(2650, 2600, "alice", "python start_cluster.py --ucx")
    cluster = ucx_cluster([(3, 2650, "alice", script.command), (1, 2811, "alice", "python -c")])
    cluster["scheduler"] = dataclasses.replace(cluster["scheduler"], ancestors=(script, BASH))
    first = "ucx://10.0.0.1:40000"
    cluster[first] = dataclasses.replace(cluster[first], own_pids=(2801, 2811))
    [r] = judged(cluster)
    assert r.status is Status.PASS, r
    assert "GPU 3 pid 2650: launcher (python start_cluster.py --ucx) above the scheduler" \
        in r.message
    assert f"GPU 1 pid 2811: below worker {first}" in r.message


def test_another_users_process_on_one_gpu_fails_naming_it_beside_the_clusters_own():
    cluster = ucx_cluster([(2, 9999, "nobody", "python hold.py 512")])
    [r] = judged(cluster)
    assert r.status is Status.FAIL and r.node == f"{HOST} (4 workers)", r
    foreign = r.message.split(" (ours: ")[0]
    assert "GPU 2 (" in foreign and "pid 9999 (python hold.py 512), user nobody, 520 MiB" \
        in foreign
    assert "2767" not in foreign and "2700" not in foreign  # the launcher, scheduler: ours
    assert "GPU 0 pid 2767: nanny (dask cuda worker)" in r.message.split(" (ours: ")[1]


def test_the_same_user_outside_the_tree_is_still_foreign():
    # alice's notebook, a sibling of the launcher under the same shell: not above nor below
    cluster = ucx_cluster([(1, 2990, "alice", "python -m jupyter lab")])
    [r] = judged(cluster)
    assert r.status is Status.FAIL and "pid 2990 (python -m jupyter lab), user alice" in r.message


def test_pids_are_the_clusters_only_on_their_own_host():
    # on gpu-node-2, pid 2767 is someone else's process: only node-1's launcher has that pid
    other = facts(2801, "worker", chain(ProcessInfo(2400, 1, "alice", "dask cuda worker"), INIT),
                  host="gpu-node-2", address="ucx://10.0.0.2:40000")
    other = holding(other, [(0, 2767, "bob", "python bob.py")])
    cluster = {**ucx_cluster([]), other.address: other}
    results = judged(cluster)
    assert {(r.node, r.status) for r in results} == {
        (f"{HOST} (4 workers)", Status.PASS), (other.address, Status.FAIL)}


def rank(r: int, pid: int) -> RankFacts:
    return RankFacts(rank=r, world_size=2, local_rank=r, local_world_size=2, node_rank=0,
                     launcher="torchrun", host=HOST, pid=pid)


def test_torchruns_agent_above_the_ranks_is_the_jobs_own():
    agent = ProcessInfo(3000, 2600, "alice", "/opt/conda/bin/python /opt/conda/bin/torchrun "
                        "--nproc-per-node 2 -m envcheck verify job")
    held = [(0, 3000, "alice", agent.command), (0, 3001, "alice", ""), (1, 3002, "alice", "")]
    ranks = (rank(0, 3001), rank(1, 3002))
    per_rank = tuple(holding(facts(r.pid, "worker", chain(agent, BASH, INIT)), held)
                     for r in ranks)
    launch = LaunchInfo("torchrun", 0, 2, 0, 2, 0, "127.0.0.1", 29500)
    results = [r for r in job_check_node(JobFacts(launch, ranks, per_rank), expect())
               if r.check == "busy-gpus"]
    assert [r.status for r in results] == [Status.PASS], results
    assert "GPU 0 pid 3000: launcher (torchrun agent) above rank 0, rank 1" in results[0].message
    # an srun step: the step daemon is the ranks' parent
    stepd = ProcessInfo(3000, 1, "root", "slurmstepd: [77.0]")
    per_rank = tuple(dataclasses.replace(f, ancestors=(stepd, INIT)) for f in per_rank)
    [r] = [r for r in job_check_node(JobFacts(launch, ranks, per_rank), expect())
           if r.check == "busy-gpus"]
    assert r.status is Status.PASS and "pid 3000: launcher (Slurm step daemon)" in r.message


def test_the_raylet_above_rays_worker_and_what_the_driver_started_are_rays_own():
    raylet = ProcessInfo(4100, 1, "alice", "/opt/conda/lib/python3.11/site-packages/ray/core/"
                         "src/ray/raylet/raylet --raylet_socket_name=/tmp/ray/session/raylet")
    gcs = 4050  # `ray.init()` started the GCS under the driver
    held = [(0, 4100, "alice", raylet.command), (1, gcs, "alice", "gcs_server")]
    n = RayNode("ab" * 28, "10.0.0.1", HOST, True, 4.0)
    worker = holding(facts(4200, "worker", chain(raylet, INIT)), held)
    client = facts(4000, "client", chain(BASH, INIT), own_pids=(4000, gcs, 4100))
    ray = RayFacts("", "2.60.0", (n,), {n.node_id: worker}, {}, client)
    [r] = [r for r in ray_check_node(ray, RayExpect()) if r.check == "busy-gpus"]
    assert r.status is Status.PASS, r
    assert "GPU 0 pid 4100: raylet above Ray worker gpu-node-1 (abababab)" in r.message
    assert f"GPU 1 pid {gcs}: below client" in r.message
    # without the driver's tree the GCS it started is foreign
    alone = dataclasses.replace(ray, client=None)
    [r] = [r for r in ray_check_node(alone, RayExpect()) if r.check == "busy-gpus"]
    assert r.status is Status.FAIL and f"pid {gcs} (gcs_server)" in r.message
