"""Recipe loading: the contract's keys, strict validation, errors that name file, line and key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from envcheck.errors import BadInput
from envcheck.resolve.recipe import Exclusion, load_recipe

GOOD = """\
name: rapids-22.08-el7
description: >
  RAPIDS 22.08 for the A100 and RTX3090 servers
channels: [rapidsai, nvidia, conda-forge]
platforms: [linux-64]
system: {cuda: 11.10, glibc: "2.17"}
dependencies:
  - python=3.9
  - dask-cuda=22.08
  - pytorch * *cuda*
pip:
  - dask-pytorch-ddp==0.2.2
exclude:
  - {name: cuml, reason: "conflicts with cugraph in 22.08"}
targets: ["A100x8, RHEL 7.5", "RTX3090x4, CentOS 7"]
notes: pins come from rapidsai/integration versions.yaml
"""


def write(tmp_path: Path, text: str, name: str = "r.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_loads_every_contract_key(tmp_path: Path) -> None:
    r = load_recipe(write(tmp_path, GOOD))
    assert r.name == "rapids-22.08-el7"
    assert r.description == "RAPIDS 22.08 for the A100 and RTX3090 servers"
    assert r.channels == ("rapidsai", "nvidia", "conda-forge")
    assert r.platforms == ("linux-64",)
    # the raw text, not YAML's float: 11.10 stays 11.10
    assert dict(r.system) == {"cuda": "11.10", "glibc": "2.17"}
    assert r.dependencies == ("python=3.9", "dask-cuda=22.08", "pytorch * *cuda*")
    assert r.pip == ("dask-pytorch-ddp==0.2.2",)
    assert r.exclude == (Exclusion("cuml", "conflicts with cugraph in 22.08"),)
    assert r.targets == ("A100x8, RHEL 7.5", "RTX3090x4, CentOS 7")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        r.system["cuda"] = "12.0"  # type: ignore[index]


def test_content_hash_follows_what_decides_the_lock(tmp_path: Path) -> None:
    base = load_recipe(write(tmp_path, GOOD)).content_hash()
    reworded = GOOD.replace("for the A100", "for both").replace("pins come", "pins came")
    assert load_recipe(write(tmp_path, reworded, "b.yaml")).content_hash() == base
    repinned = GOOD.replace("dask-cuda=22.08", "dask-cuda=22.10")
    assert load_recipe(write(tmp_path, repinned, "c.yaml")).content_hash() != base
    new_glibc = GOOD.replace('glibc: "2.17"', 'glibc: "2.28"')
    assert load_recipe(write(tmp_path, new_glibc, "d.yaml")).content_hash() != base
    assert len(base) == 64


MINIMAL = "name: x\nchannels: [conda-forge]\nplatforms: [linux-64]\ndependencies: [python]\n"


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ("name: x\nchannels: [a\nplatforms: [linux-64]\n", ":3:10:", "malformed YAML"),
        ("name: x\n  bad: indent\n", ":2:6:", "malformed YAML"),
        (MINIMAL + "colour: blue\n", ":5:1:", "colour: unknown key"),
        (MINIMAL.replace("[python]", '[python, "numpy >>=1"]'), ":4:24:", "not a conda match spec"),
        (MINIMAL + 'pip: ["requests >>> 2"]\n', ":5:7:", "not a PEP 508 requirement"),
        (MINIMAL.replace("linux-64", "linux-65"), ":3:13:", "unknown platform 'linux-65'"),
        (MINIMAL + "system: {cuda: abc!}\n", ":5:16:", "system.cuda: 'abc!' is not a version"),
        (MINIMAL + "system: {gpu: a100}\n", ":5:10:", "system.gpu: unknown key"),
        (MINIMAL + "name: y\n", ":5:1:", "name: appears twice"),
        (MINIMAL.replace("[python]", "[python, python=3.9]"), ":4:24:", "python is listed twice"),
        (MINIMAL + "exclude: [{name: python, reason: r}]\n", ":5:18:", "also a dependency"),
        (MINIMAL + "exclude: [{name: cuml}]\n", ":5:11:", "exclude[0].reason: missing"),
        (MINIMAL.replace("dependencies: [python]\n", ""), ":1:1:", "dependencies: missing"),
        (MINIMAL.replace("[conda-forge]", "[ftp://x/ch]"), ":2:12:", "only https://"),
        (MINIMAL.replace("[conda-forge]", "['https://exa mple.org/ch']"), ":2:12:", "parse url"),
        (MINIMAL.replace("name: x", "name: My Env"), ":1:7:", "must be lower-case"),
        (MINIMAL.replace("[python]", "python"), ":4:15:", "expected a list"),
    ],
)
def test_bad_recipes_name_file_line_and_key(
    tmp_path: Path, text: str, where: str, says: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(BadInput) as e:
        load_recipe(path)
    msg = e.value.message
    assert msg.startswith(f"{path}{where}"), msg
    assert says in msg
    assert "\n" not in msg


def test_missing_and_empty_recipe_files(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        load_recipe(tmp_path / "nope.yaml")
    with pytest.raises(BadInput, match="empty"):
        load_recipe(write(tmp_path, "# nothing\n"))
    with pytest.raises(BadInput, match="expected a mapping"):
        load_recipe(write(tmp_path, "- a\n- b\n"))
