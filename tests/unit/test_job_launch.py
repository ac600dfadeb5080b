"""LaunchInfo from launchers' environments: snapshots of real ranks (tests/data/launch_env/).

torchrun, srun (the session's real single-node Slurm, --gpus-per-task=1) and Open MPI 4.1's
mpirun were captured from running ranks on this kind of machine; the horovodrun one holds the
variables horovod 0.28.1's gloo_run.py gives slot 3 of `horovodrun --gloo -np 4 -H
gpu12:2,gpu13:2` (no Horovod build runs here in the unit tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.errors import BadInput
from envcheck.verify.job.launch import (
    CANDIDATES,
    DEFAULT_PORT,
    _derived_port,
    derived_ports,
    launch_info,
    tasks_per_node,
)
from tests.support.deadlines import HANG

DATA = Path(__file__).parents[1] / "data" / "launch_env"


def snapshot(name: str) -> dict[str, str]:
    return json.loads((DATA / f"{name}.json").read_text())


def test_torchrun_joins_the_agent_store_on_master_port():
    info = launch_info(snapshot("torchrun-2ranks.rank1"))
    assert (info.launcher, info.rank, info.world_size, info.local_rank) == ("torchrun", 1, 2, 1)
    assert (info.local_world_size, info.node_rank) == (2, 0)
    assert (info.master_addr, info.master_port, info.agent_store) == ("127.0.0.1", 29612, True)
    assert info.run_id == "none.0"


def test_srun_step_reads_slurm_and_derives_master_from_the_nodelist():
    env = snapshot("srun-2ranks.rank1")
    info = launch_info(env)
    assert (info.launcher, info.rank, info.world_size, info.local_rank) == ("slurm", 1, 2, 1)
    assert info.master_addr == "vm"  # the step's first node; MASTER_ADDR unset
    assert info.hosts == ("vm",) and info.tasks_per_node == (2,)
    assert info.port_source.startswith("derived") and 20000 <= info.master_port < 30000
    # every rank of the step derives the same port
    assert launch_info(snapshot("srun-2ranks.rank0")).master_port == info.master_port
    # another step of the job gets another port
    other = launch_info({**env, "SLURM_STEP_ID": "1", "SLURM_STEPID": "1"})
    assert other.master_port != info.master_port


def test_a_derived_port_comes_with_candidates_every_rank_computes_alike():
    info = launch_info(snapshot("srun-2ranks.rank1"))
    ports = info.port_candidates
    assert len(ports) == CANDIDATES == len(set(ports)) and ports[0] == info.master_port
    assert all(20000 <= p < 30000 for p in ports)
    # the first is the port derived before candidates existed (the report names the same one)
    assert ports[0] == _derived_port("1", "0")
    assert launch_info(snapshot("srun-2ranks.rank0")).port_candidates == ports
    assert derived_ports("1", "0") == ports and derived_ports("1", "1") != ports
    given = launch_info({**snapshot("srun-2ranks.rank1"), "MASTER_PORT": "29612"})
    assert (given.master_port, given.port_source, given.port_candidates) == (
        29612, "MASTER_PORT", ())


def test_srun_across_nodes_places_ranks_block_and_cyclic():
    env = {**snapshot("srun-2ranks.rank1"), "SLURM_STEP_NODELIST": "gpu[12-13]",
           "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_NUM_TASKS": "4",
           "SLURM_NODEID": "1", "SLURM_PROCID": "3"}
    info = launch_info(env)
    assert info.master_addr == "gpu12" and info.local_world_size == 2 and info.node_rank == 1
    assert [info.host_of(r) for r in range(4)] == ["gpu12", "gpu12", "gpu13", "gpu13"]
    cyclic = launch_info({**env, "SLURM_DISTRIBUTION": "cyclic"})
    assert [cyclic.host_of(r) for r in range(4)] == ["gpu12", "gpu13", "gpu12", "gpu13"]
    assert tasks_per_node("2(x3),1") == (2, 2, 2, 1)


def test_mpirun_reads_open_mpi_and_finds_rank_0_on_the_only_host():
    info = launch_info(snapshot("mpirun-2ranks.rank1"))
    assert (info.launcher, info.rank, info.world_size, info.local_rank) == ("openmpi", 1, 2, 1)
    assert info.node_rank == -1  # OMPI_COMM_WORLD_NODE_RANK is not a node index
    assert info.master_addr == "127.0.0.1"  # every rank on this host
    assert info.master_port == launch_info(snapshot("mpirun-2ranks.rank0")).master_port


def test_mpirun_across_hosts_needs_master_addr():
    env = {**snapshot("mpirun-2ranks.rank1"), "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}
    assert launch_info(env).master_addr == ""  # connect() then says to set MASTER_ADDR
    assert launch_info({**env, "MASTER_ADDR": "gpu12"}).master_addr == "gpu12"


def test_horovodrun_slot():
    info = launch_info(snapshot("horovodrun-gloo-4ranks.rank3"))
    assert (info.launcher, info.rank, info.world_size, info.local_rank) == ("horovod", 3, 4, 1)
    assert (info.local_world_size, info.node_rank, info.master_addr) == (2, 1, "")
    assert info.master_port != DEFAULT_PORT


def test_inner_launcher_wins_over_the_allocation():
    # torchrun inside an srun step: torchrun's ranks, not Slurm's tasks
    env = {**snapshot("srun-2ranks.rank0"), **snapshot("torchrun-2ranks.rank1")}
    assert launch_info(env).launcher == "torchrun"
    # mpirun inside the allocation
    env = {**snapshot("srun-2ranks.rank0"), **snapshot("mpirun-2ranks.rank1")}
    assert launch_info(env).launcher == "openmpi"


@pytest.mark.parametrize(
    "env, says",
    [
        ({}, "not started by a parallel launcher"),
        # an sbatch script's batch step has SLURM_PROCID too, but no step of tasks
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "7"}, "not started"),
        ({"RANK": "4", "WORLD_SIZE": "4", "MASTER_ADDR": "h"}, "outside the world of 4"),
        ({"RANK": "x", "WORLD_SIZE": "4"}, "RANK='x' is not a number"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "70000"}, "not a TCP port"),
        ({"PMIX_RANK": "0"}, "world size is unknown"),
        ({"HOROVOD_RANK": "0", "HOROVOD_SIZE": "2"}, "HOROVOD_LOCAL_RANK is not set"),
        # every value range-checked before it is used (MAX_WORLD = 65536)
        ({"RANK": "0", "WORLD_SIZE": "1000000000000"}, "at most 10"),
        ({"RANK": "0", "WORLD_SIZE": "1" + "0" * 30}, "at most 10"),
        ({"RANK": "0", "WORLD_SIZE": "65537"}, "world size 65537 is not 1 to 65536"),
        ({"RANK": "0", "WORLD_SIZE": "0"}, "world size 0 is not 1 to 65536"),
        ({"RANK": "-1", "WORLD_SIZE": "2"}, "rank -1 is outside the world of 2"),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2"}, "local rank 2 is outside"),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "3"},
         "local world size 3 is not 1 to the world size 2"),
        ({"RANK": "0", "WORLD_SIZE": "2", "GROUP_RANK": "5"}, "node rank 5 is outside"),
        ({"RANK": "\uff10", "WORLD_SIZE": "2"}, "is not a number"),  # a fullwidth 0
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "\uff11\uff12\uff13"}, "not a number"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "x" * 5000},
         r"MASTER_PORT=a str of 5000 characters is not a number"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "bad host!"},
         "MASTER_ADDR='bad host!' is neither a host name nor an IP address"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "::::"}, "neither a host name"),
        ({"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2",
          "SLURM_STEP_NODELIST": "n[0-9999999999]"}, "names more than 65536 hosts"),
        ({"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2",
          "SLURM_STEP_TASKS_PER_NODE": "1(x9999999999)"}, "more than 65536 tasks or nodes"),
    ],
)
def test_bad_launch_environments_are_one_line(env, says):
    import time

    started = time.monotonic()
    with pytest.raises(BadInput, match=says) as e:
        launch_info(env)
    assert time.monotonic() - started < HANG and "\n" not in e.value.message
    assert len(e.value.message) < 400


def test_good_addresses_and_the_largest_world_are_taken():
    for addr in ("10.0.0.1", "fe80::1", "gpu-01.cluster.example", "node_7"):
        env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": addr}
        assert launch_info(env).master_addr == addr
    assert launch_info({"RANK": "65535", "WORLD_SIZE": "65536"}).world_size == 65536
