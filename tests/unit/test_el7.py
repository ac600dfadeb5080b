"""EL7 feasibility: the glibc conda records and pip wheels need, against a glibc 2.17 target."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import ExitCode
from envcheck.resolve import el7
from envcheck.resolve.lockgraph import read_graph
from tests.support.channel import pkg, write_channel, write_recipe

DATA = Path(__file__).parents[1] / "data"
TORCH_FILES = [
    ln.strip()
    for ln in (DATA / "pypi" / "torch-linux-x86_64-wheel-filenames.txt").read_text().splitlines()
    if ln.strip() and not ln.startswith("#")
]


def test_wheel_tags_say_which_glibc_they_need():
    assert el7.wheel_needs("torch-2.6.0-cp312-cp312-manylinux1_x86_64.whl") == "2.5"
    assert el7.wheel_needs("torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl") == "2.28"
    both = "numpy-1.26.4-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    assert el7.wheel_needs(both) == "2.17"
    assert el7.wheel_needs("torch-2.7.0-cp312-cp312-manylinux_2_28_aarch64.whl") is None
    assert el7.wheel_needs("dask-2024.1.1-py3-none-any.whl") is None
    assert el7.conda_needs(["python >=3.9", "__glibc >=2.28,<3.0.a0"]) == "2.28"
    assert el7.conda_needs(["python"]) is None


def test_torch_2_7_and_later_need_glibc_2_28_and_2_6_is_the_newest_that_fits_el7():
    cat = el7.wheel_catalogue("torch", TORCH_FILES, "x86_64", "3.12")
    assert el7.newest_fitting("torch", "2.17", cat) == "2.6.0"
    needs = dict(cat["torch"])
    assert needs["2.7.0"] == "2.28" and needs["2.6.0"] == "2.5"
    assert all(n == "2.28" for v, n in cat["torch"] if el7._key(v) >= (2, 7))


@pytest.fixture
def index(tmp_path):
    """A PEP 503 simple index over a real socket, listing torch's real wheel file names."""
    page = tmp_path / "simple" / "torch"
    page.mkdir(parents=True)
    links = "".join(f'<a href="../../files/{f}">{f}</a><br/>\n' for f in TORCH_FILES)
    (page / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()
    server.server_close()


def test_a_resolved_torch_2_7_is_named_with_the_newest_version_that_fits(index):
    files = [f for f in TORCH_FILES if f.startswith("torch-2.7.0-")]
    found = el7.unfit_wheels(
        "torch", "2.7.0", files, "2.17", "linux-64", "3.12",
        lambda name: el7.index_filenames(name, index),
    )  # fmt: skip
    assert found is not None
    assert found.line("2.17") == (
        "torch 2.7.0 (pip) needs glibc 2.28 (wheel tag manylinux_2_28_x86_64); "
        "newest that fits glibc 2.17: torch 2.6.0"
    )
    ok = [f for f in TORCH_FILES if f.startswith("torch-2.6.0-")]
    assert el7.unfit_wheels("torch", "2.6.0", ok, "2.17", "linux-64", "3.12", lambda n: []) is None


def test_the_rapids_26_04_records_of_a_real_pixi_lock_do_not_load_on_el7():
    nodes = read_graph(DATA / "holoviz_holoviews_fb85eeb_pixi.lock", "test-gpu").platforms[
        "linux-64"
    ]
    conda = [(n.name, n.version, n.depends) for n in nodes.values() if n.manager == "conda"]
    found = {o.name: o for o in el7.offenders("2.17", conda)}
    assert {"cudf", "libcudf", "rmm", "librmm", "pylibcudf", "cupy-core"} <= set(found)
    assert found["cudf"].needs == "2.28" and found["cudf"].why == "__glibc >=2.28"
    assert not el7.offenders("2.28", conda)


def test_build_names_the_entry_that_needs_a_newer_glibc_and_what_fits(tmp_path, capsys):
    channel = write_channel(
        tmp_path / "channel",
        [
            pkg("python", "3.9.18", ["__glibc >=2.17"], build="h0_cpython"),
            pkg("libfoo", "1.4.0", ["__glibc >=2.17,<3.0.a0"], build="h0_0"),
            pkg("libfoo", "1.5.0", ["__glibc >=2.17,<3.0.a0"], build="h0_0"),
            pkg("libfoo", "2.0.0", ["__glibc >=2.28,<3.0.a0"], build="h0_0"),
            pkg("libfoo", "2.1.0", ["__glibc >=2.28,<3.0.a0"], build="h0_0"),
        ],
    )
    r = write_recipe(tmp_path, channel, "[python=3.9, 'libfoo >=2']")
    assert main(["build", str(r), "--out", str(tmp_path / "locks")]) == ExitCode.UNSOLVABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert (
        "recipe entry 'libfoo >=2': every libfoo it admits needs glibc >= 2.28 (__glibc in its "
        "depends), the target has 2.17; newest that fits: libfoo 1.5.0" in err[0]
    )
    # on a glibc 2.28 target the same recipe solves
    r28 = write_recipe(tmp_path, channel, "[python=3.9, 'libfoo >=2']", name="el8",
                       system='{glibc: "2.28"}')  # fmt: skip
    assert main(["build", str(r28), "--out", str(tmp_path / "locks")]) == ExitCode.OK
