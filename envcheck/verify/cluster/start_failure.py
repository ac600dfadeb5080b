"""verify cluster's embedded cluster did not start: when this node's own checks say why (NVML
does not start, the driver and library disagree, no GPU where one is expected), the report is
those checks and the start failure, and the exit is a failed check's (2), not "no scheduler"
(7). When the node's checks find nothing wrong, the start failure stays what it was."""

from __future__ import annotations

import dataclasses

from envcheck.errors import Unreachable
from envcheck.report import Report, Result, Status
from envcheck.verify.cluster.options import ClusterOptions


def node_caused_start_failure(options: ClusterOptions, error: Unreachable) -> Report | None:
    """A Report judging this node, led by the start failure, when the node's checks fail;
    None when they do not (the caller raises `error`)."""
    from envcheck.verify.node.options import NodeOptions
    from envcheck.verify.node.pipeline import verify_node

    node = verify_node(NodeOptions(expect=options.expect, plugins=options.plugins))
    failed = [r for r in node.results if r.status in (Status.FAIL, Status.ERROR)]
    if not failed:
        return None
    causes = ", ".join(sorted({r.check for r in failed}))
    lead = Result(
        "cluster",
        Status.FAIL,
        f"{error.message}; this node's own checks fail ({causes}): the cluster cannot start "
        "on it until they pass",
        node=failed[0].node,
        fix="fix what the failing node checks below say, then run verify cluster again "
        "(envcheck verify node judges the same node alone)",
        group="cluster",
    )
    results = (lead, *(dataclasses.replace(r, group=r.group or "node") for r in node.results))
    return Report(title="envcheck verify cluster", results=results, measurements=node.measurements,
                  environment={**node.environment, "cluster": "embedded: did not start"})
