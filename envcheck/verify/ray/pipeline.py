"""`verify ray` as RayOptions (options.py) -> pipeline -> Report: connect (or start a local
cluster), collect, judge with the pure checks, disconnect (a local cluster is shut down with
it)."""

from __future__ import annotations

import dataclasses
import time

from envcheck.report import Report, Table
from envcheck.verify.expect_options import expectations_from_options
from envcheck.verify.ray.checks import run_ray_checks, skew_table
from envcheck.verify.ray.model import RayExpect, RayFacts
from envcheck.verify.ray.options import RayOptions

TITLE = "envcheck verify ray"


def verify_ray(opts: RayOptions) -> Report:
    from envcheck.verify.ray import collect

    exp = expectations_from_options(opts.expect)
    rexp = RayExpect(exp, opts.expect_nodes, frozenset(exp.skip))
    ray = collect.import_ray()
    t0 = time.monotonic()
    # shut down once connected, and for a local cluster always: a SIGTERM or Ctrl-C inside
    # ray.init too, or the processes it started would outlive the run (a remote ray.init
    # left running in its thread after the timeout is not shut down under it)
    connected = False
    try:
        collect.connect(ray, opts.address, opts.timeout)
        connected = True
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
        if connected or opts.address is None:
            collect.shutdown(ray, local=opts.address is None)
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
