"""`envcheck completion bash|zsh` is sourced by a real bash and completes verbs and flags the
parser takes; --help lists every exit code; -q and -v work on every verb."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.cli import COMMANDS, EPILOG, build_parser
from envcheck.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]


def _script(shell: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "envcheck", "completion", shell],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    return proc.stdout


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (the line `envcheck WORDS<TAB>`)."""
    line = " ".join(f"'{w}'" for w in ("envcheck", *words))
    cmd = (f"source {script} && complete -p envcheck && COMP_WORDS=({line}) && "
           f"COMP_CWORD={len(words)} && _envcheck && printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60,
                         check=True).stdout.splitlines()
    assert out[0] == "complete -o default -F _envcheck envcheck"
    return out[1:]


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "envcheck.bash"
    path.write_text(_script("bash"))
    return path


def test_bash_completes_verbs_subverbs_and_flags(bash_script):
    assert _complete(bash_script, "ver") == ["verify"]
    assert _complete(bash_script, "verify", "") == ["cluster", "job", "node", "ray"]
    assert "--expect-gpus" in _complete(bash_script, "verify", "node", "--expect")
    assert _complete(bash_script, "recipe", "new", "--rap") == ["--rapids"]
    # flags typed before the cursor do not change which verb is completed
    assert "--markdown" in _complete(bash_script, "diff", "--quiet", "--m")


def test_a_flags_values_are_offered_where_its_value_goes(bash_script):
    assert _complete(bash_script, "verify", "node", "--level", "") == ["1", "2", "3"]
    assert _complete(bash_script, "verify", "node", "--level", "2") == ["2"]
    smoke = _complete(bash_script, "verify", "cluster", "--smoke", "")
    assert {"all", "none", "submit", "torch-ddp", "xgboost"} <= set(smoke)
    assert not [w for w in smoke if w.startswith("-")]
    assert "el7" in _complete(bash_script, "recipe", "new", "--os", "")
    assert _complete(bash_script, "image", "x.yml", "--os", "") == ["rhel7", "centos7"]
    # a value with no list (a file, a number): nothing offered, so bash completes file names
    for flag in ("--json", "--load-seconds"):  # printf prints one empty line for no words
        assert _complete(bash_script, "verify", "node", flag, "") in ([], [""])
    # after the value, flags again
    assert "--lock" in _complete(bash_script, "verify", "node", "--level", "2", "--lo")


def test_every_smoke_name_offered_is_one_smoke_takes():
    from envcheck.verify.cluster.options import SMOKE_WORDS, smoke_selection
    from envcheck.verify.smoke.suite import SMOKE_TESTS

    assert set(SMOKE_WORDS) == {"all", "none", *SMOKE_TESTS}
    for word in SMOKE_WORDS:
        smoke_selection(word)  # BadInput for a name --smoke does not take


def test_every_verb_is_offered(bash_script):
    offered = set(_complete(bash_script, ""))
    assert {path[0] for path in COMMANDS} <= offered and "--version" in offered


@pytest.mark.zsh  # tests/conftest.py: skipped without zsh, failed under ENVCHECK_TESTS_REQUIRE_ALL
def test_zsh_loads_it(tmp_path):
    """A bare zsh (no rc file, so no compinit) sources it: zsh's completion system holds
    envcheck, and the function it runs (as _bash_complete runs it: sh emulation) offers the verbs
    and, after `verify`, verify's verbs."""
    path = tmp_path / "envcheck.zsh"
    path.write_text(_script("zsh"))
    offer = 'emulate sh -c "COMP_WORDS=({}); COMP_CWORD={}; _envcheck; echo \\${{COMPREPLY[@]}}"'
    top, verify = offer.format("envcheck ''", 1), offer.format("envcheck verify ''", 2)
    cmd = f"source {path} && print -r -- $_comps[envcheck] && {top} && {verify}"
    env = {**os.environ, "ZDOTDIR": str(tmp_path)}  # compinit's dump file: here, not in ~
    proc = subprocess.run(["zsh", "-f", "-c", cmd], capture_output=True, text=True, timeout=60,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    registered, top, verify = proc.stdout.splitlines()
    assert registered == "_bash_complete -o default -F _envcheck"
    assert {path[0] for path in COMMANDS} <= set(top.split())
    assert set(verify.split()) == {"cluster", "job", "node", "ray"}


def test_help_lists_every_exit_code():
    for code in ExitCode:
        assert re.search(rf"(?m)\s{int(code)} [A-Za-z]", EPILOG), code


@pytest.mark.parametrize("path", list(COMMANDS))
def test_q_and_v_on_every_verb(path):
    required = {("build",): ["r.yaml"], ("install",): ["l.yml", "--prefix", "p"],
                ("image",): ["l.yml", "--os", "rhel7"], ("diff",): ["a", "b"],
                ("why",): ["pkg", "l.yml"], ("completion",): ["bash"],
                ("recipe", "new"): ["--rapids", "22.08", "--cuda", "11.5", "--os", "el7"],
                ("recipe", "import"): ["environment.yml"]}
    argv = [*path, *required.get(path, []), "-q", "-v"]
    args = build_parser(argv).parse_args(argv)
    assert args.quiet and args.verbose
