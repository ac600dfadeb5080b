"""Recipes: one YAML file per environment, validated strictly, with line numbers in every error."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

from envcheck.errors import BadInput, EnvcheckError
from envcheck.inputs import read_text
from envcheck.lockfile.model import Exclusion
from envcheck.lockfile.names import NAME
from envcheck.resolve.solve import resolve_channel
from envcheck.resolve.yaml_nodes import (
    MAX_ENTRIES,
    NodeErrors,
    check_keys,
    compose,
    mapping,
    scalar,
    scalar_list,
)

# py-rattler (the build extra) is imported only as a recipe is read: the module's names
# (PLATFORMS) serve the verbs' flags without it

PLATFORMS = frozenset(
    {"linux-64", "linux-aarch64", "linux-ppc64le", "osx-64", "osx-arm64", "win-64"}
)
SYSTEM_KEYS = ("cuda", "glibc", "linux", "archspec")
_KEYS = {
    "name": True,  # key -> required
    "description": False,
    "channels": True,
    "platforms": True,
    "system": False,
    "dependencies": True,
    "pip": False,
    "pip_extra_index": False,
    "exclude": False,
    "targets": False,
    "notes": False,
}
_ARCH = re.compile(r"^[a-z0-9_]+$")
# bump when the meaning of hashed content changes, so old locks read as stale
_HASH_SCHEMA = "envcheck.recipe/1"
# Limits that keep a wrong file from hanging a build (real recipes: < 4 KiB, < 40 entries).
MAX_RECIPE_BYTES = 256 * 1024
# system versions are plain release numbers (`cuda: "11.8"`, `glibc: "2.17"`, `linux: "3.10"`)
SYSTEM_VERSION = re.compile(r"^[0-9]+(\.[0-9]+){0,3}$")


@dataclass(frozen=True)
class Recipe:
    """A validated recipe. ``system`` holds the target machines' virtual package versions."""

    name: str
    channels: tuple[str, ...]
    platforms: tuple[str, ...]
    dependencies: tuple[str, ...]
    system: Mapping[str, str] = field(default_factory=dict, hash=False)
    pip: tuple[str, ...] = ()
    # more pip indexes, searched before PyPI (uv's --extra-index-url): https://pypi.nvidia.com
    pip_extra_index: tuple[str, ...] = ()
    exclude: tuple[Exclusion, ...] = ()
    description: str = ""
    targets: tuple[str, ...] = ()  # free text: the machines this environment is for
    notes: str = ""
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # a read-only view keeps the frozen recipe frozen all the way down
        object.__setattr__(self, "system", MappingProxyType(dict(self.system)))

    def hashed_content(self) -> dict[str, object]:
        """What decides the lock's content; description, targets and notes do not."""
        return {
            "schema": _HASH_SCHEMA,
            "channels": list(self.channels),
            "platforms": list(self.platforms),
            "system": dict(sorted(self.system.items())),
            "dependencies": list(self.dependencies),
            "pip": list(self.pip),
            "exclude": [[e.name, e.reason] for e in self.exclude],
        } | ({"pip_extra_index": list(self.pip_extra_index)} if self.pip_extra_index else {})

    def content_hash(self) -> str:
        canonical = json.dumps(self.hashed_content(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    @property
    def excluded_names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.exclude)


def load_recipe(path: Path | str) -> Recipe:
    """Read and validate a recipe file; every problem is a BadInput naming file, line and key."""
    path = Path(path)
    # not a regular file (a FIFO or a device would block the build or never end), over the
    # limit (a recipe lists dozens of entries, not thousands), not UTF-8: one line each
    text = read_text(path, "recipe", MAX_RECIPE_BYTES)
    return parse_recipe(text, path)


def parse_recipe(text: str, path: Path) -> Recipe:
    try:
        return _parse_recipe(text, path)
    except RecursionError:  # yaml's composer recurses once per level of nesting
        raise BadInput(f"{path}: nesting too deep (a recipe is a few levels deep)") from None


def _parse_recipe(text: str, path: Path) -> Recipe:
    err = NodeErrors(path)
    root = compose(text, path)
    top = mapping(err, root, "")
    check_keys(err, top, _KEYS, "", root)

    def value(key: str) -> yaml.Node | None:
        return top[key][1] if key in top else None

    name_node = top["name"][1]  # required: check_keys made sure it is there
    name = scalar(err, name_node, "name")
    if not NAME.match(name):
        raise err.at(name_node, "name", f"{name!r} must be lower-case letters, digits, . _ -")
    # read in the recipe's order, so the first problem reported is the first in the file
    channels = read_channels(err, top["channels"][1])
    platforms = read_platforms(err, top["platforms"][1])
    system = _system(err, value("system"))
    deps, seen = read_dependencies(err, top["dependencies"][1])
    pip = read_pip(err, value("pip"))
    extra_index = read_indexes(err, value("pip_extra_index"))
    exclude = _exclusions(err, value("exclude"), seen)
    targets = [t for _, t in scalar_list(err, value("targets"), "targets")] if value("targets") \
        else []
    text_of = {k: scalar(err, top[k][1], k) for k in ("description", "notes") if k in top}
    return Recipe(
        name=name,
        channels=channels,
        platforms=platforms,
        dependencies=deps,
        system=system,
        pip=pip,
        pip_extra_index=extra_index,
        exclude=exclude,
        description=text_of.get("description", ""),
        targets=tuple(targets),
        notes=text_of.get("notes", ""),
        path=path,
    )


def read_channels(err: NodeErrors, node: yaml.Node) -> tuple[str, ...]:
    channels: list[str] = []
    for item, ch in scalar_list(err, node, "channels"):
        try:
            resolve_channel(ch)
        except EnvcheckError as e:
            raise err.at(item, "channels", e.message) from None
        channels.append(ch)
    if not channels:
        raise err.at(node, "channels", "needs at least one channel")
    return tuple(channels)


def read_platforms(err: NodeErrors, node: yaml.Node) -> tuple[str, ...]:
    platforms: list[str] = []
    for item, p in scalar_list(err, node, "platforms"):
        if p not in PLATFORMS:
            raise err.at(
                item, "platforms", f"unknown platform {p!r} ({', '.join(sorted(PLATFORMS))})"
            )
        if p in platforms:
            raise err.at(item, "platforms", f"{p} appears twice")
        platforms.append(p)
    if not platforms:
        raise err.at(node, "platforms", "needs at least one platform")
    return tuple(platforms)


def _system(err: NodeErrors, snode: yaml.Node | None) -> dict[str, str]:
    system: dict[str, str] = {}
    if snode is None:
        return system
    items = mapping(err, snode, "system")
    check_keys(err, items, dict.fromkeys(SYSTEM_KEYS, False), "system", snode)
    for k, (_, vnode) in items.items():
        v = scalar(err, vnode, f"system.{k}")
        if k == "archspec":
            if not _ARCH.match(v):
                raise err.at(vnode, "system.archspec", f"{v!r} is not a microarchitecture name")
        else:
            from envcheck.resolve.record.conda_version import parse_version

            try:
                parse_version(v)
                ok = bool(SYSTEM_VERSION.match(v))
            except BadInput:
                ok = False
            if not ok:
                raise err.at(
                    vnode, f"system.{k}", f"{v!r} is not a version (numbers: e.g. 11.8, 2.17)"
                )
        system[k] = v
    return system


def read_dependencies(err: NodeErrors, node: yaml.Node) -> tuple[tuple[str, ...], dict[str, str]]:
    """The conda entries, and normalised name -> entry (for duplicates and exclusions)."""
    from envcheck.resolve.spec import conda_spec

    deps: list[str] = []
    seen: dict[str, str] = {}
    for item, spec in scalar_list(err, node, "dependencies"):
        try:
            ms = conda_spec(spec)  # every form conda's command line accepts
        except ValueError as e:
            raise err.at(item, "dependencies", str(e)) from None
        pname = ms.name.normalized if ms.name else None
        if not pname:
            raise err.at(item, "dependencies", f"{spec!r} names no package")
        if pname in seen:
            raise err.at(
                item, "dependencies", f"{pname} is listed twice ({seen[pname]!r}, {spec!r})"
            )
        seen[pname] = spec
        deps.append(spec)
    if not deps:
        raise err.at(node, "dependencies", "needs at least one package")
    return tuple(deps), seen


def read_pip(err: NodeErrors, pnode: yaml.Node | None) -> tuple[str, ...]:
    if pnode is None:
        return ()
    # imported here: most recipes have no pip entries
    from packaging.requirements import InvalidRequirement, Requirement

    pip: list[str] = []
    for item, req in scalar_list(err, pnode, "pip"):
        try:
            Requirement(req)
        except InvalidRequirement as e:
            raise err.at(
                item, "pip", f"{req!r} is not a PEP 508 requirement: {str(e).splitlines()[0]}"
            ) from None
        pip.append(req)
    return tuple(pip)


def read_indexes(err: NodeErrors, node: yaml.Node | None) -> tuple[str, ...]:
    """Extra pip index URLs: http(s), a PEP 503 simple index root each."""
    if node is None:
        return ()
    urls: list[str] = []
    for item, url in scalar_list(err, node, "pip_extra_index"):
        if not re.match(r"^https?://[^\s/]+(/\S*)?$", url):
            raise err.at(item, "pip_extra_index", f"{url!r} is not an http(s) index URL")
        urls.append(url.rstrip("/"))
    return tuple(dict.fromkeys(urls))


def _exclusions(
    err: NodeErrors, xnode: yaml.Node | None, seen: dict[str, str]
) -> tuple[Exclusion, ...]:
    if xnode is None:
        return ()
    if not isinstance(xnode, yaml.SequenceNode):
        if not (isinstance(xnode, yaml.ScalarNode) and xnode.tag.endswith(":null")):
            raise err.at(xnode, "exclude", "expected a list of {name, reason}")
        return ()
    if len(xnode.value) > MAX_ENTRIES:
        raise err.at(xnode, "exclude", f"more than {MAX_ENTRIES:,} entries")
    return tuple(_exclusion(err, item, f"exclude[{i}]", seen) for i, item in enumerate(xnode.value))


def _exclusion(err: NodeErrors, item: yaml.Node, where: str, seen: dict[str, str]) -> Exclusion:
    fields = mapping(err, item, where)
    check_keys(err, fields, {"name": True, "reason": True}, where, item)
    xname = scalar(err, fields["name"][1], f"{where}.name")
    reason = scalar(err, fields["reason"][1], f"{where}.reason")
    if not NAME.match(xname.lower()):
        raise err.at(fields["name"][1], f"{where}.name", f"{xname!r} is not a package name")
    if not reason:
        raise err.at(fields["reason"][1], f"{where}.reason", "say why it is excluded")
    if xname.lower() in seen:
        raise err.at(
            fields["name"][1],
            f"{where}.name",
            f"{xname} is excluded but also a dependency ({seen[xname.lower()]!r})",
        )
    return Exclusion(xname.lower(), reason)
