"""`--expect FILE`: the expectations of one node type, in YAML or TOML.

An admin keeps one file per node type (as DCGM, gcm and NHC users do): docs/expect/ has
examples. Each key is an expectation flag without its dashes (`expect-gpus`, or
`expect_gpus`); values have the types the flags take. The file is untrusted input: only a
regular file of at most MAX_BYTES is read (a FIFO or /dev/zero is refused, never waited on),
unknown keys and wrong types are BadInput naming the key and the file.
"""

from __future__ import annotations

import sys
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.inputs import read_bytes
from envcheck.option import Option
from envcheck.text import shown
from envcheck.verify.expectations import ExpectOptions

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

MAX_BYTES = 1 << 20  # 1 MiB: a node type's expectations fit in a few hundred bytes

# file key (the flag without its dashes) -> the ExpectOptions field's Option, whose check reads
# the key's value as it reads the flag's and the API keyword's
KEYS: dict[str, Option] = {
    o.flag[2:]: o for o in ExpectOptions.__options__.values() if o.flag and o.name != "file"
}


class _Aliased(Exception):
    """The YAML has an alias; the message says where."""


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
        if value is None:  # a check reads None as not given; a key set to nothing is wrong
            raise BadInput(f"--expect {path}: {key} has no value")
        option = KEYS[name]
        values[option.name] = option.check(value, f"--expect {path}: {key}")
    if "lock" in values:
        values["lock"] = path.parent / Path(values["lock"]).expanduser()
    return ExpectOptions(**values)


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
