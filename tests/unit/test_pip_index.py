"""Extra pip indexes in a recipe, and placeholder sdists told from an index's file list."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from envcheck.errors import BadInput
from envcheck.resolve.placeholder import from_build_failure, is_placeholder
from envcheck.resolve.pypi_index import IndexFile
from envcheck.resolve.recipe import load_recipe

RECIPE = """name: r
channels: [conda-forge]
platforms: [linux-64]
dependencies: [python=3.12]
pip: [cuml-cu12==25.8.*]
"""


def _file(filename: str) -> IndexFile:
    if filename.endswith(".whl"):
        _, version, _, tags = parse_wheel_filename(filename)
        return IndexFile(filename, f"https://x/{filename}", "0" * 64, version, tags, "", False)
    version = Version(filename.rsplit("-", 1)[1].removesuffix(".tar.gz"))
    return IndexFile(filename, f"https://x/{filename}", "0" * 64, version, frozenset(), "", False)


def test_a_recipe_names_extra_indexes_and_they_decide_the_lock(tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text(RECIPE)
    extra = tmp_path / "extra.yaml"
    extra.write_text(RECIPE + "pip_extra_index: ['https://pypi.nvidia.com/']\n")
    a, b = load_recipe(plain), load_recipe(extra)
    assert a.pip_extra_index == () and b.pip_extra_index == ("https://pypi.nvidia.com",)
    assert "pip_extra_index" not in a.hashed_content()  # locks without it stay current
    assert a.content_hash() != b.content_hash()
    bad = tmp_path / "bad.yaml"
    bad.write_text(RECIPE + "pip_extra_index: ['pypi.nvidia.com']\n")
    with pytest.raises(BadInput, match="pip_extra_index: 'pypi.nvidia.com' is not an http"):
        load_recipe(bad)


def test_an_sdist_only_nvidia_package_is_a_placeholder_and_one_with_wheels_is_not() -> None:
    sdist = [_file("cuml_cu12-25.8.0.tar.gz")]
    assert is_placeholder("cuml-cu12", sdist)
    wheel = "cuml_cu12-26.10.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert not is_placeholder("cuml-cu12", [*sdist, _file(wheel)])
    assert not is_placeholder("somepkg", [_file("somepkg-1.0.tar.gz")])  # a plain sdist
    assert is_placeholder("somepkg", [_file("somepkg-1.0.tar.gz")],
                          "downloads a real wheel package from https://pypi.nvidia.com/")


def test_uv_s_build_failure_names_the_placeholder_and_the_index_to_add() -> None:
    stderr = "error: Failed to build `cuml-cu12==25.8.0`\n  Caused by: ..."

    def files(name: str, version: str) -> list[IndexFile]:
        assert (name, version) == ("cuml-cu12", "25.8.0")
        return [_file("cuml_cu12-25.8.0.tar.gz")]

    got = from_build_failure(stderr, files, "https://pypi.org/simple", ())
    assert got is not None and "add it to the recipe: pip_extra_index: [" in got.message
    named = from_build_failure(stderr, files, "https://pypi.org/simple",
                               ("https://pypi.nvidia.com",))  # fmt: skip
    assert named is not None and "is among the recipe's pip_extra_index" in named.message
    assert from_build_failure("error: Failed to build `x==1`", lambda n, v: [], "u", ()) is None


def test_an_index_that_serves_only_pep_503_html_is_read_with_its_sha256_fragments() -> None:
    from envcheck.resolve.pip import Target
    from envcheck.resolve.pypi_index import Page, best_file, html_entries

    wheel = "cuml_cu12-25.8.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    text = (f'<html><body><a href="../../packages/{wheel}#sha256={"a" * 64}" '
            'data-requires-python="&gt;=3.10">x</a>'
            '<a href="https://h/cuml_cu12-25.6.0.tar.gz" data-yanked="">y</a></body></html>')
    entries = html_entries(text, "https://pypi.nvidia.com/cuml-cu12/")
    page = Page("cuml-cu12", entries)
    target = Target.of("3.12", "linux-64", {"glibc": "2.28"})
    f = best_file(page, "25.8.0", target.tags)
    assert f is not None and f.url == f"https://pypi.nvidia.com/packages/{wheel}"
    assert f.sha256 == "a" * 64 and f.requires_python == ">=3.10"
    assert entries[1]["yanked"] is True and entries[1]["hashes"] == {}
