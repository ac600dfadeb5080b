"""What one rank sees through torch: its launch, its CUDA device and whether a kernel runs there.

NodeFacts (envcheck/verify/facts/) say what the machine holds; these say what the rank got:
the device `torch.cuda` gives it, that device's UUID (to tell two ranks on one GPU apart), the
CUDA runtime and NCCL torch was built with, and whether a kernel launches on the device (the
"no kernel image is available for execution on the device" of a torch built without the GPU's
architecture shows here, not in NVML).
"""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass
from typing import Any

from envcheck.text import first_line
from envcheck.verify.job.launch import LaunchInfo, launcher_views


@dataclass(frozen=True)
class RankFacts:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    launcher: str
    host: str
    pid: int
    ip: str = ""  # the address this rank reaches the others from
    interface: str = ""  # ... and the interface that holds it
    torch: str = ""
    torch_cuda: str = ""  # torch.version.cuda: the CUDA runtime torch was built with
    torch_nccl: str = ""  # NCCL torch was built with ("" on CPU builds)
    cuda_available: bool = False
    device_count: int = 0  # CUDA devices this rank sees
    device: int = -1  # the one it computes on (-1: none)
    device_note: str = ""  # why that one, or why none
    device_uuid: str = ""  # "GPU-..." as NVML writes it
    device_name: str = ""
    capability: str = ""  # "9.0"
    arch_list: tuple[str, ...] = ()  # torch.cuda.get_arch_list(): what its kernels target
    kernel_error: str = ""  # a kernel on the device failed: first line of why
    cuda_visible_devices: str | None = None
    # (source, rank, local rank, world size) of every launcher's variables this rank has
    launcher_views: tuple[tuple[str, int, int, int], ...] = ()


def choose_device(count: int, local_rank: int) -> tuple[int, str]:
    """The device a rank computes on, as DDP scripts pick it, and why (-1: none).

    One visible device: that one (srun --gpus-per-task, a per-rank CUDA_VISIBLE_DEVICES).
    Several: cuda:LOCAL_RANK, torchrun's convention (`torch.cuda.set_device(local_rank)`).
    """
    if count <= 0:
        return -1, "torch sees no CUDA device"
    if count == 1:
        return 0, "its only visible device"
    if local_rank < count:
        return local_rank, f"cuda:{local_rank} of {count} visible (LOCAL_RANK)"
    return -1, f"LOCAL_RANK {local_rank} but only {count} devices visible"


def _uuid_text(raw: Any) -> str:
    text = str(raw)
    if text.startswith(("GPU-", "MIG-")):
        return text
    hexed = text.replace("-", "")
    if len(hexed) == 32:
        return f"GPU-{text}" if "-" in text else (
            f"GPU-{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"
        )
    return ""


def collect_rank_facts(launch: LaunchInfo, ip: str, interface: str) -> RankFacts:
    """This rank's facts; imports torch (the job needs it) and touches the chosen device."""
    import torch

    facts = RankFacts(
        rank=launch.rank,
        world_size=launch.world_size,
        local_rank=launch.local_rank,
        local_world_size=launch.local_world_size,
        node_rank=launch.node_rank,
        launcher=launch.launcher,
        host=socket.gethostname(),
        pid=os.getpid(),
        ip=ip,
        interface=interface,
        torch=torch.__version__,
        torch_cuda=torch.version.cuda or "",
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        launcher_views=launcher_views(os.environ),
    )
    if not torch.version.cuda:
        return dataclasses.replace(facts, device_note="torch is a CPU build")
    try:
        count = torch.cuda.device_count()
        available = torch.cuda.is_available()
    except Exception as e:  # a broken driver: count and availability raise
        return dataclasses.replace(facts, device_note=f"CUDA unusable: {first_line(e)}")
    nccl = ""
    try:
        v = torch.cuda.nccl.version()
        nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:  # no NCCL in this build
        pass
    device, note = choose_device(count if available else 0, launch.local_rank)
    facts = dataclasses.replace(
        facts, torch_nccl=nccl, cuda_available=available, device_count=count, device=device,
        device_note=note, arch_list=tuple(torch.cuda.get_arch_list()) if available else (),
    )
    return _device_facts(torch, facts) if device >= 0 else facts


def _device_facts(torch: Any, facts: RankFacts) -> RankFacts:
    try:
        torch.cuda.set_device(facts.device)
        props = torch.cuda.get_device_properties(facts.device)
        facts = dataclasses.replace(
            facts,
            device_uuid=_uuid_text(getattr(props, "uuid", "")),
            device_name=props.name,
            capability=f"{props.major}.{props.minor}",
        )
        # a real kernel (not a copy): a build without this GPU's architecture fails here
        x = torch.arange(1024, dtype=torch.float32, device=f"cuda:{facts.device}")
        got = float((x * 2.0 + 1.0).sum().item())
        if got != 1024.0 * 1023.0 + 1024.0:
            return dataclasses.replace(facts, kernel_error=f"wrong result {got}")
    except Exception as e:
        return dataclasses.replace(facts, kernel_error=first_line(e))
    return facts


def rank_facts_to_dict(f: RankFacts) -> dict[str, Any]:
    return dataclasses.asdict(f)


def rank_facts_from_dict(d: dict[str, Any]) -> RankFacts:
    names = {f.name for f in dataclasses.fields(RankFacts)}
    known = {k: v for k, v in d.items() if k in names}
    known["arch_list"] = tuple(known.get("arch_list", ()))
    known["launcher_views"] = tuple(tuple(v) for v in known.get("launcher_views", ()))
    return RankFacts(**known)
