"""What rank 0 says of a run: the exit policy inside a launch, the results of a phase that
failed (who broke it), the report's environment; and another rank's one-result Report."""

from __future__ import annotations

import dataclasses
import time

from envcheck.errors import ExitCode
from envcheck.report import Report, Result, Status
from envcheck.text import first_line
from envcheck.verify.job import group as grp
from envcheck.verify.job import roll
from envcheck.verify.job.checks import JobFacts
from envcheck.verify.job.launch import LaunchInfo
from envcheck.verify.job.phase import PhaseFailed


def launch_verdict(report: Report, strict: bool) -> Report:
    """The exit policy of a verdict inside a launch: a WARN exits 0 (the launcher would count
    exit 1 a failed job: torchrun prints ChildFailedError and srun/mpirun end the step), unless
    `strict`; FAIL exits 2 and ERROR 3 as everywhere. The report still says warn."""
    if report.status == Status.WARN and not strict and report.code is None:
        return dataclasses.replace(report, code=ExitCode.OK)
    return report


def other_rank_report(rank: int, code: int, line: str) -> Report:
    """A rank other than 0: rank 0's verdict (or why there is none), one result, not shown
    (the command line prints and writes nothing for it)."""
    status = {ExitCode.OK: Status.PASS, ExitCode.WARN: Status.WARN,
              ExitCode.FAIL: Status.FAIL}.get(ExitCode(code), Status.ERROR)
    result = Result("job.ranks.verdict", status, line or f"rank 0 ended with exit {code}",
                    node=f"rank {rank}", group="job")
    return Report(title="envcheck verify job", code=ExitCode(code), results=(result,),
                  shown=False)


def missing_results(rv: grp.Rendezvous, missing: list[int], timeout: float) -> list[Result]:
    """Rank 0's roll call: the ranks refused, those that never arrived, the intruders."""
    results = [_err("job.ranks", why, node=f"rank {r}", fix="only the launch's own "
                    "processes may join: see envcheck docs security")
               for r, why in sorted(rv.refused.items())]
    results += [_err("job.ranks", f"{grp.describe(rv, r)} did not arrive within "
                     f"{timeout:g} s", node=f"rank {r}",
                     fix="look at that rank's output and host: it failed to start, "
                     "crashed, or cannot reach MASTER_ADDR:MASTER_PORT") for r in missing]
    results += [_err("job.ranks", why) for why in roll.intruders(rv)]
    return results


def diagnosis(rv: grp.Rendezvous, failed: PhaseFailed, until: float) -> list[Result]:
    """Rank 0: who broke the step, ranks whose heartbeat stopped, else those that never got
    to its phase (where the phase has a marker). A death is seen STALE seconds after it: wait
    for one that long at most, and not past `until` (time.monotonic(): the step's end)."""
    what = failed.step.what
    deadline = min(time.monotonic() + grp.STALE + 2 * grp.BEAT, until)
    silent = grp.silent_ranks(rv)
    while not silent and time.monotonic() < deadline:
        time.sleep(grp.BEAT / 2)
        silent = grp.silent_ranks(rv)
    marker = failed.step.phase.marker
    behind = [r for r in grp.not_reached(rv, marker) if r not in silent] if marker else []
    limit = f"; the step's limit: {failed.step.limit}"
    out = [_err("job.ranks", f"{grp.describe(rv, r)} stopped answering during {what} (its "
                f"heartbeat stopped: it died or hangs{limit})", node=f"rank {r}",
                fix="look at that rank's output and host (killed, out of memory, stuck in "
                "a driver call)") for r in silent]
    out += [_err("job.ranks", f"{grp.describe(rv, r)} never reached {what}{limit}",
                 node=f"rank {r}", fix="run again with --debug to see where it stopped")
            for r in behind]
    if not out:
        out.append(_err("job.ranks.step", f"{what} failed on rank 0: "
                        f"{first_line(failed.cause)}",
                        fix="run again with --debug; check the network between the hosts"))
    return out


def environment(launch: LaunchInfo, t0: float, job: JobFacts | None,
                tf_cluster: str) -> dict[str, str]:
    """The report's environment: the launch, and what the ranks ran."""
    env = {
        "launcher": launch.launcher,
        "world size": str(launch.world_size),
        "rendezvous": f"{launch.master_addr}:{launch.master_port} ({launch.port_source})"
        + (" via torchrun's agent store" if launch.agent_store else ""),
        "seconds": f"{time.monotonic() - t0:.2f}",
    }
    if job is not None and job.ranks:
        r0 = job.ranks[0]
        env["torch"] = r0.torch + (f" (CUDA {r0.torch_cuda})" if r0.torch_cuda else "")
    if tf_cluster:
        env["tensorflow cluster"] = tf_cluster
    if job is not None and job.horovod and job.horovod[0].version:
        h0 = job.horovod[0]
        env["horovod"] = h0.version + (f" ({h0.controller} controller)" if h0.controller
                                       else "")
    return env


def _err(check: str, message: str, node: str = "", fix: str = "") -> Result:
    return Result(check, Status.ERROR, message, node=node, fix=fix, group="job")

