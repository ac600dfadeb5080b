"""`verify ray` as options -> pipeline -> Report: connect (or start a local cluster), collect,
judge with the pure checks, disconnect (a local cluster is shut down with it)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from envcheck import values
from envcheck.report import Report, Table
from envcheck.verify.expect_options import expectations_from_options
from envcheck.verify.expectations import ExpectOptions
from envcheck.verify.ray.checks import run_ray_checks, skew_table
from envcheck.verify.ray.model import RayExpect, RayFacts

DEFAULT_TIMEOUT = 60.0
TITLE = "envcheck verify ray"


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


def verify_ray(opts: RayOptions) -> Report:
    from envcheck.verify.ray import collect

    exp = expectations_from_options(opts.expect)
    rexp = RayExpect(exp, opts.expect_nodes, frozenset(exp.skip))
    ray = collect.import_ray()
    t0 = time.monotonic()
    collect.connect(ray, opts.address, opts.timeout)
    try:
        kwargs = {"import_modules": list(exp.import_modules), "libraries": list(exp.libraries),
                  "probe_timeout": exp.probe_timeout}
        facts = collect.gather(ray, opts.address or "", opts.timeout, kwargs)
        if opts.train and "ray.train" not in rexp.skip:
            gpus = sum(int(n.gpus) for n in facts.nodes if n.alive)
            # one per GPU; on CPUs one per node, and two at least: one worker reduces nothing
            workers = opts.train_workers or gpus or max(2, sum(n.alive for n in facts.nodes))
            facts = dataclasses.replace(
                facts, train=collect.train_allreduce(ray, workers, gpus > 0, opts.timeout))
    finally:
        ray.shutdown()
    return _report(facts, rexp, time.monotonic() - t0)


def _report(facts: RayFacts, exp: RayExpect, seconds: float) -> Report:
    table, _ = skew_table(facts, tuple(p.name for p in exp.node.lock_packages))
    nodes = Table(
        title="Ray nodes",
        columns=("node", "address", "alive", "GPUs advertised", "GPUs on the node"),
        rows=tuple((n.label, n.ip, "yes" if n.alive else "no", f"{n.gpus:g}",
                    str(len(facts.facts[n.node_id].gpus)) if n.node_id in facts.facts else "?")
                   for n in facts.nodes),
    )
    return Report(
        title=TITLE,
        results=tuple(run_ray_checks(facts, exp)),
        tables=(nodes, table),
        environment={"ray": facts.ray_version, "address": facts.address or "local (started)",
                     "nodes": str(sum(n.alive for n in facts.nodes)),
                     "seconds": f"{seconds:.1f}"},
    )
