"""The node checks: pure functions (facts, expectations) -> list[Result], run in order.

run_node_checks runs the built-in checks, then plugin checks (entry-point group
`envcheck.checks`), through verify/runner.py: a check that raises becomes an `error` result
naming it; the run goes on.
"""

from __future__ import annotations

from envcheck.record import replace
from envcheck.report import Result
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts
from envcheck.verify.runner import run_checks

from .env.horovod import check_horovod
from .env.imports import check_imports
from .env.libraries import check_libraries
from .env.packages import check_packages
from .env.tensorflow import check_tensorflow
from .gpu.archs import check_compiled_arch
from .gpu.busy import check_busy
from .gpu.clocks import check_clocks
from .gpu.driver import check_driver
from .gpu.ecc import check_ecc
from .gpu.gemm import check_gemm
from .gpu.gpu_modes import check_compute_mode, check_mig, check_persistence
from .gpu.gpus import check_compute_capability, check_gpus
from .gpu.nvlink import check_nvlink
from .gpu.pcie import check_pcie
from .gpu.visible import check_visible
from .gpu.xid import check_xid
from .host.glibc import check_glibc
from .host.host_limits import check_host_limits
from .host.infiniband import check_infiniband, check_peermem
from .host.interfaces import check_net_devices
from .host.ucx import check_ucx

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Callable, Collection, List

    Check = Callable[[NodeFacts, Expectations], List[Result]]

# check id -> function; the id is what results carry and what docs/verify-node.md lists
BUILTIN_CHECKS: dict[str, Check] = {
    "driver": check_driver,
    "gpus": check_gpus,
    "cuda-visible-devices": check_visible,
    "busy-gpus": check_busy,
    "compute-capability": check_compute_capability,
    "compiled-arch": check_compiled_arch,
    "gemm": check_gemm,
    "glibc": check_glibc,
    "packages": check_packages,
    "imports": check_imports,
    "libraries": check_libraries,
    "horovod": check_horovod,
    "tensorflow": check_tensorflow,
    "ucx": check_ucx,
    # health: what dcgmi diag -r 1, gcm and NHC look at
    "ecc": check_ecc,
    "xid": check_xid,
    "pcie": check_pcie,
    "nvlink": check_nvlink,
    "clocks": check_clocks,
    "persistence": check_persistence,
    "mig": check_mig,
    "compute-mode": check_compute_mode,
    "host-limits": check_host_limits,
    "net-devices": check_net_devices,
    "infiniband": check_infiniband,
    "peermem": check_peermem,
}


def run_node_checks(
    facts: NodeFacts,
    exp: Expectations,
    node: str,
    *,
    plugins: bool = True,
    skip: Collection[str] = (),
    say_skipped: bool = True,
) -> list[Result]:
    """Every built-in check, then every plugin check, on one node's facts, through the runner:
    those in `skip` do not run and are said skipped (say_skipped=False: the caller says so
    once, as verify cluster does for its workers)."""
    results = run_checks(BUILTIN_CHECKS, facts, exp, skip, group="node", node=node,
                         say_skipped=say_skipped)
    if plugins:
        from envcheck.verify.plugins import load_plugins

        loaded, errors = load_plugins()
        results.extend(replace(r, node=node) for r in errors)
        results += run_checks({p.name: p.check for p in loaded}, facts, exp, skip,
                              group="plugins", node=node, say_skipped=say_skipped)
    return results
