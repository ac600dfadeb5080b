"""`envcheck install`: InstallOptions -> Report. The lock read into a plan, the plan installed."""

from __future__ import annotations

import importlib.util
import sys

from envcheck.errors import BadInput
from envcheck.provision.bars import Bars
from envcheck.provision.install import install
from envcheck.provision.options import InstallOptions
from envcheck.provision.plan import read_plan
from envcheck.report import Report, Result, Status


def require_install_extra() -> None:
    """BadInput (one line) when this interpreter cannot run `envcheck install`."""
    if sys.version_info < (3, 10):
        raise BadInput(
            f"envcheck install needs Python >= 3.10 (this is {sys.version.split()[0]}); "
            "the env it creates may have any Python"
        )
    from envcheck.distribution import extra_hint

    missing = [m for m in ("rattler", "uv") if importlib.util.find_spec(m) is None]
    if missing:
        raise BadInput(
            f"envcheck install needs the install extra (missing: {', '.join(missing)}): "
            f"{extra_hint('install')}"
        )


def install_lock(opts: InstallOptions) -> Report:
    """Create ``opts.prefix`` from the lock, every package's hash checked before it links; one
    result and one line (what a person or a script reads; --json/--junit carry it)."""
    require_install_extra()
    plan = read_plan(opts.lock, opts.platform)
    bars = Bars(len(plan.conda) + len(plan.pip), len(plan.conda), opts.progress)
    with bars.shown():
        outcome = install(
            plan,
            opts.prefix,
            opts.cache,
            force=opts.force,
            on_fetch=bars.on_fetch,
            on_checked=bars.on_checked,
            reporter=bars.reporter,
            before_link=bars.before_link,
            lock_timeout=opts.lock_timeout,
            fetch_timeout=opts.fetch_timeout,
        )
    lock = f"lock sha256 {plan.lock_sha256[:12]}, {plan.platform}"
    if outcome.noop:
        message = f"{outcome.prefix} is already installed from {plan.lock} ({lock}): nothing to do"
    else:
        pip = f" + {outcome.pip} pip" if outcome.pip else ""
        message = (
            f"installed {outcome.conda} conda{pip} packages into {outcome.prefix} "
            f"({outcome.bytes_total / 1e6:.1f} MB, {outcome.bytes_fetched / 1e6:.1f} MB "
            f"downloaded, {outcome.seconds:.1f} s; {lock})"
        )
    result = Result("install", Status.PASS, message, node=plan.platform, group="install")
    env = {"lock": str(plan.lock), "lock sha256": plan.lock_sha256, "prefix": str(outcome.prefix)}
    return Report("envcheck install", results=(result,), environment=env, output=message + "\n")
