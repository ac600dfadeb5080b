"""envcheck why PKG LOCK: the chains from recipe entries to a package; --not PKG RECIPE: which
entry would pull in a package the recipe excludes (a real solve without the exclusion).

The pipeline: WhyOptions (options.py) -> why() -> Report; command.py makes the
flags from WhyOptions."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.extras import require_build_extra
from envcheck.inputs import read_text
from envcheck.lockfile.model import LockedPackage, spec_name
from envcheck.lockfile.names import normalize_name
from envcheck.report import Report, Result, Status, Table
from envcheck.resolve.lockgraph import read_graph
from envcheck.resolve.why.options import WhyOptions

MAX_CHAINS = 10


def chains_to(
    target: str,
    nodes: Mapping[str, LockedPackage],
    roots: Mapping[str, str],
    limit: int = MAX_CHAINS,
) -> list[list[str]]:
    """Shortest chains 'target <- ... <- root entry', one per root that reaches the target.

    ``roots`` maps a package name to the label of what asked for it ("recipe entry 'x=1'").
    """
    dependents: dict[str, list[str]] = {}
    for n in nodes.values():
        for d in n.requires:
            if d in nodes and d != n.name:
                dependents.setdefault(d, []).append(n.name)
    nxt: dict[str, str | None] = {target: None}  # toward the target
    queue = deque([target])
    chains: list[list[str]] = []
    while queue and len(chains) < limit:
        name = queue.popleft()
        if name in roots:
            path = [name]
            while (step := nxt[path[-1]]) is not None:
                path.append(step)
            chain = [nodes[p].label() for p in path]
            chains.append([*reversed(chain), roots[name]])
        for up in sorted(dependents.get(name, ())):
            if up not in nxt:
                nxt[up] = name
                queue.append(up)
    return chains


def _recipe_roots(dependencies: Sequence[str], pip: Sequence[str]) -> dict[str, str]:
    roots = {}
    for entry in dependencies:  # `channel::name spec` names the package after the ::
        roots.setdefault(spec_name(entry.split("::")[-1]), f"recipe entry {entry!r}")
    for req in pip:
        roots.setdefault(normalize_name(spec_name(req, "pip")), f"recipe pip entry {req!r}")
    return roots


def _recipe_file_roots(path: Path) -> dict[str, str]:
    """The roots a recipe names, read without the solver's parser: `why PKG LOCK` runs on the
    core install (envcheck build validates recipes)."""
    import yaml

    from envcheck.resolve.recipe import MAX_RECIPE_BYTES

    try:
        doc = yaml.safe_load(read_text(path, "recipe", MAX_RECIPE_BYTES))
    except yaml.YAMLError as e:
        raise BadInput(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    lists = [doc.get(k) or [] for k in ("dependencies", "pip")] if isinstance(doc, dict) else []
    if not lists or not all(isinstance(x, list) for x in lists):
        raise BadInput(f"{path}: not a recipe (a mapping with a dependencies list)")
    return _recipe_roots([str(x) for x in lists[0]], [str(x) for x in lists[1]])


def _top_level(nodes: Mapping[str, LockedPackage]) -> dict[str, str]:
    wanted = {d for n in nodes.values() for d in n.requires if d != n.name}
    return {n: "top level (nothing in the lock requires it)" for n in nodes if n not in wanted}


def _find_recipe(lock: Path, sources: Sequence[str]) -> Path | None:
    for src in sources:
        for d in (lock.parent, lock.parent.parent / "recipes", Path("recipes")):
            if (d / src).is_file():
                return d / src
    return None


def why_lock(
    package: str, lock: Path, recipe: Path | None, environment: str | None, platform: str | None
) -> tuple[list[tuple[str, list[str]]], str]:
    """[(platform, chain)] and a word on where the roots came from."""
    graph = read_graph(lock, environment)
    recipe = recipe or _find_recipe(lock, graph.sources)
    roots_from = f"entries of {recipe}" if recipe else "top-level packages of the lock"
    fixed = _recipe_file_roots(recipe) if recipe else None
    target = package.lower()
    out: list[tuple[str, list[str]]] = []
    platforms = [platform] if platform else sorted(graph.platforms)
    if platform and platform not in graph.platforms:
        raise BadInput(f"{lock} has no platform {platform} ({', '.join(sorted(graph.platforms))})")
    found = False
    for plat in platforms:
        nodes = graph.platforms[plat]
        if target not in nodes:
            continue
        found = True
        roots = fixed if fixed is not None else _top_level(nodes)
        chains = chains_to(target, nodes, roots)
        if not chains:
            chains = [[nodes[target].label(), "no recipe entry requires it (left over?)"]]
        out += [(plat, c) for c in chains]
    if not found:
        raise BadInput(f"{package} is not in {lock} ({graph.environment}: {', '.join(platforms)})")
    return out, roots_from


def why_not(
    package: str, recipe_path: Path, platform: str | None, channels: Sequence[str] | None
) -> list[tuple[str, list[str]]]:
    """Solve the recipe without its exclusions; the chains from its entries to PACKAGE."""
    from envcheck.resolve.recipe import load_recipe
    from envcheck.resolve.solve import solve_specs, virtual_packages

    recipe = load_recipe(recipe_path)
    if package not in recipe.excluded_names:
        raise BadInput(f"{recipe_path} does not exclude {package}: use `envcheck why PKG LOCK`")
    roots = _recipe_roots(recipe.dependencies, recipe.pip)
    out: list[tuple[str, list[str]]] = []
    for plat in [platform] if platform else recipe.platforms:
        vps = virtual_packages(recipe.system, plat)
        solved = solve_specs(recipe.dependencies, list(channels or recipe.channels), plat, vps)
        nodes = {
            p.name: LockedPackage(p.name, p.version, p.build, "conda", plat, depends=p.depends)
            for p in solved
        }
        if package not in nodes:
            out.append((plat, [f"{package}: no entry pulls it in (the recipe solves without it)"]))
            continue
        out += [(plat, c) for c in chains_to(package, nodes, roots)]
    return out


def why(opts: WhyOptions) -> Report:
    if opts.not_:
        require_build_extra("why --not")  # a solve; the chains in a lock need none
        chains = why_not(opts.package, opts.file, opts.platform, opts.channel_data or None)
        title, roots_from = f"envcheck why --not {opts.package}", f"entries of {opts.file}"
    else:
        chains, roots_from = why_lock(
            opts.package, opts.file, opts.recipe, opts.environment, opts.platform
        )
        title = f"envcheck why {opts.package}"
    rows = tuple((plat, " <- ".join(c)) for plat, c in chains)
    result = Result(
        "why", Status.PASS, f"{len(rows)} chain(s) from the {roots_from}", group="build"
    )
    return Report(title, results=(result,), tables=(Table(title, ("platform", "chain"), rows),))
