"""What `verify ray` learns of a Ray cluster: frozen values, no Ray objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts


@dataclass(frozen=True)
class RayNode:
    """One node as the GCS lists it (``ray.nodes()``)."""

    node_id: str
    ip: str
    hostname: str
    alive: bool
    gpus: float  # the GPU resource the node advertises (ray start --num-gpus, or detected)
    death: str = ""  # why the GCS lists it dead

    @property
    def label(self) -> str:
        """How reports name the node: its host and the start of its id (hosts may repeat)."""
        return f"{self.hostname or self.ip} ({self.node_id[:8]})"


@dataclass(frozen=True)
class GpuTask:
    """What one ``num_gpus=1`` task saw: the GPU Ray gave it and the GPU CUDA would use."""

    node_id: str
    gpu_ids: tuple[str, ...]  # ray.get_gpu_ids()
    visible: str | None  # CUDA_VISIBLE_DEVICES as Ray set it (None: unset)
    uuids: tuple[str, ...]  # the GPUs that setting leaves visible, by UUID
    node_gpus: int  # the GPUs the node's driver lists
    problem: str = ""  # why CUDA_VISIBLE_DEVICES hides GPUs, from the facts collector
    error: str = ""  # why the task did not report


@dataclass(frozen=True)
class TrainRun:
    """A Ray Train TorchTrainer all-reduce: each worker r adds r+1; all must hold the sum."""

    workers: int
    backend: str
    expected: float
    got: tuple[float, ...] = ()  # each worker's smallest and largest element; () if any missing
    seconds: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class RayFacts:
    address: str  # "" for the local cluster envcheck started
    ray_version: str  # the client's
    nodes: tuple[RayNode, ...]
    facts: Mapping[str, NodeFacts] = field(default_factory=dict)  # node id -> its facts
    fact_errors: Mapping[str, str] = field(default_factory=dict)  # node id -> why none
    client: NodeFacts | None = None  # the process that runs verify ray
    gpu_tasks: tuple[GpuTask, ...] = ()
    train: TrainRun | None = None

    def node(self, node_id: str) -> RayNode | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    def label(self, node_id: str) -> str:
        n = self.node(node_id)
        return n.label if n else node_id[:8]


@dataclass(frozen=True)
class RayExpect:
    """What the checks compare with: verify node's expectations and the node count."""

    node: Expectations = field(default_factory=Expectations)
    nodes: int | None = None  # --expect-nodes
    skip: frozenset = frozenset()
