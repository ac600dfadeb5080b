"""What every process of a cluster reported in one facts round: the client, the scheduler and
the workers by address, and a Result for each that did not report. The judges in this folder
read it; verify/cluster/gather.py fills it."""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck.report import Result
from envcheck.verify.facts import NodeFacts


@dataclass(frozen=True)
class ClusterFacts:
    """What each process reported, and a Result for each that did not."""

    client: NodeFacts
    scheduler: NodeFacts | None
    workers: dict[str, NodeFacts] = field(default_factory=dict)  # address -> facts
    errors: tuple[Result, ...] = ()
    expected_workers: tuple[str, ...] = ()  # what the scheduler listed when the round began
    # worker address -> why it sent no facts: "timeout", "lost" or "raised"
    unreported: dict[str, str] = field(default_factory=dict)
    scheduler_address: str = ""
    seconds: float = 0.0
    # workers that sent no facts but answered distributed's plain `versions` op (the pipeline
    # asks those whose collector raised): label -> facts holding only their versions
    versions_only: dict[str, NodeFacts] = field(default_factory=dict)

    def by_process(self) -> dict[str, NodeFacts]:
        """label -> facts: "client", "scheduler" (when it answered), then worker addresses."""
        out = {"client": self.client}
        if self.scheduler is not None:
            out["scheduler"] = self.scheduler
        out.update(self.workers)
        return out
