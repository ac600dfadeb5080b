"""What `verify ray` is asked to do, as one typed object (from flags or keyword arguments):
each field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck import values
from envcheck.flags import seconds
from envcheck.option import Option, declared
from envcheck.verify.expectations import ExpectOptions


@dataclass(frozen=True)
@declared
class RayOptions:
    address: str | None = Option(  # None: start a local Ray cluster and shut it down after
        positional=True, nargs="?", check=values.optional_text,
        help="the cluster, as `ray start --address` takes it (host:port of the head's GCS) or "
        "ray://host:port (Ray Client); none: RAY_ADDRESS where it is set, as Ray's own tools "
        "read it, else start a local Ray cluster and shut it down after")
    timeout: float = Option(  # connecting; collecting; the Train run (each)
        60.0, type=seconds, metavar="SECONDS", check=values.seconds,
        help="limit for connecting, for collecting every node's facts, and for the --train run "
        "(default %(default)g)")
    expect_nodes: int | None = Option(
        type=int, metavar="N", check=values.optional_count,
        help="fail unless exactly N nodes are alive (names the shortfall)")
    train: bool = Option(  # also run a Ray Train TorchTrainer all-reduce
        False, action="store_true", check=values.flag,
        help="also run a Ray Train TorchTrainer all-reduce (gloo on CPU, NCCL on GPUs) and "
        "check its known answer; costs ~15 s")
    train_workers: int | None = Option(  # default: one per GPU, else one per node (2 at least)
        type=int, metavar="N", check=values.optional_count,
        help="Train workers (default: one per GPU, else one per node, 2 at least; half a CPU "
        "each)")
    expect: ExpectOptions = field(default_factory=ExpectOptions)
