"""envcheck's Python API (docs/api.md): the verbs as functions returning Reports, errors as
EnvcheckError subclasses, `import envcheck` cheap, the caller's signal handlers left alone."""

from __future__ import annotations

import importlib.util
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
    assert done.stdout.split() == ["envcheck"]


def test_verify_functions_come_from_verify_api_when_it_exists():
    if importlib.util.find_spec("envcheck.verify.api") is None:
        with pytest.raises(AttributeError, match="envcheck.verify.api"):
            envcheck.verify_node  # noqa: B018
        with pytest.raises(AttributeError, match="envcheck.verify.api"):
            envcheck.verify_cluster  # noqa: B018
    else:
        from envcheck.verify import api

        assert envcheck.verify_node is api.verify_node
        assert envcheck.verify_cluster is api.verify_cluster
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        envcheck.nope  # noqa: B018
    assert {"build", "install", "recipe_new", "verify_node", "verify_cluster"} <= set(dir(envcheck))


def test_build_returns_a_report_and_writes_the_locks(tmp_path):
    r = recipe(tmp_path, demo_channel(tmp_path / "ch"), "[python=3.9]")
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    report = envcheck.build(r, out=tmp_path / "locks")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert not (set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) & {signal.SIGINT, signal.SIGTERM})
    assert isinstance(report, Report) and report.status is Status.PASS
    assert report.exit_code() == ExitCode.OK
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
