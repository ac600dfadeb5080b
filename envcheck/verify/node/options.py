"""What `verify node` is asked to do, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.record import field, frozen
from envcheck.verify.expectations import ExpectOptions


@frozen
class NodeOptions:
    expect: ExpectOptions = field(default_factory=ExpectOptions)
    facts: Path | None = None  # judge facts saved with --save-facts instead of this machine
    prefix: Path | None = None  # the conda env or venv to check (its python collects)
    save_facts: Path | None = None
    plugins: bool = True  # checks of the envcheck.checks entry-point group
    level: int = 1  # 1 reads, 2 adds a short GPU load, 3 points at verify cluster --bench
    load_seconds: float = 4.0
    kernel_log: Path | None = None  # Xid lines from this file instead of the kernel's

    def __post_init__(self) -> None:
        if not isinstance(self.level, int) or isinstance(self.level, bool) \
                or self.level not in (1, 2, 3):
            raise BadInput(f"--level must be 1, 2 or 3, not {self.level}")
        object.__setattr__(self, "load_seconds",
                           values.seconds(self.load_seconds, "--load-seconds"))
        for name in ("facts", "prefix", "save_facts", "kernel_log"):
            object.__setattr__(self, name, values.optional_path(getattr(self, name),
                                                                "--" + name.replace("_", "-")))
        values.flag(self.plugins, "plugins")
        if self.facts and self.prefix:
            raise BadInput("give --facts or --prefix, not both")
