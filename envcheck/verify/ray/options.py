"""What `verify ray` is asked to do, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck import values
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
        values.optional_text(self.address, "--address")
        values.optional_count(self.expect_nodes, "--expect-nodes")
        values.optional_count(self.train_workers, "--train-workers")
        values.flag(self.train, "--train")
