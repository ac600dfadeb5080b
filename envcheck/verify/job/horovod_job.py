"""Horovod's own collective in verify job, and what Horovod says the world is.

Under horovodrun (HOROVOD_RANK set), or with --horovod under another launcher (mpirun and srun
start Horovod jobs built with MPI), every rank runs hvd.init() and a known-answer
hvd.allreduce, and reports hvd.size(), hvd.rank(), hvd.local_rank(), hvd.local_size(): they
must be the world the launcher made. The classic way they are not: a Horovod without an MPI
controller (Gloo only) started by mpirun or srun instead of horovodrun finds no rendezvous and
runs every rank alone (horovod/common/gloo/gloo_context.cc: "no rendezvous server provided,
assuming single process execution"), size 1: N copies train on their own and nothing fails.
Scripts call torch.cuda.set_device(hvd.local_rank()), so a local rank Horovod numbers
differently from the launcher puts the rank on another GPU than the binding checks judged.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envcheck.report import Result, Status
from envcheck.text import first_line
from envcheck.verify.job.launch import LaunchInfo
from envcheck.verify.job.rank import RankFacts

CHECK = "job.horovod"
STEP = "Horovod's init and all-reduce"


@dataclass(frozen=True)
class HorovodRank:
    """One rank's Horovod: what hvd.* answered, and its known-answer all-reduce."""

    rank: int  # the launcher's
    host: str
    version: str = ""
    controller: str = ""  # "Gloo" or "MPI": the one hvd.init() chose
    mpi_built: bool = False
    size: int = -1  # hvd.size(); -1: not read
    hvd_rank: int = -1
    local_rank: int = -1
    local_size: int = -1
    reduced: tuple[float, ...] = ()  # (min, max) of the tensor after the sum
    error: str = ""  # the step that failed and why


def wanted(env: Mapping[str, str], forced: bool) -> bool:
    """Run Horovod's step: forced (--horovod), or horovodrun started this rank."""
    return forced or "HOROVOD_RANK" in env


def run_horovod(launch: LaunchInfo, timeout: float) -> HorovodRank:
    """hvd.init(), the world it sees and a known-answer hvd.allreduce; failures are recorded,
    not raised (rank 0 names them)."""
    me = HorovodRank(rank=launch.rank, host=socket.gethostname())
    try:
        import horovod
        import horovod.torch as hvd
        import torch
    except Exception as e:
        return dataclasses.replace(me, error=f"import horovod.torch: {first_line(e)}")
    me = dataclasses.replace(me, version=str(getattr(horovod, "__version__", "")))
    # Gloo's rendezvous waits HOROVOD_GLOO_TIMEOUT_SECONDS for missing ranks: give up before
    # the step's own deadline, so the failure is Horovod's message and not the watchdog's
    os.environ.setdefault("HOROVOD_GLOO_TIMEOUT_SECONDS", str(max(5, int(timeout))))
    try:
        hvd.init()
    except Exception as e:
        return dataclasses.replace(me, error=f"hvd.init() failed: {first_line(e)}")
    try:
        me = dataclasses.replace(
            me, controller="MPI" if hvd.mpi_enabled() else "Gloo" if hvd.gloo_enabled() else "",
            mpi_built=bool(hvd.mpi_built()), size=hvd.size(), hvd_rank=hvd.rank(),
            local_rank=hvd.local_rank(), local_size=hvd.local_size(),
        )
        # each rank adds rank+1 (the launcher's rank): the sum over the world is known
        t = torch.full((1 << 14,), float(launch.rank + 1))
        out = hvd.allreduce(t, op=hvd.Sum, name="envcheck.known-answer")
        return dataclasses.replace(me, reduced=(float(out.min()), float(out.max())))
    except Exception as e:
        return dataclasses.replace(me, error=f"hvd.allreduce failed: {first_line(e)}")
    finally:
        hvd.shutdown()


def horovod_rank_to_dict(h: HorovodRank) -> dict[str, Any]:
    return dataclasses.asdict(h)


def horovod_rank_from_dict(d: dict[str, Any]) -> HorovodRank:
    names = {f.name for f in dataclasses.fields(HorovodRank)}
    known = {k: v for k, v in d.items() if k in names}
    known["reduced"] = tuple(known.get("reduced", ()))
    return HorovodRank(**known)


def _r(status: Status, message: str, node: str = "", fix: str = "") -> Result:
    return Result(CHECK, status, message, node=node, fix=fix, group="job")


def _ranks(ranks: list[int]) -> str:
    shown = ", ".join(str(r) for r in ranks[:8]) + (", ..." if len(ranks) > 8 else "")
    return f"rank{'s' if len(ranks) > 1 else ''} {shown}"


def _size_fix(launch: LaunchInfo, h: HorovodRank) -> str:
    if h.size == 1 and not h.mpi_built and launch.launcher != "horovod":
        return (f"this Horovod has no MPI controller (built with Gloo only), so under "
                f"{launch.launcher} every rank runs alone: launch with horovodrun "
                f"(horovodrun --gloo -np {launch.world_size} ...), or rebuild Horovod with "
                "HOROVOD_WITH_MPI=1 for mpirun / srun")
    return ("every rank must be one launch's: start all of them with one horovodrun (or one "
            "mpirun / srun for an MPI build), with no HOROVOD_* variables left from another")


def _mismatches(horovod: Sequence[HorovodRank], ranks: Sequence[RankFacts],
                world: int) -> dict[tuple[str, int, int], list[int]]:
    """(hvd.* call, what it said, what the launcher said) -> the ranks. A rank whose
    hvd.size() is wrong is named for that alone: its rank and local rank follow from it."""
    launcher = {r.rank: r for r in ranks}
    wrong: dict[tuple[str, int, int], list[int]] = {}
    for h in horovod:
        if h.error:
            continue
        mine = launcher.get(h.rank)
        pairs = [("hvd.size()", h.size, world)]
        if h.size == world:
            pairs += [("hvd.rank()", h.hvd_rank, h.rank),
                      ("hvd.local_rank()", h.local_rank, mine.local_rank if mine else -1),
                      ("hvd.local_size()", h.local_size, mine.local_world_size if mine else -1)]
        for name, got, want in pairs:
            if want >= 0 and got != want:
                wrong.setdefault((name, got, want), []).append(h.rank)
    return wrong


def judge_horovod(horovod: Sequence[HorovodRank], ranks: Sequence[RankFacts],
                  launch: LaunchInfo) -> list[Result]:
    """Horovod's world (hvd.size(), rank(), local_rank(), local_size()) is the launcher's."""
    if not horovod:
        return []
    launcher, out = launch.launcher, []
    failed: dict[str, list[HorovodRank]] = {}  # one line per error, however many ranks
    for h in horovod:
        if h.error:
            failed.setdefault(h.error, []).append(h)
    for error, hit in failed.items():
        hosts = ", ".join(sorted({h.host for h in hit}))
        out.append(_r(Status.FAIL, f"{_ranks([h.rank for h in hit])} on {hosts}: {error}",
                      node=", ".join(f"rank {h.rank}" for h in hit),
                      fix="run envcheck verify node in this environment: its horovod check "
                      "names what is wrong with the build"))
    by_rank = {h.rank: h for h in horovod}
    for (name, got, want), wrong in _mismatches(horovod, ranks, launch.world_size).items():
        fix = _size_fix(launch, by_rank[wrong[0]])
        said = ""
        if name == "hvd.size()":
            sums = ", ".join(f"{by_rank[r].reduced[0]:g} on rank {r}" for r in wrong[:4]
                             if len(by_rank[r].reduced) == 2)
            world = launch.world_size
            said = f"; its all-reduce summed {sums}, not {world * (world + 1) / 2:g}" if sums \
                else ""
        elif name == "hvd.local_rank()":
            fix = ("torch.cuda.set_device(hvd.local_rank()) puts these ranks on other GPUs "
                   "than the launcher gave them: " + fix)
        out.append(_r(Status.FAIL, f"{name} is {got} on {_ranks(wrong)}, but {launcher} says "
                      f"{want}{said}", node=", ".join(f"rank {r}" for r in wrong), fix=fix))
    if not out:
        h = horovod[0]
        out.append(_r(Status.PASS, f"Horovod {h.version} ({h.controller} controller): "
                      f"hvd.size() {h.size}, and every rank's hvd.rank(), local_rank(), "
                      f"local_size() as {launcher} set them"))
    return out
