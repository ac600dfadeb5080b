"""What `envcheck slurm script` is asked for, as one typed object (from flags or keyword
arguments), validated when built: what cannot be written into the script safely is refused in
one line naming the option. Everything else is quoted by script.py and lands as inert text."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.flags import seconds
from envcheck.inputs import check_regular
from envcheck.option import Option, declared

VERDICTS = {"pass": (0,), "warn": (0, 1)}  # --then-on: verify exit codes that let --then run

_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$")
# Upper bounds: past them the number is a typo, and it would reach bash arithmetic (64-bit) and
# Slurm before anything said so. Documented in docs/slurm.md.
BOUNDS = {"nodes": 100_000, "gpus_per_node": 64, "cpus_per_gpu": 1024, "wait": 7 * 86400,
          "verify_timeout": 86400.0, "submit_timeout": 30 * 86400.0}
_WHOLE = ("nodes", "gpus_per_node", "cpus_per_gpu", "wait")
# Values written into #SBATCH lines: sbatch reads them with its own parser, in which one of
# these words anywhere on a line splits the job into heterogeneous components.
_HETJOB = re.compile(r"hetjob|packjob", re.IGNORECASE)
_SBATCH_VALUES = ("partition", "account", "job_name", "time")
_OTHER_VALUES = ("env", "lock", "interface", "dashboard", "shared_dir", "smoke")
# options that shape the Dask cluster only: meaningless (so refused) with job
_DASK_ONLY = ("protocol", "interface", "dashboard", "wait", "smoke")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _count(text: str) -> int:
    """argparse's type for a whole number."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


@dataclass(frozen=True)
@declared
class Options:
    """Built from flags or keywords; once built, valid and ready to render: the paths are
    absolute, job_name and (with submit) shared_dir hold their defaults. Each field's flag and
    help are declared beside it (envcheck/option.py); the checks are the _check_* below."""

    nodes: int = Option(1, type=_count, metavar="N", help="nodes (default 1)")
    gpus_per_node: int = Option(1, type=_count, metavar="G", help="GPUs and workers per node")
    cpus_per_gpu: int = Option(1, type=_count, metavar="C", help="CPUs (threads) per worker")
    partition: str = Option("", metavar="P")
    time: str = Option("", metavar="T", help="time limit, as sbatch takes it (1:00:00)")
    account: str = Option("", metavar="A")
    job_name: str = Option(  # "" = envcheck-dask, with job envcheck-job
        "", metavar="NAME", help="sbatch --job-name (default envcheck-dask, with --job "
        "envcheck-job)")
    env: str = Option(  # prefix to activate ("" = the submitting shell's environment)
        "", exclusive="env", metavar="PREFIX",
        help="environment to activate (venv or conda prefix)")
    lock: str = Option(  # lock the workers' packages must match (verify --lock)
        "", exclusive="env", metavar="LOCK",
        help="the workers' packages must match this lock (verify --lock); the environment is "
        "the submitting shell's")
    protocol: str = Option("tcp", choices=("tcp", "ucx"))
    interface: str = Option(  # network interface for scheduler and workers (ib0, eth0)
        "", metavar="IF", help="network interface for Dask (ib0, eth0)")
    dashboard: str = Option(
        "127.0.0.1:0", metavar="ADDR",
        help="scheduler dashboard address (default 127.0.0.1:0: not reachable from outside)")
    shared_dir: str = Option(  # "" = $SLURM_SUBMIT_DIR/.envcheck (with submit: ./.envcheck)
        "", metavar="DIR", help="where the scheduler file and reports go; every node must see "
        "it (default: $SLURM_SUBMIT_DIR/.envcheck)")
    wait: int = Option(
        300, type=_count, metavar="S",
        help="deadline for the scheduler and all workers to come up (default %(default)s)")
    verify_timeout: float = Option(60.0, type=seconds, metavar="S",
                                   help="verify cluster --timeout (default %(default)g)")
    smoke: str = Option("all", metavar="LIST", help="verify cluster --smoke (default all)")
    then: str = Option("", metavar="CMD", help="command to run when the verdict allows it")
    then_on: str = Option(
        "warn", choices=tuple(VERDICTS),
        help="run --then when verify passes ('pass') or passes with warnings ('warn', default)")
    sbatch: tuple[str, ...] = Option(  # further "#SBATCH" lines, verbatim sbatch options
        (), action="append", metavar="OPT", check=values.words,
        help="extra #SBATCH option, e.g. --sbatch=--constraint=a100 (repeatable)")
    job: bool = Option(  # no Dask cluster: every task runs `envcheck verify job` (srun's ranks)
        False, action="store_true",
        help="no Dask cluster: every task runs `envcheck verify job` (srun's own ranks, one GPU "
        "each), then --then when the verdict allows it")
    slurm_version: str = Option(  # the target Slurm ("" = `sinfo --version` here, else 17.11)
        "", metavar="X.Y",
        help="the target Slurm (17.11+): srun --overlap from 20.11, --gpus-per-task from 19.05 "
        "(default: `sinfo --version` here, else 17.11, whose script runs on every later one)")
    submit: bool = Option(  # submit with sbatch, wait, print the job's verify report
        False, action="store_true",
        help="submit with sbatch, wait for the job, print its verify report; exit code is "
        "verify's")
    submit_timeout: float | None = Option(  # with submit: cancel the job after this long
        type=seconds, metavar="S",
        help="with --submit: cancel the job if it has not ended after S seconds")

    def __post_init__(self) -> None:
        _check_types(self)
        _check_values(self)
        _check_combinations(self)
        shared = self.shared_dir or (".envcheck" if self.submit else "")
        settled = {
            "job_name": self.job_name or ("envcheck-job" if self.job else "envcheck-dask"),
            "env": os.path.abspath(self.env) if self.env else "",
            "lock": os.path.abspath(self.lock) if self.lock else "",
            "shared_dir": os.path.abspath(shared) if shared else "",
        }
        for name, value in settled.items():
            object.__setattr__(self, name, value)

    @property
    def workers(self) -> int:
        return self.nodes * self.gpus_per_node

    def target_slurm(self) -> tuple[int, int]:
        """The Slurm release the script is written for (envcheck/slurm/version.py)."""
        from envcheck.slurm import version

        if self.slurm_version:
            return version.parse(self.slurm_version)
        return version.detect() or version.OLDEST


def _check_types(o: Options) -> None:
    for name in _WHOLE:
        value = getattr(o, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadInput(f"{_flag(name)} must be a whole number, not {value!r}")
    for name in ("verify_timeout", "submit_timeout"):
        value = getattr(o, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise BadInput(f"{_flag(name)} must be a number of seconds, not {value!r}")
    for name in (*_SBATCH_VALUES, *_OTHER_VALUES, "protocol", "then_on"):
        values.text(getattr(o, name), _flag(name))
    if not isinstance(o.then, str):
        raise BadInput(f"--then must be a string, not {o.then!r}")
    bad = values.control_char(o.then, "\n\t")
    if bad:
        raise BadInput(f"--then: control character {bad}: not allowed")
    for name in ("job", "submit"):
        values.flag(getattr(o, name), _flag(name))


def _check_values(o: Options) -> None:
    """Numbers within bounds (nan is not), no control characters (a newline would start a new
    #SBATCH or shell line; --then, a command by design, may hold newlines and tabs), no hetjob
    words in #SBATCH values."""
    for name, top in BOUNDS.items():
        value = getattr(o, name)
        if value is not None and not (0 < value <= top):
            raise BadInput(f"{_flag(name)} {value:g}: must be more than 0 and at most {top:g}")
    sbatch = [(_flag(n), getattr(o, n)) for n in _SBATCH_VALUES]
    sbatch += [("--sbatch", v) for v in o.sbatch]
    for flag, value in sbatch:
        if _HETJOB.search(value):
            raise BadInput(f"{flag} {value!r}: sbatch reads 'hetjob'/'packjob' in an #SBATCH "
                           "line as a job separator: not allowed")
    values.choice(o.protocol, "--protocol", ("tcp", "ucx"))
    values.choice(o.then_on, "--then-on", tuple(VERDICTS))
    if o.time and not _TIME.match(o.time):
        raise BadInput(f"--time {o.time!r}: use minutes, H:MM:SS or D-HH:MM:SS")
    for opt in o.sbatch:
        if not opt.startswith("-"):
            raise BadInput(f"--sbatch {opt!r}: give an sbatch option, e.g. --constraint=a100")


def _check_combinations(o: Options) -> None:
    if o.job:
        given = [k for k in _DASK_ONLY if getattr(o, k) != Options.__options__[k].default]
        if given:
            raise BadInput(f"{', '.join(map(_flag, given))}: shape the Dask cluster, and --job "
                           "starts none")
    if o.env and o.lock:
        raise BadInput("give --env or --lock, not both")
    if o.submit_timeout is not None and not o.submit:
        raise BadInput("--submit-timeout needs --submit")
    if o.env and not Path(o.env, "bin").is_dir():
        raise BadInput(f"--env {o.env}: no bin/ there: not an environment prefix")
    if o.lock:  # verify reads it in the job; a directory or FIFO is named now
        check_regular(o.lock, "--lock", 512 << 20)
