"""environment.yml (``conda env create -f``, conda-lock) read into the Recipe a recipe file
gives: name, channels, dependencies with their nested ``- pip: [...]``, and the platforms from
the file's own ``platforms:`` (conda-lock's key), else ``--platform``, else this machine.

What a recipe cannot hold is refused in one line that names the recipe key to use instead (a
pip git URL, ``-r requirements.txt``, ``--index-url``, conda's ``defaults`` channel). The
checks are the recipe loader's own, run on the file's nodes, so every error names the
environment.yml's line.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from envcheck.errors import BadInput
from envcheck.inputs import read_text
from envcheck.resolve.recipe import (
    MAX_RECIPE_BYTES,
    PLATFORMS,
    SYSTEM_VERSION,
    Recipe,
    parse_recipe,
    read_channels,
    read_dependencies,
    read_indexes,
    read_pip,
    read_platforms,
)
from envcheck.resolve.yaml_nodes import NodeErrors, compose, mapping, scalar

# the keys conda and conda-lock read from an environment.yml
ENV_KEYS = ("name", "channels", "dependencies", "platforms", "prefix", "variables")
# keys only a recipe has: a recipe named environment.yml is still a recipe
RECIPE_ONLY = frozenset({"system", "pip", "pip_extra_index", "exclude", "targets", "notes",
                         "description"})
# conda's configured set of channels: a lock needs them named
_DEFAULTS = "defaults"
_NODEFAULTS = "nodefaults"  # conda-lock's and pixi's "not the defaults": a recipe never has them
_VCS = re.compile(r"(^|@\s*)(git|hg|svn|bzr)\+", re.IGNORECASE)
_LOCAL = re.compile(r"^(\.{1,2}(/|$)|/|file:)")
_FILE_NAME = re.compile(r"(^|[-_.])environment\.ya?ml$", re.IGNORECASE)
# conda's own overrides of the virtual packages it would detect; a recipe's `system:` keys
OVERRIDES = {"cuda": "CONDA_OVERRIDE_CUDA", "glibc": "CONDA_OVERRIDE_GLIBC"}
DEFAULT_GLIBC = "2.17"


def this_platform() -> str:
    """This machine's conda platform (linux-64, osx-arm64, ...)."""
    import rattler

    kind = getattr(rattler, "Subdir", None) or rattler.Platform  # Subdir: newer rattler's name
    return str(kind.current())


def is_environment_file(path: Path, root: yaml.Node) -> bool:
    """Whether ``root`` (the composed file) is an environment.yml rather than a recipe:
    holding what only an environment.yml holds (a ``- pip:`` mapping among the dependencies,
    ``prefix:`` or ``variables:``), or named so and holding no key only a recipe has."""
    if not isinstance(root, yaml.MappingNode):
        return bool(_FILE_NAME.search(path.name))
    keys = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
    deps = keys.get("dependencies")
    if "prefix" in keys or "variables" in keys or (isinstance(deps, yaml.SequenceNode) and any(
            isinstance(item, yaml.MappingNode) for item in deps.value)):
        return True
    return bool(_FILE_NAME.search(path.name)) and not set(keys) & RECIPE_ONLY


def load_recipe_or_environment(path: Path | str, platform: str | None = None) -> Recipe:
    """A recipe file, or an environment.yml read as one (``platform``: the one to lock when
    the file names none; None: this machine's)."""
    path = Path(path)
    text = read_text(path, "recipe", MAX_RECIPE_BYTES)
    root = compose(text, path)
    if not is_environment_file(path, root):
        return parse_recipe(text, path)
    try:
        return from_environment(root, path, platform)
    except RecursionError:
        raise BadInput(f"{path}: nesting too deep (an environment.yml is a few levels deep)"
                       ) from None


def from_environment(root: yaml.Node, path: Path, platform: str | None = None) -> Recipe:
    err = NodeErrors(path)
    top = mapping(err, root, "")
    for key, (knode, _) in top.items():
        if key not in ENV_KEYS:
            raise err.at(knode, key, "not an environment.yml key conda reads "
                         f"({', '.join(ENV_KEYS)}); a recipe's keys: envcheck docs recipes")
    if "variables" in top:
        raise err.at(top["variables"][0], "variables", "a lock holds packages, not environment "
                     "variables: set them where the job starts (envcheck slurm script) and "
                     "remove the key")
    for key in ("name", "channels", "dependencies"):
        if key not in top:
            raise err.at(root, key, f"missing; the recipe key `{key}:` is required "
                         "(envcheck docs recipes)")
    name_node = top["name"][1]
    # conda takes any case (`name: MyProject`); a lock's name is lower-case
    name = scalar(err, name_node, "name").lower()
    from envcheck.lockfile.names import NAME

    if not NAME.match(name):
        raise err.at(name_node, "name", f"{name!r}: the lock is named for it, so `name:` must "
                     "be lower-case letters, digits, . _ -")
    channels = read_channels(err, _env_channels(err, top["channels"][1]))
    platforms = _env_platforms(err, top, platform)
    conda, pip_nodes = _split_dependencies(err, top["dependencies"][1])
    deps, _ = read_dependencies(err, conda)
    pip, indexes = _env_pip(err, pip_nodes)
    return Recipe(
        name=name,
        channels=channels,
        platforms=platforms,
        dependencies=deps,
        system=_system(platforms),
        pip=read_pip(err, _sequence(pip)) if pip else (),
        pip_extra_index=read_indexes(err, _sequence(indexes)) if indexes else (),
        description=f"from {path.name}",
        path=path,
    )


def _sequence(items: list[yaml.Node]) -> yaml.SequenceNode:
    """The recipe loader's list, made of the environment.yml's own nodes (their lines)."""
    mark = items[0].start_mark
    return yaml.SequenceNode("tag:yaml.org,2002:seq", items, mark, items[-1].end_mark)


def _env_channels(err: NodeErrors, node: yaml.Node) -> yaml.Node:
    """The channels node less conda-lock's ``nodefaults``; conda's ``defaults`` refused."""
    if not isinstance(node, yaml.SequenceNode):
        return node  # the loader says what it expected
    kept = []
    for item in node.value:
        value = item.value if isinstance(item, yaml.ScalarNode) else None
        if value == _NODEFAULTS:
            continue
        if value == _DEFAULTS:
            raise err.at(item, "channels", "'defaults' is conda's configured set, not one "
                         "channel: name each in `channels:` (conda-forge, or "
                         "https://repo.anaconda.com/pkgs/main)")
        kept.append(item)
    return yaml.SequenceNode(node.tag, kept, node.start_mark, node.end_mark)


def _env_platforms(
    err: NodeErrors, top: dict[str, tuple[yaml.Node, yaml.Node]], platform: str | None
) -> tuple[str, ...]:
    if "platforms" in top:
        return read_platforms(err, top["platforms"][1])
    chosen = platform or this_platform()
    if chosen not in PLATFORMS:
        raise BadInput(f"{err.path}: platforms: {chosen!r} is not a conda platform "
                       f"({', '.join(sorted(PLATFORMS))}); give --platform")
    return (chosen,)


def _split_dependencies(
    err: NodeErrors, node: yaml.Node
) -> tuple[yaml.Node, list[yaml.Node]]:
    """(the conda entries as a list node, the entries of every ``- pip:`` list)."""
    if not isinstance(node, yaml.SequenceNode):
        return node, []  # the loader says what it expected
    conda: list[yaml.Node] = []
    pip: list[yaml.Node] = []
    for i, item in enumerate(node.value):
        if not isinstance(item, yaml.MappingNode):
            conda.append(item)
            continue
        where = f"dependencies[{i}]"
        entries = mapping(err, item, where)
        for key, (knode, value) in entries.items():
            if key != "pip":
                raise err.at(knode, f"{where}.{key}", "only `- pip: [...]` nests in "
                             "dependencies; a recipe lists conda packages in `dependencies:`")
            if isinstance(value, yaml.SequenceNode):
                pip += value.value
            elif not (isinstance(value, yaml.ScalarNode) and value.tag.endswith(":null")):
                raise err.at(value, f"{where}.pip", "expected a list of pip requirements")
    return yaml.SequenceNode(node.tag, conda, node.start_mark, node.end_mark), pip


def _env_pip(err: NodeErrors, nodes: list[yaml.Node]) -> tuple[list[yaml.Node], list[yaml.Node]]:
    """(the requirements, the --extra-index-url values): what pip's requirement lines hold
    that a recipe has no key for is refused, naming the key that does the job."""
    reqs: list[yaml.Node] = []
    indexes: list[yaml.Node] = []
    for item in nodes:
        text = scalar(err, item, "pip")
        option, _, value = text.partition(" ")
        option, _, joined = option.partition("=")
        value = (joined or value).strip()
        if option == "--extra-index-url" and value:
            indexes.append(yaml.ScalarNode("tag:yaml.org,2002:str", value, item.start_mark,
                                           item.end_mark))
        elif text.startswith("-"):
            raise err.at(item, "pip", _option_refusal(option, text))
        elif _VCS.search(text) or _LOCAL.search(text):
            kind = "a git URL" if "git+" in text.lower() else "not a released package"
            raise err.at(item, "pip", f"{text!r} is {kind}: a lock pins released files by "
                         "hash; give `name==version` in the recipe's `pip:` key, or publish "
                         "a wheel on an index named in `pip_extra_index:`")
        else:
            reqs.append(item)
    return reqs, indexes


def _option_refusal(option: str, text: str) -> str:
    if option in ("--index-url", "-i"):
        return (f"{text!r}: a recipe searches PyPI and the indexes in `pip_extra_index:` "
                "(a lock names every file's index); move the URL there")
    if option in ("-r", "--requirement", "-c", "--constraint"):
        return (f"{text!r}: list the requirements themselves in the recipe's `pip:` key "
                "(a lock is made from one file)")
    if option in ("-e", "--editable"):
        return (f"{text!r}: an editable install is not a released package; install it after "
                "`envcheck install`, or give `name==version` in the recipe's `pip:` key")
    return (f"{text!r}: pip option {option} has no recipe key (`pip:` takes requirements, "
            "`pip_extra_index:` index URLs)")


def _system(platforms: tuple[str, ...]) -> dict[str, str]:
    """system.cuda / system.glibc from CONDA_OVERRIDE_CUDA / CONDA_OVERRIDE_GLIBC, as conda
    reads them; else glibc is this machine's when it is the one platform locked, else 2.17
    (conda-lock's default, the oldest conda-forge builds for). A recipe names them in
    `system:`."""
    system = {key: os.environ[var].strip() for key, var in OVERRIDES.items()
              if os.environ.get(var, "").strip()}  # fmt: skip
    for key, value in system.items():
        if not SYSTEM_VERSION.match(value):
            raise BadInput(f"{OVERRIDES[key]}={value!r} is not a version (numbers: e.g. 12.4); "
                           f"it sets the recipe key `system.{key}`")
    if "glibc" not in system and any(p.startswith("linux-") for p in platforms):
        here = _this_glibc() if platforms == (this_platform(),) else None
        system["glibc"] = here or DEFAULT_GLIBC
    return system


def _this_glibc() -> str | None:
    try:
        name, _, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    except (ValueError, OSError):
        return None
    return version if name == "glibc" and re.match(r"^[0-9]+\.[0-9]+$", version) else None


# --- a recipe file from the facts (envcheck recipe import) ----------------------------------


def _plain(text: str) -> str:
    """``text`` as a YAML list item: plain when YAML reads it back as that string, else
    double-quoted (JSON's escapes are YAML's)."""
    try:
        if yaml.safe_load(f"- {text}") == [text]:
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(text, ensure_ascii=False)


def recipe_text(recipe: Recipe, source: str) -> str:
    """A recipe file that loads back to ``recipe`` (path aside)."""
    out = [f"# Imported from {source} by envcheck recipe import; the keys: envcheck docs "
           "recipes", f"name: {_plain(recipe.name)}"]
    if recipe.description:
        out.append(f"description: {_plain(recipe.description)}")

    def block(key: str, items: tuple[str, ...]) -> None:
        if items:
            out.append(f"{key}:")
            out.extend(f"  - {_plain(i)}" for i in items)

    block("channels", recipe.channels)
    block("platforms", recipe.platforms)
    if recipe.system:
        out.append("system:")
        out.extend(f"  {k}: {json.dumps(v)}" for k, v in sorted(recipe.system.items()))
    block("dependencies", recipe.dependencies)
    block("pip", recipe.pip)
    block("pip_extra_index", recipe.pip_extra_index)
    return "\n".join(out) + "\n"
