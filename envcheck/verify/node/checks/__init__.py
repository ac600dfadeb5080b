"""The node checks: pure functions (facts, expectations) -> list[Result], run in order.

run_node_checks runs the built-in checks, then plugin checks (entry-point group
`envcheck.checks`). A check that raises becomes an `error` result naming it; the run goes on.
"""

from __future__ import annotations

from envcheck.record import replace
from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

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


def run_check(
    check_id: str, fn: Callable, facts: object, exp: Expectations, node: str | None, group: str
) -> list[Result]:
    """One check, made safe: its results get node (None: each keeps its own) and group; an
    exception becomes an error. Node checks and cluster checks both run through here."""
    try:
        results = fn(facts, exp)
        if not isinstance(results, (list, tuple)) or not all(
            isinstance(r, Result) for r in results
        ):
            raise TypeError(f"returned {type(results).__name__}, not a list of Result")
    except Exception as e:
        import traceback  # only for a check that raised

        where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
        return [
            Result(
                check_id,
                Status.ERROR,
                f"check {check_id} raised {type(e).__name__}: {e}{at}",
                node=node or "",
                fix="a bug in the check: report it with this message",
                group=group,
            )
        ]
    return [
        replace(
            r, check=r.check or check_id, node=r.node if node is None else node,
            group=r.group or group,
        )
        for r in results
    ]


def run_node_checks(
    facts: NodeFacts,
    exp: Expectations,
    node: str,
    *,
    plugins: bool = True,
    skip: Collection[str] = (),
) -> list[Result]:
    """Every built-in check, then every plugin check, on one node's facts; those in `skip` do
    not run (the caller reports them once: skipped_results)."""
    results: list[Result] = []
    for check_id, fn in BUILTIN_CHECKS.items():
        if check_id not in skip:
            results.extend(run_check(check_id, fn, facts, exp, node, "node"))
    if plugins:
        from envcheck.verify.plugins import load_plugins

        loaded, errors = load_plugins()
        results.extend(replace(r, node=node) for r in errors)
        for p in loaded:
            if p.name not in skip:
                results.extend(run_check(p.name, p.check, facts, exp, node, "plugins"))
    return results
