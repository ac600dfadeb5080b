"""A recipe file's YAML read as nodes, so that every error names the file, line, column and key:
'FILE:LINE:COL: key: problem'. The recipe loader (recipe.py) and the environment.yml reader
(environment_yml.py) read through these."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from envcheck.errors import BadInput

# per list (dependencies, pip, exclude, channels, targets): real recipes list < 40 entries
MAX_ENTRIES = 1000


def compose(text: str, path: Path) -> yaml.Node:
    """The file's root node; malformed YAML, nesting too deep or nothing at all: one line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        where = f"{m.line + 1}:{m.column + 1}: " if m else ""
        raise BadInput(f"{path}:{where}malformed YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:  # a ReaderError (a control character) spans two lines
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{path}: malformed YAML: {first}") from None
    except RecursionError:  # yaml's composer recurses once per level of nesting
        raise BadInput(f"{path}: nesting too deep (a recipe is a few levels deep)") from None
    if root is None:
        raise BadInput(f"{path}: the recipe is empty")
    return root


class NodeErrors:
    """Builds 'FILE:LINE:COL: key: problem' messages from yaml node marks."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def at(self, node: yaml.Node, key: str, problem: str) -> BadInput:
        m = node.start_mark
        return BadInput(f"{self.path}:{m.line + 1}:{m.column + 1}: {key}: {problem}")


def scalar(err: NodeErrors, node: yaml.Node, key: str) -> str:
    if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
        raise err.at(node, key, "expected a text value")
    # the raw text, not YAML's reading of it: `cuda: 11.10` must stay "11.10", not 11.1
    return str(node.value).strip()


def scalar_list(err: NodeErrors, node: yaml.Node, key: str) -> list[tuple[yaml.Node, str]]:
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
        return []
    if not isinstance(node, yaml.SequenceNode):
        raise err.at(node, key, "expected a list")
    if len(node.value) > MAX_ENTRIES:
        raise err.at(node, key, f"{len(node.value):,} entries; the limit is {MAX_ENTRIES:,}")
    return [(item, scalar(err, item, f"{key}[{i}]")) for i, item in enumerate(node.value)]


def mapping(err: NodeErrors, node: yaml.Node, key: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    """key -> (key node, value node); duplicate keys are an error (YAML would keep the last)."""
    if not isinstance(node, yaml.MappingNode):
        raise err.at(node, key, "expected a mapping")
    out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for k, v in node.value:
        name = scalar(err, k, key or "key")
        if name in out:
            raise err.at(k, f"{key}.{name}" if key else name, "appears twice")
        out[name] = (k, v)
    return out


def check_keys(
    err: NodeErrors,
    items: Mapping[str, tuple[yaml.Node, yaml.Node]],
    allowed: Mapping[str, bool],
    where: str,
    node: yaml.Node,
) -> None:
    for k, (knode, _) in items.items():
        if k not in allowed:
            full = f"{where}.{k}" if where else k
            raise err.at(knode, full, f"unknown key (allowed: {', '.join(allowed)})")
    for k, required in allowed.items():
        if required and k not in items:
            raise err.at(node, f"{where}.{k}" if where else k, "missing required key")
