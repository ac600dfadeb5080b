"""Every path a verb writes is a regular file or absent: device nodes (made with mknod), FIFOs,
symbolic links to devices and directories are refused in one line, exit 4, before any work,
and stay what they were. Every verb that takes --json/--junit writes them on every exit."""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from tests.support.channel import demo_channel
from tests.support.channel import write_recipe as recipe
from tests.support.report_schema import validated

ROOT = os.geteuid() == 0
LOCK = "locks/pangeo-ml-2023.10.conda-lock.yml"
RECIPE_NEW = ["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el7"]


def _verbs(tmp: Path) -> dict[str, list[str]]:
    """Arguments that parse, for every verb; each fails fast or writes once its run starts."""
    return {
        "build": ["build", str(recipe(tmp, demo_channel(tmp / "ch"), "[python=3.9]")),
                  "--out", str(tmp / "locks")],
        "install": ["install", LOCK, "--prefix", str(tmp / "env")],
        "image": ["image", LOCK, "--os", "centos7", "--print"],
        "diff": ["diff", LOCK, LOCK],
        "why": ["why", "dask", LOCK],
        "recipe new": RECIPE_NEW,
        "verify node": ["verify", "node", "--no-plugins"],
        "verify cluster": ["verify", "cluster", "tcp://127.0.0.1:9", "--timeout", "1"],
        "slurm script": ["slurm", "script"],
    }  # fmt: skip


WRITERS = [(verb, flag) for verb in (
    "build", "install", "image", "diff", "why", "recipe new", "verify node", "verify cluster",
    "slurm script") for flag in ("--json", "--junit")] + [("recipe new", "--out")]  # fmt: skip


def _char_device(path: Path, minor: int) -> None:
    """A copy of /dev/full (1, 7) or /dev/null (1, 3)."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))


def _hostile(kind: str, tmp: Path) -> tuple[Path, Path, int]:
    """(the path to give, the node that must survive, its file type)."""
    node = tmp / f"node-{kind}"
    if kind == "full":
        _char_device(node, 7)
        return node, node, stat.S_IFCHR
    if kind == "null":
        _char_device(node, 3)
        return node, node, stat.S_IFCHR
    if kind == "fifo":
        os.mkfifo(node)
        return node, node, stat.S_IFIFO
    if kind == "symlink-to-null":
        _char_device(node, 3)
        link = tmp / "link"
        link.symlink_to(node)
        return link, node, stat.S_IFCHR
    node.mkdir()
    return node, node, stat.S_IFDIR


KINDS = ["full", "null", "fifo", "symlink-to-null", "directory"]


@pytest.mark.skipif(not ROOT, reason="mknod of a character device needs root")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("verb", "flag"), WRITERS, ids=[f"{v}{f}" for v, f in WRITERS])
def test_a_writer_refuses_anything_but_a_regular_file(tmp_path, capsys, verb, flag, kind):
    argv = _verbs(tmp_path)[verb]
    given, node, kind_bits = _hostile(kind, tmp_path)
    assert main([*argv, flag, str(given)]) == ExitCode.BAD_INPUT
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and str(given) in err[0] and "regular file" in err[0], err
    assert stat.S_IFMT(os.stat(node).st_mode) == kind_bits
    if flag != "--out":  # refused before any work: nothing printed, no lock, no env
        assert captured.out == ""
    assert not (tmp_path / "locks").exists() and not (tmp_path / "env").exists()


@pytest.mark.skipif(not ROOT, reason="mknod of a character device needs root")
@pytest.mark.parametrize("kind", KINDS)
def test_build_refuses_a_lock_path_that_is_not_a_regular_file(tmp_path, capsys, kind):
    argv = _verbs(tmp_path)["build"]
    out = tmp_path / "locks"
    out.mkdir()
    given, node, kind_bits = _hostile(kind, tmp_path)
    os.replace(given, out / "demo.conda-lock.yml")  # the link moves as a link
    moved = out / "demo.conda-lock.yml"
    assert main(argv) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "demo.conda-lock.yml" in err[0] and "regular file" in err[0], err
    survivor = node if kind == "symlink-to-null" else moved
    assert stat.S_IFMT(os.stat(survivor).st_mode) == kind_bits
    assert sorted(p.name for p in out.iterdir()) == ["demo.conda-lock.yml"]


def test_json_and_junit_naming_one_file_is_refused(tmp_path, capsys):
    same = tmp_path / "r"
    rc = main(["slurm", "script", "--json", str(same), "--junit", str(tmp_path / "." / "r")])
    assert rc == ExitCode.BAD_INPUT and not same.exists()
    assert "name the same file" in capsys.readouterr().err


# --- every exit writes the reports ------------------------------------------------------------

FAILING = {
    # verb: (arguments, exit code, words of the one line)
    "build": (["build", "no-such-recipe.yaml"], ExitCode.BAD_INPUT, "no-such-recipe.yaml"),
    "install": (["install", "no-such.lock", "--prefix", "{tmp}/env"], ExitCode.BAD_INPUT,
                "no-such.lock"),
    "image": (["image", "no-such.lock", "--os", "centos7"], ExitCode.BAD_INPUT, "no-such.lock"),
    "diff": (["diff", LOCK, "no-such.lock"], ExitCode.BAD_INPUT, "no-such.lock"),
    "why": (["why", "no-such-package", LOCK], ExitCode.BAD_INPUT, "no-such-package is not in"),
    "recipe new": (["recipe", "new", "--rapids", "24.06", "--cuda", "12.2", "--os", "el7"],
                   ExitCode.UNSOLVABLE, "glibc"),
    "verify node": (["verify", "node", "--kernel-log", "{tmp}/nope.log"], ExitCode.BAD_INPUT,
                    "nope.log does not exist"),
    "verify cluster": (["verify", "cluster", "tcp://127.0.0.1:9", "--timeout", "1"],
                       ExitCode.UNREACHABLE, "127.0.0.1:9"),
    "slurm script": (["slurm", "script", "--nodes", "0"], ExitCode.BAD_INPUT, "--nodes"),
}  # fmt: skip


@pytest.mark.parametrize("verb", sorted(FAILING))
def test_a_failed_run_still_writes_its_json_and_junit(tmp_path, capsys, verb):
    argv, code, words = FAILING[verb]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    js, xml = tmp_path / "r.json", tmp_path / "r.xml"
    assert main([*argv, "--json", str(js), "--junit", str(xml)]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    report = validated(js)
    assert report["status"] == "error" and report["exit_code"] == int(code)
    assert [r["status"] for r in report["results"]] == ["error"]
    assert report["results"][0]["message"] == err[0].removeprefix("envcheck: ")
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    assert suite.find("testcase/error").get("message") == report["results"][0]["message"]


def test_install_diff_and_recipe_new_write_json_on_success(tmp_path, capsys):
    js = tmp_path / "r.json"
    assert main(["diff", LOCK, LOCK, "--markdown", "--json", str(js)]) == 0
    assert validated(js)["results"][0]["check"] == "diff"
    assert "no changes" in capsys.readouterr().out
    assert main([*RECIPE_NEW, "--json", str(js)]) == 0
    out = capsys.readouterr().out
    report = validated(js)
    assert report["output"] == out and out.startswith("# RAPIDS 22.08")
