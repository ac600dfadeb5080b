"""What `verify node` is asked to do, as one typed object (from flags or keyword arguments):
each field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

from pathlib import Path

from envcheck import values
from envcheck.errors import BadInput
from envcheck.option import Option, declared
from envcheck.record import field, frozen
from envcheck.verify.expectations import ExpectOptions


def _level(value: object, said: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value not in (1, 2, 3):
        raise BadInput(f"{said} must be 1, 2 or 3, not {value}")
    return value


@frozen
@declared
class NodeOptions:
    expect: ExpectOptions = field(default_factory=ExpectOptions)
    facts: Path | None = Option(  # judge facts saved with --save-facts instead of this machine
        type=Path, metavar="FILE", check=values.optional_path,
        help="judge facts saved with --save-facts (from another machine) instead of this one")
    prefix: Path | None = Option(  # the conda env or venv to check (its python collects)
        type=Path, metavar="DIR", check=values.optional_path,
        help="check the conda env or venv at DIR (its own python collects the facts; nothing "
        "is installed into it)")
    save_facts: Path | None = Option(type=Path, metavar="FILE", check=values.optional_path,
                                     help="write the collected facts as JSON")
    plugins: bool = Option(  # checks of the envcheck.checks entry-point group
        True, flag="--no-plugins", action="store_false", check=values.flag,
        help="skip checks from the envcheck.checks group")
    level: int = Option(  # 1 reads, 2 adds a short GPU load, 3 points at verify cluster --bench
        1, type=int, choices=(1, 2, 3), check=_level,
        help="1 (default): reads only (NVML, /sys, limits, kernel log), well under a second, "
        "no load. 2: adds a short load per visible GPU through torch or CuPy (memory "
        "write/read, pinned copies; PCIe and NVLink counters under load), about 5 s per GPU. "
        "3: the cluster's bandwidth measurements, which are `verify cluster --bench`")
    load_seconds: float = Option(4.0, type=float, metavar="S", check=values.seconds,
                                 help="level 2: seconds of copies per GPU (default %(default)g)")
    kernel_log: Path | None = Option(  # Xid lines from this file instead of the kernel's
        type=Path, metavar="FILE", check=values.optional_path,
        help="read Xid lines from this file (a saved dmesg, kern.log, journalctl -k) instead "
        "of /dev/kmsg / dmesg / journalctl -k")

    def __post_init__(self) -> None:
        """The checks across fields (each field's own ran first, ``declared``)."""
        if self.facts and self.prefix:
            raise BadInput("give --facts or --prefix, not both")
