"""Dense peak matrix-multiply throughput per GPU model, from NVIDIA's datasheets.

TFLOPS, dense (datasheets print tensor numbers "with sparsity": those are halved here).
fp32: plain FP32 on CUDA cores, what torch's float32 matmul runs when TF32 is off (torch's
default since 1.12: torch.backends.cuda.matmul.allow_tf32 is False), which the GEMM check
keeps. half: BF16 tensor cores with FP32 accumulate (FP16 where the GPU has no BF16: Volta,
Turing), what torch's bfloat16 / float16 matmul runs. GeForce cards run FP32-accumulate at half
their FP16-accumulate rate; their rows give the FP32-accumulate number. None: no tensor cores
(Pascal), the half-precision rate is not judged.

Rows are matched against NVML's name in order (word boundaries: "A10" is not "A100").
"""

from __future__ import annotations

import re

from envcheck.record import frozen


@frozen
class Peak:
    model: str
    pattern: str  # regular expression on NVML's name, case-insensitive
    fp32: float
    half: float | None
    half_dtype: str  # "bfloat16" or "float16": the tensor type the GPU has
    source: str


_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_GA102 = "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf"
_TURING = "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf"
_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"

PEAKS: tuple[Peak, ...] = (
    Peak("H200 NVL", r"\bH200 NVL\b", 60.0, 835.5, "bfloat16", _H200),
    Peak("H200 SXM", r"\bH200\b", 67.0, 989.5, "bfloat16", _H200),
    Peak("H100 NVL", r"\bH100 NVL\b", 60.0, 835.5, "bfloat16", _H100),
    Peak("H100 PCIe", r"\bH100 PCIe\b", 51.0, 756.5, "bfloat16", _H100),
    # NVML names the SXM5 part "NVIDIA H100 80GB HBM3"
    Peak("H100 SXM", r"\bH100\b", 67.0, 989.5, "bfloat16", _H100),
    Peak("A100 PCIe", r"\bA100\b.*\bPCIe\b", 19.5, 312.0, "bfloat16", _A100),
    Peak("A100 SXM", r"\bA100\b", 19.5, 312.0, "bfloat16", _A100),
    Peak("V100S PCIe", r"\bV100S\b", 16.4, 130.0, "float16", _V100),
    Peak("V100 PCIe", r"\bV100\b.*\bPCIe\b", 14.0, 112.0, "float16", _V100),
    Peak("V100 SXM2", r"\bV100\b", 15.7, 125.0, "float16", _V100),
    Peak("L40S", r"\bL40S\b", 91.6, 362.05, "bfloat16",
         "https://www.nvidia.com/en-us/data-center/l40s/"),
    Peak("L4", r"\bL4\b", 30.3, 121.0, "bfloat16",
         "https://www.nvidia.com/en-us/data-center/l4/"),
    Peak("A10", r"\bA10\b", 31.2, 125.0, "bfloat16",
         "https://www.nvidia.com/en-us/data-center/products/a10-gpu/"),
    Peak("RTX 4090", r"\bRTX 4090\b", 82.6, 165.2, "bfloat16", _ADA),
    Peak("RTX 3090", r"\bRTX 3090\b(?! Ti)", 35.6, 71.0, "bfloat16", _GA102),
    Peak("RTX 2080 Ti", r"\bRTX 2080 Ti\b", 13.4, 53.8, "float16", _TURING),
    Peak("TITAN Xp", r"\bTITAN Xp\b", 12.1, None, "float16",
         "https://www.nvidia.com/en-us/titan/titan-xp/"),
)

# A healthy GPU's large GEMM reaches 60-90 % of the datasheet's boost-clock peak (an H100 80GB
# HBM3 here: float32 77 %, bfloat16 68 %, 8192^3, torch 2.11, 2026-11-23); below these
# fractions it is slow for a reason (clocks held down by power, heat or an application clock
# setting, a degraded part, another process on it).
FAIL_FRACTION = 0.4
WARN_FRACTION = 0.55


def peak_for(name: str) -> Peak | None:
    """The first row whose pattern matches NVML's name, or None for a model not in the table."""
    for peak in PEAKS:
        if re.search(peak.pattern, name, re.IGNORECASE):
            return peak
    return None
