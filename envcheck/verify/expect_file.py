"""`--expect FILE`: the expectations of one node type, in YAML or TOML.

An admin keeps one file per node type (as DCGM, gcm and NHC users do): docs/expect/ has
examples. Each key is an expectation flag without its dashes (`expect-gpus`, or
`expect_gpus`); values have the types the flags take. The file is untrusted input: only a
regular file of at most MAX_BYTES is read (a FIFO or /dev/zero is refused, never waited on),
unknown keys and wrong types are BadInput naming the key and the file.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.inputs import read_bytes
from envcheck.text import shown
from envcheck.verify.expectations import ExpectOptions, parse_size_mib

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_BYTES = 1 << 20  # 1 MiB: a node type's expectations fit in a few hundred bytes
MAX_SECONDS = 86400.0  # probe-timeout: a day; a longer probe is a hung one
MAX_DURATION = 3650 * 86400.0  # since: ten years of kernel log

_VERSION = re.compile(r"\d+(\.\d+)*")


class Wrong(Exception):
    """A value of the wrong type or form; the message says what was expected."""


class _Aliased(Exception):
    """The YAML has an alias; the message says where."""


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise Wrong("an integer")
    if v < 0:
        raise Wrong("an integer >= 0")
    return v


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise Wrong("a string")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise Wrong("true or false")
    return v


def _version(v: Any) -> str:
    # A YAML/TOML number is refused: 12.10 would read as 12.1.
    if not isinstance(v, str) or not _VERSION.fullmatch(v.strip()):
        raise Wrong('a version as a quoted string, e.g. "12.4"')
    return v.strip()


def _cc(v: Any) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)", v.strip()) if isinstance(v, str) else None
    if not m:
        raise Wrong('a compute capability as a quoted string, e.g. "8.0"')
    return int(m[1]), int(m[2])


def _size(v: Any) -> int:
    if isinstance(v, str):
        try:
            return parse_size_mib(v)
        except ValueError:
            pass
    elif isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v  # MiB, as the flag without a unit
    raise Wrong('a size, e.g. "40GiB", or MiB as an integer')


def _seconds(v: Any) -> float:
    # YAML's .inf and .nan are floats: refused, as a limit that never ends or never compares
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= MAX_SECONDS:
        return float(v)
    raise Wrong(f"a number of seconds above 0 and at most {MAX_SECONDS:g}")


def _duration(v: Any) -> float:
    seconds = math.nan
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*([smhd]?)\s*", v)
        if m:
            seconds = float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m[2]]
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        seconds = float(v)
    if 0 <= seconds <= MAX_DURATION:  # nan compares false
        return seconds
    raise Wrong(f'a duration, e.g. "12h", or seconds as a number (at most {MAX_DURATION:g})')


def _names(v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [p for p in v.split(",")]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise Wrong("a list of strings")
    return tuple(dict.fromkeys(x.strip() for x in v if x.strip()))


# file key (the flag without its dashes) -> (ExpectOptions field, reader)
KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "lock": ("lock", _text),
    "expect-gpus": ("expect_gpus", _int),
    "expect-gpu-model": ("expect_gpu_model", _text),
    "min-gpu-memory": ("min_gpu_memory", _size),
    "allow-busy-gpus": ("allow_busy_gpus", _bool),
    "cuda": ("cuda", _version),
    "min-glibc": ("min_glibc", _version),
    "min-compute-capability": ("min_compute_capability", _cc),
    "import": ("imports", _names),
    "library": ("libraries", _names),
    "expect-ucx": ("expect_ucx", _bool),
    "since": ("since", _duration),
    "ecc-corrected-threshold": ("ecc_corrected_threshold", _int),
    "probe-timeout": ("probe_timeout", _seconds),
    "skip": ("skip", _names),
}


def read_expect_file(path: Path) -> ExpectOptions:
    """The file's expectations; a relative `lock` is relative to the file's directory."""
    path = Path(path)
    data = _parse(path, read_bytes(path, "--expect", MAX_BYTES))
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key).replace("_", "-")
        if name not in KEYS:
            raise BadInput(
                f"--expect {path}: unknown key {shown(key)} (known: {', '.join(KEYS)})"
            )
        field, read = KEYS[name]
        try:
            values[field] = read(value)
        except Wrong as e:
            raise BadInput(f"--expect {path}: {key} must be {e}, not {_typed(value)}") from None
    if "lock" in values:
        values["lock"] = path.parent / Path(values["lock"]).expanduser()
    return ExpectOptions(**values)


def _typed(value: Any) -> str:
    """"str 'eight'", "float 12.1", "a list of 3 items": the type and a bounded view."""
    view = shown(value)
    return view if view.startswith(("a ", "an ")) else f"{type(value).__name__} {view}"


def _parse(path: Path, raw: bytes) -> dict[Any, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"--expect {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    toml = path.suffix.lower() == ".toml"
    try:
        data = _toml(text) if toml else _yaml(text)
    except BadInput:
        raise
    except _Aliased as e:
        raise BadInput(f"--expect {path}: {e}") from None
    except RecursionError:
        raise BadInput(f"--expect {path}: nested too deeply") from None
    except Exception as e:  # the parsers' own errors: one line, with their position
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        kind = "TOML" if toml else "YAML"
        raise BadInput(f"--expect {path}: not valid {kind}: {first[:200]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadInput(f"--expect {path}: the top level must be a mapping of keys, not "
                       f"{type(data).__name__}")
    return data


def _toml(text: str) -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        try:
            import tomli as tomllib
        except ImportError:
            raise BadInput(
                "--expect: a TOML file needs Python 3.11+ or tomli (pip install tomli); "
                "or write it as YAML"
            ) from None
    return tomllib.loads(text)


def _yaml(text: str) -> Any:
    """The document, aliases refused before it is built: an expectations file has no use for
    them, and a 1 KB alias bomb expands to billions of items once anything walks it."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            line = event.start_mark.line + 1 if event.start_mark else 0
            raise _Aliased(f"line {line}: a YAML alias (*{shown(event.anchor)}); an "
                           "expectations file has no anchors or aliases: write each value")
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
