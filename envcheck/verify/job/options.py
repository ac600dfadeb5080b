"""What `verify job` is asked to do, as one typed object (from flags or keyword arguments).

Validated when built: the command line and envcheck.verify_job refuse the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck import values
from envcheck.verify.expectations import ExpectOptions

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class JobOptions:
    timeout: float = DEFAULT_TIMEOUT  # each step: arriving, the group, each collective
    horovod: bool = False  # Horovod's step even outside horovodrun (which turns it on)
    tensorflow: bool = False  # MultiWorkerMirroredStrategy across the ranks
    bench: bool = False  # time the all-reduce over every rank and between host pairs
    debug: bool = False  # c10d's own log lines, and a line from every rank
    strict: bool = False  # a warning exits 1 (default 0: the launch goes on)
    expect: ExpectOptions = field(default_factory=ExpectOptions)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeout", values.seconds(self.timeout, "--timeout"))
        for name in ("horovod", "tensorflow", "bench", "debug", "strict"):
            values.flag(getattr(self, name), name)
