"""Which GPUs CUDA_VISIBLE_DEVICES leaves to CUDA, as the CUDA runtime reads it."""

from __future__ import annotations

from .model import Gpu, ProcGpu

# What CUDA reads for "no device at all" (set by SLURM/containers when no GPU was granted).
_NO_DEVICE_VALUES = ("", "-1", "NoDevFiles", "none")


def resolve_visible_devices(
    value: str | None, gpus: tuple[Gpu, ...]
) -> tuple[tuple[str, ...], str]:
    """The GPU UUIDs CUDA will expose for a CUDA_VISIBLE_DEVICES value, and why any are lost.

    Mirrors the CUDA runtime: entries are indices or (prefixes of) UUIDs; parsing stops at the
    first entry that names no GPU, dropping it and all after it; a GPU named twice makes CUDA
    expose no GPU at all (on 2x H200, CUDA_VISIBLE_DEVICES=0,0 left torch with 0 GPUs).
    Indices are taken in PCI bus order (NVML's order), which is what CUDA uses with
    CUDA_DEVICE_ORDER=PCI_BUS_ID and, on a node of identical GPUs, also by default.
    """
    if value is None:
        return tuple(g.uuid for g in gpus), ""
    if value.strip() in _NO_DEVICE_VALUES:
        return (), f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU"
    chosen: list[str] = []
    tokens = value.split(",")
    for pos, raw in enumerate(tokens):
        token = raw.strip()
        uuid, why = _match_device(token, gpus)
        if not uuid:
            dropped = "it" if pos == len(tokens) - 1 else "it and every entry after it"
            return tuple(chosen), f"entry {token!r} {why}: CUDA ignores {dropped}"
        if uuid in chosen:
            return (), f"entry {token!r} names a GPU already listed: CUDA then exposes no GPU"
        chosen.append(uuid)
    return tuple(chosen), ""


def _match_device(token: str, gpus: tuple[Gpu, ...]) -> tuple[str, str]:
    if token.isdigit():
        i = int(token)
        if i < len(gpus):
            return gpus[i].uuid, ""
        have = f"GPUs 0-{len(gpus) - 1}" if gpus else "no GPU"
        return "", f"is not a GPU index (this node has {have})"
    if token.startswith("MIG-"):
        # MIG instances are not enumerated here; trust the token rather than drop it
        return token, ""
    if token.startswith("GPU-"):
        hits = [g.uuid for g in gpus if g.uuid.startswith(token)]
        if len(hits) == 1:
            return hits[0], ""
        return "", "matches no GPU UUID" if not hits else f"matches {len(hits)} GPU UUIDs"
    return "", "is neither an index nor a GPU-/MIG- UUID"


def visible_gpu_count(
    value: str | None, visible: tuple[str, ...], nvml_gpus: tuple[Gpu, ...],
    kernel_gpus: tuple[ProcGpu, ...],
) -> int:
    """How many GPUs this process should see: NVML's visible ones where NVML answers, else the
    kernel driver's (/proc, without NVML) as CUDA_VISIBLE_DEVICES leaves them."""
    if nvml_gpus:
        return len(visible)
    usable = sorted((g for g in kernel_gpus if not g.excluded), key=lambda g: g.pci_bus_id)
    # the kernel driver's GPUs in PCI bus order: NVML's (and CUDA's by-index) order
    gpus = tuple(Gpu(i, g.uuid, g.model, 0, 0, (0, 0), g.pci_bus_id)
                 for i, g in enumerate(usable))
    return len(resolve_visible_devices(value, gpus)[0])
