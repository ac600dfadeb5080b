"""Every report says when and what ran (time, envcheck's version, host, argv) in JSON, JUnit,
HTML and the text report's last line with -v; --html FILE is on every verb."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from envcheck.cli import COMMANDS, build_parser, main
from envcheck.errors import ExitCode
from envcheck.version import __version__
from tests.support.report_schema import validated

REQUIRED = {("build",): ["r.yaml"], ("install",): ["l.yml", "--prefix", "p"],
            ("image",): ["l.yml", "--os", "rhel7"], ("diff",): ["a", "b"],
            ("why",): ["pkg", "l.yml"], ("completion",): ["bash"],
            ("recipe", "new"): ["--rapids", "22.08", "--cuda", "11.5", "--os", "el7"],
            ("recipe", "import"): ["environment.yml"]}


@pytest.mark.parametrize("path", list(COMMANDS))
def test_every_verb_takes_html(path: tuple[str, ...]) -> None:
    argv = [*path, *REQUIRED.get(path, []), "--html", "r.html"]
    assert build_parser(argv).parse_args(argv).html == Path("r.html")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.classes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.classes.append(dict(attrs).get("class") or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_one_run_stamps_json_junit_html_and_the_verbose_text_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {kind: tmp_path / f"r.{kind}" for kind in ("json", "junit", "html")}
    argv = ["verify", "node", "-v", *(a for k, p in files.items() for a in (f"--{k}", str(p)))]
    rc = main(argv)
    assert rc in (ExitCode.OK, ExitCode.WARN, ExitCode.FAIL)
    run = validated(files["json"])["run"]
    assert run["envcheck"] == __version__ and run["host"] == socket.gethostname()
    assert run["argv"] == ["envcheck", *argv]
    suite = ET.parse(files["junit"]).getroot().find("testsuite")
    assert suite is not None and suite.get("timestamp") == run["time"]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["envcheck.version"] == __version__ and props["envcheck.time"] == run["time"]
    assert props["envcheck.argv"] == " ".join(["envcheck", *argv])
    page = files["html"].read_text()
    assert page.startswith("<!doctype html>") and "<title>envcheck verify node" in page
    parsed = _Text()
    parsed.feed(page)
    text = "".join(parsed.text)
    assert f"envcheck {__version__} on {run['host']} at {run['time']}" in text
    assert "envcheck-run" in parsed.classes
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last == f"envcheck {__version__} on {run['host']} at {run['time']}: " + " ".join(
        ["envcheck", *argv])


def test_without_v_the_text_report_has_no_stamp(capsys: pytest.CaptureFixture[str]) -> None:
    main(["verify", "node"])
    assert f"envcheck {__version__} on" not in capsys.readouterr().out


def test_a_refused_run_still_writes_its_html_page(tmp_path: Path) -> None:
    """A run that fails as a whole (a missing recipe, exit 4) writes an error page."""
    page = tmp_path / "r.html"
    rc = main(["build", str(tmp_path / "missing.yaml"), "--html", str(page)])
    assert rc == ExitCode.BAD_INPUT
    html = page.read_text()
    assert "ERROR" in html and "missing.yaml" in html and "(exit 4)" in html


def test_html_to_stdout_is_the_page_alone(tmp_path: Path) -> None:
    env = Path(__file__).parent.parent / "data" / "environment-yml" / "pytorch-environment.yml"
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "recipe", "import", str(env), "--html", "-"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("<!doctype html>") and proc.stdout.rstrip().endswith("</html>")
    assert "name: pytorch-cuda" in proc.stderr or "name: pytorch-cuda" in proc.stdout


def test_the_api_s_report_is_stamped_as_it_is_written(tmp_path: Path) -> None:
    from envcheck.report import Report, Result, Status, write_json

    path = tmp_path / "r.json"
    write_json(Report("t", (Result("c", Status.PASS, "ok"),)), path)
    assert json.loads(path.read_text())["run"]["envcheck"] == __version__


def test_bare_envcheck_prints_the_help_and_exits_0() -> None:
    proc = subprocess.run([sys.executable, "-m", "envcheck"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: envcheck") and "start here:" in proc.stdout
    assert proc.stderr == ""


TITLED = {
    ("verify", "node"): [],
    ("slurm", "script"): [],
    ("docs",): ["exit-codes"],
    ("recipe", "import"): [str(Path(__file__).parent.parent / "data" / "environment-yml"
                               / "pytorch-environment.yml")],
    ("build",): ["--check", str(Path(__file__).parent.parent / "data" / "environment-yml"
                                / "pytorch-environment.yml"), "--out", "{tmp}/locks"],
    ("verify", "node", "--list-checks"): [],
}


@pytest.mark.parametrize("path", list(TITLED), ids=" ".join)
def test_every_report_is_titled_envcheck_and_its_verb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: tuple[str, ...]
) -> None:
    out = tmp_path / "r.json"
    args = [a.replace("{tmp}", str(tmp_path)) for a in TITLED[path]]
    main([*path, *args, "--json", str(out)])
    assert json.loads(out.read_text())["title"] == "envcheck " + " ".join(path)
