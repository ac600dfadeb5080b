"""What `verify ray` is asked to do, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck import values
from envcheck.errors import BadInput
from envcheck.verify.expectations import ExpectOptions

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None  # None: start a local Ray cluster and shut it down after
    timeout: float = DEFAULT_TIMEOUT  # connecting; collecting; the Train run (each)
    expect_nodes: int | None = None
    train: bool = False  # also run a Ray Train TorchTrainer all-reduce
    train_workers: int | None = None  # default: one per GPU, else one per node (2 at least)
    expect: ExpectOptions = field(default_factory=ExpectOptions)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeout", values.seconds(self.timeout, "--timeout"))
        if self.expect_nodes is not None and self.expect_nodes < 1:
            raise BadInput(f"--expect-nodes must be 1 or more, not {self.expect_nodes}")
        if self.train_workers is not None and self.train_workers < 1:
            raise BadInput(f"--train-workers must be 1 or more, not {self.train_workers}")
