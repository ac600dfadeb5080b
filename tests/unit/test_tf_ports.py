"""The ports verify job --tensorflow gives TensorFlow's gRPC servers (tf_job.free_ports)."""

from __future__ import annotations

import socket

from envcheck.verify.job.launch import LaunchInfo
from envcheck.verify.job.tf_job import _ephemeral_low, free_ports, ports_needed


def test_a_block_of_free_ports_below_the_ephemeral_range():
    """Each port of the block binds, and none is one the kernel could hand another process's
    outgoing connection meanwhile."""
    for count in (1, 4):
        base = free_ports("127.0.0.1", count)
        assert base >= 10_000 and base + count <= _ephemeral_low()
        held = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
        finally:
            for s in held:
                s.close()


def test_a_block_skips_a_port_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]
        for _ in range(20):
            base = free_ports("127.0.0.1", 2)
            assert taken not in (base, base + 1)


def test_srun_needs_as_many_ports_as_one_node_has_tasks():
    slurm = LaunchInfo("slurm", 0, 5, 0, hosts=("a", "b"), tasks_per_node=(3, 2))
    assert ports_needed(slurm) == 3
    assert ports_needed(LaunchInfo("torchrun", 0, 4, 0)) == 1
    assert ports_needed(LaunchInfo("slurm", 0, 1, 0)) == 1  # srun said nothing of its nodes
