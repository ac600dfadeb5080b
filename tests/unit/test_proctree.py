"""The ppid chain and process facts as /proc shows them, over real processes: a parent ->
child -> grandchild chain started here, another uid through setpriv, and the round trip of
what collect_node_facts records."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.verify.facts import ProcessInfo, facts_from_dict, facts_to_dict
from envcheck.verify.facts.collect import _process_tree
from envcheck.verify.facts.proctree import ancestors, own_pids, read_process, user_name
from tests.support.factories import healthy_a100x8, make_gpu, with_process
from tests.support.nobody import AS_NOBODY

# Each level starts the next with one less, under argv[2:] (setpriv ...) if given; the last
# prints its pid and sleeps.
CHAIN = """
import os, subprocess, sys, time
depth = int(sys.argv[1])
if depth:
    subprocess.Popen([*sys.argv[2:], sys.executable, sys.argv[0], str(depth - 1)]).wait()
else:
    print(os.getpid(), flush=True)
    time.sleep(120)
"""
DEADLINE = 60.0  # only to catch a hang


@contextlib.contextmanager
def chain(tmp_path: Path, *prefix: str):
    """(parent Popen, grandchild pid): three real processes, each the next one's parent.
    prefix: a command the parent runs the child under (setpriv ...)."""
    script = tmp_path / "chain.py"
    script.write_text(CHAIN)
    parent = subprocess.Popen([sys.executable, str(script), "2", *prefix],
                              stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([parent.stdout], [], [], DEADLINE)
        assert ready, "the grandchild never said its pid"
        yield parent, int(parent.stdout.readline())
    finally:
        for pid in own_pids(parent.pid)[::-1]:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        parent.wait()
        parent.stdout.close()


def test_the_ppid_chain_of_a_grandchild_runs_through_its_child_parent_and_us(tmp_path):
    with chain(tmp_path) as (parent, grandchild):
        up = ancestors(grandchild)
        child = up[0]
        assert child.ppid == parent.pid and up[1].pid == parent.pid
        assert up[2].pid == os.getpid()  # and on up through whoever started this test
        assert child.command.endswith("chain.py 1") and up[1].command.endswith("chain.py 2")
        assert {a.user for a in up[:3]} == {user_name(os.getuid())}
        assert up[-1].ppid == 0 or read_process(up[-1].ppid) is None  # the top: nothing above
        assert up[3:] == ancestors(os.getpid())
        me = read_process(grandchild)
        assert me is not None and me.ppid == child.pid and me.command.endswith("chain.py 0")
        assert {parent.pid, child.pid, grandchild} <= set(own_pids(parent.pid))
        assert set(own_pids(grandchild)) == {grandchild}
        assert os.getpid() not in own_pids(parent.pid)  # descendants, not ancestors


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_a_process_of_another_uid_is_read_as_that_user(tmp_path):
    with chain(tmp_path, *AS_NOBODY) as (parent, grandchild):
        me = read_process(grandchild)
        assert me is not None and me.user == user_name(65534) != user_name(os.getuid())
        assert ancestors(grandchild)[1].pid == parent.pid  # its chain still leads to us


def test_a_pid_that_is_gone_reads_as_nothing():
    p = subprocess.Popen([sys.executable, "-c", ""])
    p.wait()
    assert read_process(p.pid) is None and ancestors(p.pid) == ()


def test_the_tree_is_walked_only_when_a_gpu_lists_a_process(tmp_path):
    idle = (make_gpu(0),)
    assert _process_tree(idle) == ((os.getpid(),), ())
    busy = with_process(healthy_a100x8(), 0, pid=1, user="root", mib=10).gpus
    with chain(tmp_path) as (parent, grandchild):
        own, above = _process_tree(busy)
        assert {os.getpid(), parent.pid, grandchild} <= set(own)
        assert above == ancestors(os.getpid()) and above[0].pid == os.getppid()


def test_ancestors_and_gpu_commands_survive_the_dict_and_json_round_trip():
    f = with_process(healthy_a100x8(), 2, pid=77, user="bob", mib=5, command="python x.py")
    f = facts_to_dict(type(f)(**{**f.__dict__, "ancestors": (
        ProcessInfo(10, 1, "alice", "dask cuda worker"), ProcessInfo(1, 0, "root", "init"))}))
    back = facts_from_dict(json.loads(json.dumps(f)))
    assert [a.pid for a in back.ancestors] == [10, 1]
    assert back.ancestors[0] == ProcessInfo(10, 1, "alice", "dask cuda worker")
    assert back.gpus[2].processes[0].command == "python x.py"
    assert facts_from_dict(f) == back
