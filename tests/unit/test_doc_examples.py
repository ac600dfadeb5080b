"""Every shell example in README.md and docs/ works: the ```bash blocks are run, one command at
a time, in a sandbox directory (a copy of recipes/ and locks/) with the launchers and tools
that cannot run here (srun, sbatch, torchrun, mpirun, horovodrun, ray, ...) as stubs on PATH
that record their argv; each command's exit code is checked against its ``# exit N`` comment
(0 when it has none). A block with a ``# doc-test: parse-only: WHY`` line (it needs
GPUs, a cluster, a network or installs into the environment) is checked without running:
``bash -n`` parses it and every envcheck command in it parses with envcheck's own parser, as
do the ``$ `` commands of ```console transcripts. ```text blocks are synopses and output."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PARSE_ONLY = "# doc-test: parse-only:"
STUBS = ("srun", "sbatch", "scontrol", "squeue", "torchrun", "mpirun", "horovodrun", "ray",
         "micromamba", "conda", "conda-lock", "git")
OPERATORS = {"&&", "||", ";", "|", "&", "(", ")", "$("}
REDIRECTIONS = {">", ">>", "<", "2>", "&>", "2>&1", ">&"}


def _blocks() -> list[tuple[str, str, str]]:
    """(where, language, text) of every fenced bash or console block."""
    found = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"^```(\w*)\s*$", lines[i])
            if not m:
                i += 1
                continue
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            if m.group(1) in ("bash", "console"):
                where = f"{path.relative_to(ROOT)}:{i + 1}"
                found.append((where, m.group(1), "\n".join(lines[i + 1:j])))
            i = j + 1
    return found


BLOCKS = _blocks()


def _commands(text: str, console: bool) -> list[str]:
    """The block's commands, continuation lines joined; comment-only lines dropped (a
    console block: its ``$ `` lines only)."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if console and not pending:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1]
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line)
    return out


def _envcheck_argvs(command: str) -> list[list[str]]:
    """The arguments of every envcheck run in ``command`` (``envcheck ...``, ``python -m
    envcheck ...``, or under a launcher: ``srun envcheck ...``, ``torchrun -m envcheck ...``)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    simple: list[list[str]] = [[]]
    for token in lexer:
        if token in OPERATORS:
            simple.append([])
        else:
            simple[-1].append(token)
    argvs = []
    for words in simple:
        cut = next((i for i, w in enumerate(words) if w in REDIRECTIONS), len(words))
        words = words[:cut]
        at = next((i for i, w in enumerate(words) if w == "envcheck" or w.endswith("/envcheck")),
                  None)
        if at is not None:
            argvs.append(words[at + 1:])
    return argvs


def _parses(argv: list[str], where: str) -> None:
    parser = build_parser(argv)
    try:
        parser.parse_args(argv)
    except SystemExit as e:  # --help exits 0; anything else is a refusal of the example
        assert e.code == 0, f"{where}: envcheck {shlex.join(argv)} does not parse"


@pytest.mark.parametrize(("where", "language", "text"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_every_shell_example_parses(where: str, language: str, text: str) -> None:
    commands = _commands(text, language == "console")
    assert commands, f"{where}: a {language} block without a command"
    script = "\n".join(commands)
    proc = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert proc.returncode == 0, f"{where}: bash -n: {proc.stderr}"
    for command in commands:
        if _expected_exit(command) == 4:  # an example of bad input: refused as it shows
            continue
        for argv in _envcheck_argvs(command):
            _parses(argv, where)


def _parse_only(text: str) -> str:
    """The reason a block gives for not being run ("" when it is run)."""
    line = next((ln for ln in text.splitlines() if ln.startswith(PARSE_ONLY)), "")
    return line[len(PARSE_ONLY):].strip()


RUN = [b for b in BLOCKS if b[1] == "bash" and PARSE_ONLY not in b[2]]


def _sandbox(tmp_path: Path) -> dict[str, str]:
    """A working directory with copies of recipes/ and locks/, stubs first on PATH."""
    for name in ("recipes", "locks"):
        shutil.copytree(ROOT / name, tmp_path / name)
    stubs = tmp_path / ".stubs"
    stubs.mkdir()
    log = tmp_path / ".stub-argv"
    for name in STUBS:
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n')
        stub.chmod(0o755)
    envcheck = stubs / "envcheck"
    envcheck.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m envcheck "$@"\n')
    envcheck.chmod(0o755)
    python = stubs / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(ROOT), "COLUMNS": "100", "ENVCHECK_CACHE_DIR": str(tmp_path / ".c")}


def _expected_exit(command: str) -> int:
    m = re.search(r"#.*\bexit (\d+)", command)
    return int(m.group(1)) if m else 0


@pytest.mark.slow
@pytest.mark.parametrize(("where", "language", "text"), RUN, ids=[b[0] for b in RUN])
def test_every_runnable_shell_example_runs_with_its_exit_code(
    where: str, language: str, text: str, tmp_path: Path
) -> None:
    env = _sandbox(tmp_path)
    for command in _commands(text, console=False):
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        want = _expected_exit(command)
        assert proc.returncode == want, (
            f"{where}: `{command}` exited {proc.returncode}, not {want}\n"
            f"{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}"
        )
        assert "Traceback" not in proc.stderr, f"{where}: {command}\n{proc.stderr}"


def test_the_launcher_stubs_see_the_envcheck_arguments(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    command = "srun -N2 envcheck verify job --bench && torchrun -m envcheck verify job"
    assert [a for a in _envcheck_argvs(command)] == [["verify", "job", "--bench"],
                                                      ["verify", "job"]]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, check=True)
    assert (tmp_path / ".stub-argv").read_text().splitlines() == [
        "srun -N2 envcheck verify job --bench", "torchrun -m envcheck verify job"]


def test_every_bash_and_console_block_is_found_and_parse_only_says_why() -> None:
    assert len(BLOCKS) >= 15, [b[0] for b in BLOCKS]
    assert len(RUN) >= 3, [b[0] for b in RUN]
    for where, _, text in BLOCKS:
        if PARSE_ONLY in text:
            assert len(_parse_only(text)) > 5, f"{where}: parse-only without a reason"


def test_the_readme_opens_with_its_two_commands_then_the_five_jobs() -> None:
    (where, _, first), (_, _, jobs) = BLOCKS[:2]
    assert where.startswith("README.md")
    assert _commands(first, console=False)[:2] == [
        "pip install . && envcheck verify cluster",
        "pip install -e '.[test]' && ruff check . "
        "&& python -m pytest -q -n 3 --dist loadgroup --durations=25",
    ]
    command = "python -m pytest -q -n 3 --dist loadgroup --durations=25"
    assert command in (ROOT / ".ci" / "run").read_text()
    jobs = _commands(jobs, console=False)
    assert len(jobs) == 5
    for n, job in enumerate(jobs, 1):
        assert f"# {n}. " in job, job
