"""The lock reader's fast path gives exactly what PyYAML gives, on every real and big lock.

``fast_document`` reads conda-lock's own layout line by line and declines anything else;
``load_document`` then falls back to PyYAML. Where the fast path answers, it must equal PyYAML's
document; on the locks shipped and the real ones in tests/data it must answer.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from envcheck.lockfile import document
from envcheck.lockfile.document import fast_document, load_document
from envcheck.lockfile.read import read_lock
from tests.support.big_locks import SORTED_LAYOUT, WRITERS_LAYOUT, big_lock_text

ROOT = Path(__file__).resolve().parents[2]
CONDA_LOCKS = sorted((ROOT / "locks").glob("*.conda-lock.yml")) + sorted(
    (ROOT / "tests" / "data").glob("*.conda-lock.yml")
)
PIXI_LOCKS = sorted((ROOT / "tests" / "data").glob("*pixi.lock"))


def by_yaml(text: str) -> Any:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


def test_the_locks_are_found() -> None:
    assert len(CONDA_LOCKS) >= 5 and PIXI_LOCKS


@pytest.mark.parametrize("path", CONDA_LOCKS, ids=lambda p: p.name)
def test_fast_path_reads_every_real_lock_as_yaml_does(path: Path) -> None:
    text = path.read_text()
    fast = fast_document(text)
    assert fast is not None, "conda-lock's layout not recognised"
    assert fast == by_yaml(text)


@pytest.mark.parametrize("path", PIXI_LOCKS, ids=lambda p: p.name)
def test_a_pixi_lock_is_left_to_yaml(path: Path) -> None:
    assert fast_document(path.read_text()) is None


@pytest.mark.slow
@pytest.mark.parametrize("template", [WRITERS_LAYOUT, SORTED_LAYOUT], ids=["writer", "sorted"])
def test_fast_path_reads_big_locks_as_yaml_does(template: Path) -> None:
    text = big_lock_text(5000, template)
    fast = fast_document(text)
    assert fast is not None and len(fast["package"]) == 5000
    assert fast == by_yaml(text)


@pytest.mark.parametrize("path", [CONDA_LOCKS[0], SORTED_LAYOUT], ids=lambda p: p.name)
def test_verify_reads_the_same_packages_either_way(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = read_lock(path)
    monkeypatch.setattr(document, "fast_document", lambda text: None)
    assert read_lock(path) == fast


HEAD = "version: 1\nmetadata:\n  platforms:\n  - linux-64\npackage:\n"
RECORD = "- name: a\n  version: '1.0'\n  manager: conda\n  platform: linux-64\n  url: u\n"
# (records text, whether the fast path must answer)
CASES = {
    "quoted": ("- name: 'it''s'\n  version: ''\n", True),
    "yaml 1.1 words": ("- name: yes\n  on: off\n  optional: false\n  x: null\n  y: ~\n", True),
    "empty nested is null": ("- hash:\n  name: a\n- dependencies:\n", True),
    "fresh empties": ("- a: {}\n  b: []\n  c: {}\n- a: {}\n", True),
    "nested": ("- hash:\n    md5: 0123abcd\n    sha256: 1e5\n  name: a\n", True),
    "unicode": ("- name: caf\u00e9\n  url: https://h/\u00fc.conda\n", True),
    "trailing key": (RECORD + "version: 2\n", True),
    "numbers": ("- name: a\n  version: 1.10\n", False),
    "comment": (RECORD + "# note\n" + RECORD, False),
    "blank line": (RECORD + "\n" + RECORD, False),
    "tab": ("- name:\ta\n", False),
    "crlf": ("- name: a\r\n", False),
    "flow": ("- name: a\n  categories: [main]\n", False),
    "deeper": ("- hash:\n    md5:\n      x: y\n", False),
    "double quoted": ('- name: "a"\n', False),
    "alias": ("- name: &x a\n  other: *x\n", False),
    "colon in value": ("- name: a: b\n", False),
    "markers": ("...\n" + RECORD, False),
    "second package key": (RECORD + "package: []\n", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fast_path_answers_as_yaml_or_declines(case: str) -> None:
    records, answers = CASES[case]
    text = HEAD + records
    try:
        expected = by_yaml(text)
    except yaml.YAMLError:
        expected = "an error"
    fast = fast_document(text)
    assert (fast is not None) == answers
    if fast is not None:
        assert fast == expected
    if expected != "an error":
        assert load_document(text) == expected


def test_empty_mappings_are_new_objects() -> None:
    doc = fast_document(HEAD + "- a: {}\n- a: {}\n")
    assert doc is not None and doc["package"][0]["a"] is not doc["package"][1]["a"]


def test_verify_side_of_the_lock_package_needs_no_build_extra() -> None:
    """model, names and read import nothing of resolve, provision, verify, rattler, conda-lock."""
    import subprocess
    import sys

    code = (
        "import sys, envcheck.lockfile.read, envcheck.lockfile.names\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('rattler', 'conda_lock')"
        " or m.startswith(('envcheck.resolve', 'envcheck.provision', 'envcheck.verify'))]\n"
        "assert not bad, bad\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for path in (ROOT / "envcheck" / "lockfile").glob("*.py"):
        text = path.read_text()
        assert "envcheck.verify" not in text and "envcheck.provision" not in text, path


def _with_a_second_cuda_version(tmp_path: Path) -> Path:
    """The pangeo excerpt with a second record of cuda-version (12.0) for linux-64."""
    text = (ROOT / "tests" / "data" / "pangeo-pytorch-excerpt.conda-lock.yml").read_text()
    start = text.index("- category: main\n  dependencies: {}\n")
    end = text.index("- category: main", start + 1)
    record = text[start:end]
    assert "name: cuda-version" in record
    second = record.replace("cuda-version-11.8-", "cuda-version-12.0-").replace(
        "version: '11.8'", "version: '12.0'")
    path = tmp_path / "twice.conda-lock.yml"
    path.write_text(text[:end] + second + text[end:])
    return path


def test_a_package_listed_twice_for_one_platform_is_refused_naming_both(tmp_path, capsys):
    from envcheck.cli import main
    from envcheck.errors import BadInput

    path = _with_a_second_cuda_version(tmp_path)
    both = ("linux-64 lists conda package cuda-version twice: 11.8 h70ddcb2_2 "
            "(cuda-version-11.8-h70ddcb2_2.conda) and 12.0 h70ddcb2_2 "
            "(cuda-version-12.0-h70ddcb2_2.conda)")
    for records in (False, True):  # envcheck's reader and py-rattler's (install's)
        with pytest.raises(BadInput, match=re.escape(both)):
            read_lock(path, "linux-64", records=records)
    # install reads the plan with py-rattler: refused before anything is fetched
    assert main(["install", str(path), "--prefix", str(tmp_path / "env")]) == 4
    assert both in capsys.readouterr().err and not (tmp_path / "env").exists()
    assert main(["verify", "node", "--lock", str(path), "--quiet"]) == 4
    assert both in capsys.readouterr().err
