"""Locks written with conda-lock's models, read back by conda-lock's parser and its CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcheck.atomic import check_writable, write_files_atomically
from envcheck.errors import BadInput
from envcheck.lockfile.condalock import read_lockfile_model
from envcheck.lockfile.pip_package import PipPackage
from envcheck.lockfile.read import read_lock
from envcheck.lockfile.write import conda_lock_text, explicit_text, render_lock_texts
from envcheck.resolve.lockdoc import build_lockfile
from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.solve import solve_specs, virtual_packages
from tests.support.channel import pkg, write_channel, write_recipe

CONDA_LOCK = Path(sys.executable).with_name("conda-lock")
DDP = PipPackage(
    "dask-pytorch-ddp",
    "0.2.2",
    "https://files.pythonhosted.org/packages/8b/26/c89e04f695433fa95c8e914d614bc94c03b7624617c3004c51bbe7ec198a/dask_pytorch_ddp-0.2.2-py3-none-any.whl",
    "cc8038f1efd1545c3f00b9abcfb6b41a0706f686315238d55072df0546659cba",
)


def write_lock(lockfile: Any, name: str, out: Path) -> list[Path]:
    """Write every file of one lock; all of them are replaced, or none."""
    texts = render_lock_texts(lockfile, name, out)
    write_files_atomically({p: t.encode() for p, t in texts.items()})
    return list(texts)


@pytest.fixture
def built(tmp_path: Path):
    """A recipe solved for two platforms against a local channel, and its written lock."""
    url = write_channel(
        tmp_path / "ch",
        [
            pkg("python", "3.9.18", ["__glibc >=2.17", "libzlib >=1.2.13,<2"]),
            pkg("libzlib", "1.2.13", build="h166bdaf_4"),
            pkg("dask", "2022.7.1", ["python >=3.8"], noarch="python"),
        ],
    )
    # the aarch64 half of the channel (noarch is written again, with the same record)
    write_channel(
        tmp_path / "ch",
        [
            pkg("python", "3.9.18", ["__glibc >=2.17"]),
            pkg("dask", "2022.7.1", ["python >=3.8"], noarch="python"),
        ],
        subdir="linux-aarch64",
    )
    recipe_path = write_recipe(
        tmp_path, url, "[python=3.9, dask]",
        "pip: [dask-pytorch-ddp]\nexclude: [{name: cuml, reason: conflicts with cugraph}]\n",
        platforms="[linux-64, linux-aarch64]", system='{glibc: "2.17"}',
    )  # fmt: skip
    recipe = load_recipe(recipe_path)
    vps = {p: virtual_packages(recipe.system, p) for p in recipe.platforms}
    solved = {p: solve_specs(recipe.dependencies, [url], p, vps[p]) for p in recipe.platforms}
    pip = {"linux-64": [DDP], "linux-aarch64": [DDP]}
    lockfile = build_lockfile(recipe, solved, pip, vps, [f"{url} (test channel)"])
    out = tmp_path / "locks"
    out.mkdir()
    paths = write_lock(lockfile, recipe.name, out)
    return recipe, solved, out, paths


def test_lock_files_and_metadata_read_back(built) -> None:
    recipe, solved, out, paths = built
    assert sorted(p.name for p in paths) == [
        "demo.conda-lock.yml",
        "demo.linux-64.lock",
        "demo.linux-aarch64.lock",
    ]
    lock = read_lock(out / "demo.conda-lock.yml")
    assert lock.recipe == "demo" and lock.recipe_hash == recipe.content_hash()
    assert lock.platforms == ("linux-64", "linux-aarch64")
    assert lock.virtual_packages["linux-64"]["__glibc"] == "2.17"
    assert lock.virtual_packages["linux-aarch64"]["__archspec"] == "aarch64"
    assert [(e.name, e.reason) for e in lock.exclusions] == [("cuml", "conflicts with cugraph")]
    assert lock.channel_data[0].endswith("(test channel)")
    conda64 = {n: p for (m, n), p in lock.for_platform("linux-64").items() if m == "conda"}
    assert {n: p.version for n, p in conda64.items()} == {
        "python": "3.9.18",
        "libzlib": "1.2.13",
        "dask": "2022.7.1",
    }
    by_name = {p.name: p for p in solved["linux-64"]}
    assert conda64["libzlib"].md5 == by_name["libzlib"].md5
    assert conda64["libzlib"].url.endswith("/linux-64/libzlib-1.2.13-h166bdaf_4.tar.bz2")
    assert lock.for_platform("linux-64")[("pip", "dask-pytorch-ddp")].sha256 == DDP.sha256


def test_the_written_lock_is_read_line_by_line_as_yaml_reads_it(built) -> None:
    """The writer's own layout (pip records, envcheck metadata) takes the fast path."""
    import yaml

    from envcheck.lockfile.document import fast_document

    text = (built[2] / "demo.conda-lock.yml").read_text()
    fast = fast_document(text)
    assert fast is not None and fast == yaml.safe_load(text)
    assert any(p["manager"] == "pip" for p in fast["package"])


@pytest.mark.slow
def test_conda_lock_parser_and_render_cli_accept_the_lock(built, tmp_path: Path) -> None:
    from conda_lock.lockfile import parse_conda_lock_file

    recipe, solved, out, _ = built
    parsed = parse_conda_lock_file(out / "demo.conda-lock.yml")
    assert parsed.metadata.content_hash == {
        "linux-64": recipe.content_hash(),
        "linux-aarch64": recipe.content_hash(),
    }
    work = tmp_path / "render"
    work.mkdir()
    proc = subprocess.run(
        [str(CONDA_LOCK), "render", "--kind", "explicit", "-p", "linux-64",
         str(out / "demo.conda-lock.yml")],
        cwd=work, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rendered = (work / "conda-linux-64.lock").read_text()
    ours = (out / "demo.linux-64.lock").read_text()
    assert rendered.strip() == ours.strip()
    lines = ours.splitlines()
    assert f"# input_hash: {recipe.content_hash()}" in lines
    body = lines[lines.index("@EXPLICIT") + 1 :]
    by_name = {p.name: p for p in solved["linux-64"]}
    # dependencies first (topological), each url#md5 exactly as solved
    assert body[:3] == [f"{by_name[n].url}#{by_name[n].md5}" for n in ("libzlib", "python", "dask")]
    assert body[3] == f"# pip dask-pytorch-ddp @ {DDP.url}#sha256={DDP.sha256}"


SHIPPED = Path(__file__).resolve().parents[2] / "locks" / "pangeo-ml-2023.10.conda-lock.yml"


@pytest.mark.parametrize("which", ["test lock with pip entries", "shipped pangeo-ml lock"])
def test_lock_texts_match_conda_locks_own_writer_and_renderer(
    built, tmp_path: Path, which: str
) -> None:
    """envcheck reads and dumps with libyaml and renders explicit files itself: conda-lock's
    models and bytes."""
    from conda_lock.conda_lock import render_lockfile_for_platform
    from conda_lock.lockfile import parse_conda_lock_file, write_conda_lock_file

    _, _, out, _ = built
    source = out / "demo.conda-lock.yml" if which.startswith("test") else SHIPPED
    model = read_lockfile_model(source)
    assert model == parse_conda_lock_file(source)
    assert len(model.package) > 3 and model.metadata.custom_metadata
    theirs = tmp_path / source.name
    write_conda_lock_file(model.model_copy(deep=True), theirs, metadata_choices=None)
    assert conda_lock_text(model.model_copy(deep=True), source.name) == theirs.read_text()
    for platform in model.metadata.platforms:
        lines = render_lockfile_for_platform(
            lockfile=model.model_copy(deep=True),
            include_dev_dependencies=False,
            extras=None,
            kind="explicit",
            platform=platform,
            suppress_warning_for_pip_and_explicit=True,
        )
        assert explicit_text(model.model_copy(deep=True), platform) == "\n".join(lines) + "\n"


@pytest.mark.slow
def test_lock_modules_load_without_conda_locks_cli() -> None:
    """conda-lock's package __init__ (its whole CLI) is skipped, and still runs when asked."""
    code = (
        "import sys\n"
        "from envcheck.lockfile import condalock\n"
        "condalock.import_conda_lock()\n"
        "assert 'conda_lock.conda_lock' not in sys.modules, 'CLI imported'\n"
        "import conda_lock\n"
        "from importlib.metadata import version\n"
        "assert conda_lock.__version__ == version('conda-lock'), conda_lock.__version__\n"
        "assert callable(conda_lock.main) and 'conda_lock.conda_lock' in sys.modules\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


def test_read_lock_rejects_missing_and_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        read_lock(tmp_path / "none.conda-lock.yml")
    junk = tmp_path / "junk.conda-lock.yml"
    junk.write_text("version: 2\nmetadata: {}\n")
    with pytest.raises(BadInput, match="not a readable conda-lock file"):
        read_lock(junk)


def test_failed_atomic_write_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    a, b = tmp_path / "a.lock", tmp_path / "b.lock"
    a.write_bytes(b"old a")
    b.write_bytes(b"old b")
    # the second target's directory does not exist: its temp file fails after a's was written
    with pytest.raises(BadInput):
        write_files_atomically({a: b"new a", tmp_path / "gone" / "b.lock": b"new b"})
    assert a.read_bytes() == b"old a" and b.read_bytes() == b"old b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.lock", "b.lock"]  # no temp left
    write_files_atomically({a: b"new a", b: b"new b"})
    assert a.read_bytes() == b"new a" and oct(a.stat().st_mode & 0o777) == "0o644"


def test_check_writable(tmp_path: Path) -> None:
    check_writable(tmp_path / "new" / "dir")
    assert (tmp_path / "new" / "dir").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="cannot be created|not a directory"):
        check_writable(tmp_path / "file")
