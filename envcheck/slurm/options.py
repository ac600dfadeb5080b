"""What `envcheck slurm script` is asked for, as one typed object (from flags or keyword
arguments), validated when built: what cannot be written into the script safely is refused in
one line naming the option. Everything else is quoted by script.py and lands as inert text."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.inputs import check_regular

DEFAULT_WAIT = 300  # seconds for the scheduler and every worker to come up
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
_DASK_ONLY = {"protocol": "tcp", "interface": "", "dashboard": "127.0.0.1:0", "wait": DEFAULT_WAIT,
              "smoke": "all"}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class Options:
    """Built from flags or keywords; once built, valid and ready to render: the paths are
    absolute, job_name and (with submit) shared_dir hold their defaults."""

    nodes: int = 1
    gpus_per_node: int = 1
    cpus_per_gpu: int = 1
    partition: str = ""
    time: str = ""
    account: str = ""
    job_name: str = ""  # "" = envcheck-dask, with job envcheck-job
    env: str = ""  # prefix to activate ("" = the submitting shell's environment)
    lock: str = ""  # lock the workers' packages must match (verify --lock)
    protocol: str = "tcp"
    interface: str = ""  # network interface for scheduler and workers (ib0, eth0)
    dashboard: str = "127.0.0.1:0"
    shared_dir: str = ""  # "" = $SLURM_SUBMIT_DIR/.envcheck (with submit: ./.envcheck)
    wait: int = DEFAULT_WAIT
    verify_timeout: float = 60.0
    smoke: str = "all"
    then: str = ""
    then_on: str = "warn"
    sbatch: tuple[str, ...] = ()  # further "#SBATCH" lines, verbatim sbatch options
    job: bool = False  # no Dask cluster: every task runs `envcheck verify job` (srun's ranks)
    submit: bool = False  # submit with sbatch, wait, print the job's verify report
    submit_timeout: float | None = None  # with submit: cancel the job after this long
    slurm_version: str = ""  # the target Slurm ("" = `sinfo --version` here, else 17.11)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sbatch", values.words(self.sbatch, "--sbatch"))
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
        given = [k for k, default in _DASK_ONLY.items() if getattr(o, k) != default]
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
