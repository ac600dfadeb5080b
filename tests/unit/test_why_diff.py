"""envcheck why / why --not / diff on real locks (pangeo conda-locks, a holoviews pixi.lock)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.lockfile.model import LockedPackage
from envcheck.resolve.changes import compare
from envcheck.resolve.diff.pipeline import lock_diff
from envcheck.resolve.lockgraph import read_graph
from envcheck.resolve.why.pipeline import chains_to, why_lock
from tests.support.channel import demo_channel, write_recipe

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
PANGEO_ML = ROOT / "locks" / "pangeo-ml-2023.10.conda-lock.yml"
PIXI = DATA / "holoviz_holoviews_fb85eeb_pixi.lock"
OLD = DATA / "pangeo_pytorch-notebook_2023-05-19_cd2ce0b.conda-lock.yml"
NEW = DATA / "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml"
EXCERPT = DATA / "pangeo-pytorch-excerpt.conda-lock.yml"


def _edges_hold(chain: list[str], nodes) -> None:
    """Each step of 'a <- b <- ... <- root' is a real dependency of the lock: b depends on a."""
    by_label = {n.label(): n for n in nodes.values()}
    steps = [by_label[s] for s in chain[:-1]]
    for low, high in zip(steps, steps[1:], strict=False):
        assert low.name in high.requires, (low.name, high.name)


def test_why_follows_real_dependencies_to_the_recipe_entries_of_a_pangeo_lock():
    chains, roots_from = why_lock("tornado", PANGEO_ML, None, None, None)
    assert "recipes/pangeo-ml-2023.10.yaml" in roots_from  # found from the lock's metadata
    nodes = read_graph(PANGEO_ML).platforms["linux-64"]
    assert chains
    for platform, chain in chains:
        assert platform == "linux-64"
        assert chain[0].startswith("tornado ") and chain[-1].startswith("recipe entry '")
        _edges_hold(chain, nodes)
    assert any(c[-1] == "recipe entry 'distributed=2023.9.2'" for _, c in chains)


def test_why_reads_a_real_pixi_lock_through_rattler_and_finds_cudf_under_the_gpu_env():
    graph = read_graph(PIXI, "test-gpu")
    nodes = graph.platforms["linux-64"]
    assert nodes["cudf"].version.startswith("26.04")
    chains, roots_from = why_lock("libcudf", PIXI, None, "test-gpu", "linux-64")
    assert roots_from == "top-level packages of the lock"
    assert any("cudf 26.04" in " ".join(c) for _, c in chains)
    for _, chain in chains:
        _edges_hold(chain, nodes)


def test_chains_to_returns_one_shortest_chain_per_root():
    def node(name: str, *depends: str) -> LockedPackage:
        return LockedPackage(name, "1", "", "conda", "linux-64", depends=depends)

    nodes = {
        "a": node("a", "b >=1", "c"),
        "b": node("b", "t"),
        "c": node("c", "b"),
        "t": node("t"),
        "x": node("x", "t 1.*"),
    }
    got = chains_to("t", nodes, {"a": "entry a", "x": "entry x"})
    assert got == [["t 1", "x 1", "entry x"], ["t 1", "b 1", "a 1", "entry a"]]


def test_why_cli_errors_are_one_line(capsys):
    assert main(["why", "no-such-package", str(PANGEO_ML)]) == ExitCode.BAD_INPUT
    assert "no-such-package is not in" in capsys.readouterr().err
    assert main(["why", "dask", str(PIXI), "--environment", "nope"]) == ExitCode.BAD_INPUT
    assert "has no environment 'nope'" in capsys.readouterr().err


def test_why_with_the_lock_first_says_the_package_comes_first(capsys):
    assert main(["why", str(PANGEO_ML), "dask"]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"the package comes first (envcheck why dask {PANGEO_ML})" in err


def test_why_not_solves_without_the_exclusion_and_names_the_entry(tmp_path, capsys):
    channel = demo_channel(tmp_path / "channel")
    excl = "exclude: [{name: cugraph, reason: conflicts with cuml in 22.08}]\n"
    recipe = write_recipe(tmp_path, channel, "[python=3.9, rapids=22.08]", excl)
    assert main(["why", "--not", "cugraph", str(recipe), "--json", str(tmp_path / "w.json")]) == 0
    import json

    rows = json.loads((tmp_path / "w.json").read_text())["tables"][0]["rows"]
    assert rows == [
        ["linux-64", "cugraph 22.08.00 cuda11_py39_0 <- rapids 22.08.00 cuda11_py39_0 <- "
         "recipe entry 'rapids=22.08'"]
    ]  # fmt: skip
    assert main(["why", "--not", "cuml", str(recipe)]) == ExitCode.BAD_INPUT
    assert "does not exclude cuml" in capsys.readouterr().err


def _raw(path: Path) -> dict[tuple[str, str, str], str]:
    """An independent reading (plain YAML, not rattler) of a conda-lock v1 file; the build
    string is the last part of the package file's name."""
    doc = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    out = {}
    for p in doc["package"]:
        stem = p["url"].rsplit("/", 1)[1].removesuffix(".conda").removesuffix(".tar.bz2")
        build = stem.rsplit("-", 2)[2]
        out[(p["platform"], p["manager"], p["name"])] = f"{p['version']} {build}"
    return out


@pytest.mark.slow
def test_diff_of_two_real_pangeo_locks_matches_an_independent_reading(tmp_path, capsys):
    changes = lock_diff(OLD, NEW)
    assert changes == compare(_raw(OLD), _raw(NEW))
    kinds = {c.kind for c in changes}
    assert kinds == {"added", "removed", "changed"}
    dask = next(c for c in changes if c.name == "dask")
    assert (
        dask.kind == "changed"
        and dask.old.startswith("2023.4.1 ")
        and dask.new.startswith("2023.9")
    )
    assert main(["diff", str(OLD), str(NEW), "--markdown"]) == 0
    md = capsys.readouterr().out
    rows = [ln for ln in md.splitlines() if ln.startswith("| linux-64 |")]
    assert len(rows) == len(changes)
    assert f"| linux-64 | dask | changed | {dask.old} | {dask.new} |" in md
    assert main(["diff", str(NEW), str(NEW), "--markdown"]) == 0
    assert "no changes" in capsys.readouterr().out


def test_diff_reads_pixi_locks_too():
    # the holoviews lock against itself, environment by environment: nothing changes
    assert lock_diff(PIXI, PIXI, "test-gpu") == []
    assert lock_diff(PIXI, PIXI) == []


def test_diff_markdown_escapes_control_characters_and_pipes_from_a_lock(tmp_path, capsys):
    text = EXCERPT.read_text()
    assert "  name: cuda-version\n" in text
    hostile = tmp_path / "hostile.conda-lock.yml"
    hostile.write_text(text.replace("  name: cuda-version\n", '  name: "cuda\\0ver|\\e[2J"\n'))
    assert main(["diff", str(EXCERPT), str(hostile), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "\0" not in out and "\x1b" not in out
    assert "| linux-64 | cuda\\x00ver\\|\\x1b[2J | added |" in out
