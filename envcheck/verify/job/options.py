"""What `verify job` is asked to do, as one typed object (from flags or keyword arguments):
each field declared once, its flag, help and check beside it (envcheck/option.py).

Validated when built: the command line and envcheck.verify_job refuse the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck import values
from envcheck.flags import seconds
from envcheck.option import Option, declared
from envcheck.verify.expectations import ExpectOptions
from envcheck.verify.job.watchdog import BOUND


@dataclass(frozen=True)
@declared
class JobOptions:
    timeout: float = Option(  # each step: arriving, the group, each collective
        60.0, type=seconds, metavar="SECONDS", check=values.seconds,
        help="limit for each step: every rank arriving, the group forming, each collective; a "
        "rank missing that long is named, and a step that hangs ends every rank within "
        f"--timeout + {BOUND:g} s of its start, verdict and report included "
        "(default %(default)g)")
    horovod: bool = Option(  # Horovod's step even outside horovodrun (which turns it on)
        False, action="store_true", check=values.flag,
        help="also run Horovod's collective (hvd.init(), a known-answer hvd.allreduce) and check "
        "hvd.size(), rank(), local_rank() against the launcher: on by default under horovodrun, "
        "this asks for it under mpirun or srun (how Horovod's MPI builds start)")
    tensorflow: bool = Option(  # MultiWorkerMirroredStrategy across the ranks
        False, action="store_true", check=values.flag,
        help="also run TensorFlow's MultiWorkerMirroredStrategy across the ranks (TF_CONFIG "
        "from the ranks' addresses, one worker per rank) and check its cross-replica sum; each "
        "rank's TensorFlow runs in a child killed at --timeout")
    bench: bool = Option(  # time the all-reduce over every rank and between host pairs
        False, action="store_true", check=values.flag,
        help="also time the all-reduce (NCCL on GPUs, else gloo) over every rank and between "
        "each pair of hosts, as bus bandwidth against the links under them; the slowest pair "
        "of hosts is named when it falls short")
    strict: bool = Option(  # a warning exits 1 (default 0: the launch goes on)
        False, action="store_true", check=values.flag,
        help="a warning fails the launch: exit 1 on every rank (default: warnings exit 0, so "
        "torchrun, srun, mpirun and horovodrun carry on; the report still says warn)")
    debug: bool = False  # the top-level --debug: c10d's own log lines, a line from every rank
    expect: ExpectOptions = field(default_factory=ExpectOptions)

    def __post_init__(self) -> None:
        values.flag(self.debug, "debug")
