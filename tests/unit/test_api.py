"""envcheck's Python API (docs/api.md): the verbs as functions returning Reports, errors as
EnvcheckError subclasses, `import envcheck` cheap, the caller's signal handlers left alone.
The exported names and keywords are pinned in tests/unit/test_exported_members.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

import envcheck
from envcheck.errors import BadInput, EnvcheckError, ExitCode, Unsolvable
from envcheck.report import Report, Status
from tests.support.channel import demo_channel
from tests.support.channel import write_recipe as recipe
from tests.support.report_schema import schema_errors


def test_import_envcheck_loads_nothing_else():
    code = (
        "import sys, envcheck\n"
        "mods = sorted(m for m in sys.modules if m.startswith('envcheck') or m in "
        "('rich', 'xml.etree.ElementTree', 'json', 'rattler', 'dask', 'importlib.metadata'))\n"
        "print(' '.join(mods))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["envcheck", "envcheck.version"]  # its version alone


def test_build_returns_a_report_and_writes_the_locks(tmp_path):
    r = recipe(tmp_path, demo_channel(tmp_path / "ch"), "[python=3.9]")
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    report = envcheck.build(r, out=tmp_path / "locks")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert not (set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) & {signal.SIGINT, signal.SIGTERM})
    assert isinstance(report, Report) and report.status is Status.PASS
    assert report.exit_code == ExitCode.OK
    assert (tmp_path / "locks" / "demo.conda-lock.yml").is_file()
    assert schema_errors(json.loads(json.dumps(report.to_json()))) == []
    assert "<table" in report._repr_html_()
    checked = envcheck.build([r], out=tmp_path / "locks", check=True)
    assert checked.status is Status.PASS


def test_api_errors_are_envcheck_errors_not_exits(tmp_path):
    with pytest.raises(BadInput, match="nope.yaml"):
        envcheck.build(tmp_path / "nope.yaml")
    with pytest.raises(BadInput, match="give at least one recipe"):
        envcheck.build([])
    with pytest.raises(BadInput, match="no-such.lock"):
        envcheck.install(tmp_path / "no-such.lock", tmp_path / "env")
    with pytest.raises(Unsolvable) as e:
        envcheck.recipe_new("24.06", "12.2", "el7")
    assert e.value.exit_code == ExitCode.UNSOLVABLE
    with pytest.raises(BadInput, match="el6"):
        envcheck.recipe_new("22.08", "11.5", "el6")
    out = tmp_path / "r"
    out.mkdir()
    with pytest.raises(EnvcheckError, match="a directory"):
        envcheck.recipe_new("22.08", "11.5", "el7", out=out)


def test_recipe_new_gives_the_recipe_as_output_or_writes_it(tmp_path):
    report = envcheck.recipe_new("22.08", "11.5", "el7", libs="cudf,dask-cudf", python="3.9")
    assert report.output.startswith("# RAPIDS 22.08") and "cudf" in report.output
    out = tmp_path / "r.yaml"
    written = envcheck.recipe_new("22.08", "11.5", "el7", libs=["cudf", "dask-cudf"],
                                  python="3.9", out=out)  # fmt: skip
    assert out.read_text() == report.output and written.output == f"wrote {out}\n"


def test_why_diff_slurm_script_and_image_give_what_their_commands_print(tmp_path, capsys):
    from pathlib import Path

    from envcheck.cli import main

    data = Path(__file__).resolve().parents[1] / "data"
    old = data / "pangeo_pytorch-notebook_2023-05-19_cd2ce0b.conda-lock.yml"
    new = data / "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml"
    changed = envcheck.diff(old, new, markdown=True)
    assert main(["diff", str(old), str(new), "--markdown"]) == 0
    assert capsys.readouterr().out == changed.output and "|" in changed.output
    chains = envcheck.why("dask", new)
    assert chains.status is Status.PASS and chains.tables[0].rows
    assert all("dask" in row[1] for row in chains.tables[0].rows)
    script = envcheck.slurm_script(nodes=2, gpus_per_node=4, then="python main.py")
    assert main(["slurm", "script", "--nodes", "2", "--gpus-per-node", "4",
                 "--then", "python main.py"]) == 0
    assert capsys.readouterr().out == script.output and script.output.startswith("#!")
    built = envcheck.image(new, "rhel7", engine="podman", print_only=True)
    assert built.exit_code in (ExitCode.OK, ExitCode.NO_ENGINE)
    assert built.output.startswith("podman build -f ") and "Dockerfile.rhel7" in built.output
