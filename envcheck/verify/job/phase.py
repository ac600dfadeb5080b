"""The phases of one rank's run of verify job, in order, and how a phase ends other than with
its value (PhaseFailed).

A phase holds one or more steps (Step: the phase, what a message calls the step, the limit it
runs under). The watchdog is armed with the current Step; a phase with a marker is set in the
store as each rank reaches it (group.Rendezvous.reached), so rank 0 can name a rank that never
got there.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Phase(enum.Enum):
    """Every rank's phases in order (HOROVOD, TENSORFLOW, NCCL, BENCH where they apply);
    the value is how a message names the phase."""

    RENDEZVOUS = "reaching rank 0's rendezvous"
    ARRIVE = "answering the roll call"
    ROLL_CALL = "the roll call"
    GROUP = "forming the gloo group"
    COLLECT = "collecting this rank's facts"
    GATHER = "gathering every rank's facts"
    ALLREDUCE = "the gloo all-reduce"
    HOROVOD = "Horovod's step"
    TENSORFLOW = "TensorFlow's step"
    NCCL = "the nccl all-reduce"
    BENCH = "timing the all-reduce (--bench)"
    VERDICT = "the verdict"

    @property
    def marker(self) -> str:
        """The store's name for this phase where each rank marks reaching it ("" if none)."""
        return {Phase.GATHER: "gather", Phase.ALLREDUCE: "allreduce"}.get(self, "")


@dataclass(frozen=True)
class Step:
    """One bounded step of a phase: ``what`` a message calls it (the phase's name unless
    said), ``limit`` the limit it runs under as a message states it ("--timeout 60 s")."""

    phase: Phase
    what: str = ""
    limit: str = ""

    def __post_init__(self) -> None:
        if not self.what:
            object.__setattr__(self, "what", self.phase.value)

    def __str__(self) -> str:
        return self.what


@dataclass(eq=False)  # an exception compares and hashes as itself
class PhaseFailed(Exception):
    """A phase's one way out other than its value. Rank 0 reports ``results`` where given,
    else diagnoses ``cause`` (a collective or store call that raised: who broke the step).
    A rank other than 0 ends with the line ``alone`` where given (no verdict to wait for),
    else waits for rank 0's verdict: a whole --timeout where ``fresh`` (rank 0 is well and
    judging), else within the failed step's limit (rank 0 gave up on the same step)."""

    step: Step
    cause: BaseException | None = None
    results: tuple[Any, ...] = field(default=())
    alone: str = ""
    fresh: bool = False

    def __str__(self) -> str:
        return f"{self.step.what}: {self.cause}" if self.cause else self.step.what
