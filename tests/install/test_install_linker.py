"""envcheck install's staging tree and linker child for real: the env names its final path, a killed
swap is undone, a linker that aborts is reported, the child is forked or started as the process
allows, refuses a lock changed after envcheck read it, and is reaped when the install ends."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcheck.errors import EnvcheckError
from tests.support.install_checks import (
    beside,
    install_cmd,
    listing,
    many_lock_fixture,  # noqa: F401  (the fixture)
    one_line,
    sha256,
)
from tests.support.install_world import Installed, envcheck
from tests.support.small_channels import (
    noarch_package,
    pixi_lock,
    records,
)
from tests.support.wheels import DIST, record_digest, six_wheel

pytestmark = pytest.mark.slow


def _script_wheel(dest: Path) -> Path:
    """A wheel standing in for the lock's six 1.17.0 entry, with a console script."""
    return six_wheel(dest, {
        "six_hello.py": b"import sys\n\ndef main():\n    print(sys.prefix)\n",
        f"{DIST}/entry_points.txt": b"[console_scripts]\nsix-hello = six_hello:main\n",
    })


def test_the_env_names_its_final_path_not_the_staging_tree(
    py39_env: Installed, tmp_path: Path
) -> None:
    import re

    text = py39_env.world.lock.read_text()
    wheel = _script_wheel(tmp_path)
    url = re.search(r"url: (\S+/six-1\.17\.0-\S+\.whl)", text).group(1)
    sha = re.search(rf"url: {re.escape(url)}\s+hash:\s+sha256: (\w+)", text).group(1)
    lock = tmp_path / "script.conda-lock.yml"
    lock.write_text(text.replace(url, wheel.as_uri()).replace(sha, sha256(wheel)))
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    prefix = tmp_path / "env"
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    script = prefix / "bin" / "six-hello"
    assert script.read_bytes().startswith(f"#!{prefix}/bin/python".encode())
    run = subprocess.run([script], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == str(prefix)
    (record,) = prefix.glob("lib/python3.9/site-packages/six-1.17.0.dist-info/RECORD")
    rows = {r.split(",")[0]: r for r in record.read_text().splitlines()}
    (row,) = [r for k, r in rows.items() if k.endswith("bin/six-hello")]
    assert row.endswith(record_digest(script.read_bytes()))
    leaks = [
        str(p)
        for p in prefix.rglob("*")
        if p.is_file() and not p.is_symlink() and b".envcheck-staging-" in p.read_bytes()
    ]
    assert leaks == []
    sysconfig = subprocess.run(
        [
            prefix / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('prefix'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert sysconfig.stdout.strip() == str(prefix)


def _tiny_lock(tmp_path: Path) -> Path:
    """A pixi lock of one noarch package that holds share/tiny/a.txt."""
    root = tmp_path / "channel"
    noarch_package(root, "tiny", {"share/tiny/a.txt": (b"tiny\n", 0o644, None)})
    return pixi_lock(tmp_path / "tiny.lock", root.as_uri(), records(root))


def _killed_swap(prefix: Path) -> Path:
    """What SIGKILL between the fallback swap's two renames leaves: no prefix, the old env in
    the install's work directory, a complete or partial staging tree beside it. Made with the
    install's own Work (mkdtemp, record) and the swap's first rename."""
    from envcheck.provision.staging import OLD, Work

    parent_fd = os.open(prefix.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        work = Work(prefix, parent_fd)
        os.close(work.fd)
    finally:
        os.close(parent_fd)
    prefix.rename(work.path / OLD)
    (work.stage / "share").mkdir()
    return work.path


def test_the_next_install_undoes_what_a_killed_swap_left(tmp_path: Path) -> None:
    lock = _tiny_lock(tmp_path)
    prefix, cache = tmp_path / "env", tmp_path / "cache"
    assert envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache).returncode == 0
    before = listing(prefix)
    work = _killed_swap(prefix)
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"restored {prefix} from {work.name}" in done.stderr
    assert "nothing to do" in done.stdout
    assert listing(prefix) == before
    assert beside(prefix) == []


@pytest.mark.parametrize("case", [
    "mode 0755", "another prefix's record", "no record", "a record with two links",
    "an env set aside by name",
])  # fmt: skip
def test_a_leftover_the_install_cannot_prove_it_made_is_left_alone(
    tmp_path: Path, case: str
) -> None:
    lock = _tiny_lock(tmp_path)
    prefix, cache = tmp_path / "env", tmp_path / "cache"
    assert envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache).returncode == 0
    before = listing(prefix)
    work = _killed_swap(prefix)
    record = work / "record"
    if case == "mode 0755":
        work.chmod(0o755)
    elif case == "another prefix's record":
        record.write_text(json.dumps({"prefix": str(tmp_path / "other")}))
    elif case == "no record":
        record.unlink()
    elif case == "a record with two links":
        os.link(record, tmp_path / "second-link")
    aside = work / "old"
    if case == "an env set aside by name":  # as envcheck once did: the env itself, no record
        aside = (work / "old").rename(tmp_path / ".env.envcheck-old-1")
        shutil.rmtree(work)
        work = aside
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"left {work.name} beside {prefix} alone" in done.stderr
    assert "restored" not in done.stderr
    # not restored: the prefix is a new install, the old env still where it was set aside
    assert listing(aside) == before
    assert (prefix / "share" / "tiny" / "a.txt").is_file() and not prefix.is_symlink()
    assert beside(prefix) == [work.name]


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(x) for x in text.split()]


def test_a_linker_that_aborts_mid_link_is_reported_and_cleaned_up(
    py39_env: Installed, many_lock: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    envcheck("install", many_lock, "--prefix", tmp_path / "warm", "--cache-dir", cache)
    prefix = tmp_path / "env"
    proc = subprocess.Popen(
        install_cmd(many_lock, prefix, cache),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 300
    many = None
    while time.monotonic() < deadline and proc.poll() is None:
        stages = list(prefix.parent.glob(f".{prefix.name}.envcheck-staging-*"))
        many = stages and stages[0] / "stage" / "share" / "many"
        if many and many.exists():
            break
        time.sleep(0.02)
    assert many and many.exists(), proc.communicate()
    (child,) = _children(proc.pid)  # the linker, as a panic in py-rattler would end it
    os.kill(child, signal.SIGABRT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, out + err
    assert "the linker process died (SIGABRT)" in one_line(err)
    assert not os.path.lexists(prefix) and beside(prefix) == []


def test_a_process_with_threads_links_through_a_started_child(tmp_path: Path) -> None:
    # the API in a process that has other threads (a notebook's, py-rattler's runtime):
    # forking it is unsafe, so the linker child is a fresh interpreter
    lock = _tiny_lock(tmp_path)
    code = (
        "import sys, threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "from envcheck import api\n"
        f"report = api.install({str(lock)!r}, {str(tmp_path / 'env')!r},"
        f" cache_dir={str(tmp_path / 'cache')!r})\n"
        "print(report.exit_code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] in ("0", "ExitCode.OK"), done.stdout
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"


def test_a_cli_run_forks_its_linker_child_despite_the_signal_resender(tmp_path: Path) -> None:
    # every CLI run starts interrupts' resender thread, which holds nothing across a fork:
    # the linker child is forked (no second interpreter reading the lock again); a thread
    # of anyone else's still sends it to a fresh interpreter
    lock = _tiny_lock(tmp_path)
    code = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from envcheck import interrupts\n"
        "from envcheck.provision import linker\n"
        "from envcheck.provision.install.pipeline import read_plan\n"
        "interrupts.install()\n"
        f"plan = read_plan(Path({str(lock)!r}), 'linux-64')\n"
        "def child_argv():\n"
        "    with linker.Linker(plan) as child:\n"
        "        deadline = time.monotonic() + 30\n"
        "        # empty while an exec is still setting up the new image (Popen may return\n"
        "        # as soon as a vfork'ed child starts its exec), and once the child has left\n"
        "        while not (argv := Path(f'/proc/{child.pid}/cmdline').read_bytes()):\n"
        "            if child._reap(False) is not None or time.monotonic() > deadline:\n"
        "                child.err.seek(0)\n"
        "                sys.exit(f'linker child {child.code}: {child.err.read()!r}')\n"
        "            time.sleep(0.01)\n"
        "        return argv.split(b'\\0')\n"
        "print(b'envcheck.provision._link_child' in child_argv())\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "print(b'envcheck.provision._link_child' in child_argv())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr


def _run_code(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split("\n")


def test_a_started_linker_child_refuses_a_lock_changed_after_envcheck_read_it(
    tmp_path: Path,
) -> None:
    # a process with other threads starts a fresh interpreter as its linker child, which reads
    # the lock again on its plan job: it must find the sha256 envcheck read, or refuse every job
    lock = _tiny_lock(tmp_path)
    code = f"""
import threading, time
from pathlib import Path
from envcheck.errors import EnvcheckError
from envcheck.provision import linker
from envcheck.provision.install.pipeline import read_plan
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
lock, cache = Path({str(lock)!r}), Path({str(tmp_path / "cache")!r})
plan = read_plan(lock, "linux-64")
lock.write_bytes(lock.read_bytes() + b"# changed after envcheck read it\\n")
with linker.Linker(plan, cache) as child:
    for _ in range(2):
        try:
            child.run({{"op": "extract", "items": []}}, "unpacking")
        except EnvcheckError as e:
            print(e.message)
    print(b"envcheck.provision._link_child" in Path(f"/proc/{{child.pid}}/cmdline").read_bytes())
"""
    first, second, started = _run_code(code)[:3]
    assert started == "True"
    assert first == second == f"unpacking failed: {lock} changed while envcheck read it", first


def test_the_linker_childs_reading_of_the_lock_is_read_plans(tmp_path: Path) -> None:
    # a started linker child reads the lock itself: the same sha256 and records as envcheck's
    # plan, and the archive paths envcheck's fetch checked
    from envcheck.provision import _link_child
    from envcheck.provision.fetch import cache_path
    from envcheck.provision.install.pipeline import read_plan

    data = Path(__file__).parents[1] / "data"
    real = ["holoviz_holoviews_fb85eeb_pixi.lock",  # pixi.lock, 478 linux-64 packages
            "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml"]  # conda-lock, 682  # fmt: skip
    for lock in (_tiny_lock(tmp_path), *(data / name for name in real)):
        plan = read_plan(lock, "linux-64")
        sha256, mine = _link_child._read_lock(str(lock), "linux-64")
        assert (sha256, mine.platform) == (plan.lock_sha256, plan.platform) and plan.conda
        assert [r.url for r in mine.records] == [r.url for r in plan.records]
        assert [r.url for r in plan.records] == [p.url for p in plan.conda]
        cache = tmp_path / "cache"
        assert _link_child._archives(mine, str(cache)) == {
            p.url: str(cache_path(cache, p)) for p in plan.conda
        }
    with pytest.raises(EnvcheckError, match="no packages for platform osx-arm64"):
        _link_child._read_lock(str(lock), "osx-arm64")


def test_an_install_leaves_no_linker_child_behind(tmp_path: Path) -> None:
    # the child answers its last job, leaves and is reaped by the install; a no-op install
    # (the stamp matches) starts none
    lock = _tiny_lock(tmp_path)
    code = f"""
import json
import os
from pathlib import Path
from envcheck.provision.install.options import InstallOptions
from envcheck.provision.install.pipeline import install_lock
opts = InstallOptions(Path({str(lock)!r}), Path({str(tmp_path / "env")!r}),
                      platform="linux-64", cache_dir=Path({str(tmp_path / "cache")!r}))
me = Path(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children")
print(install_lock(opts).output.startswith("installed 1 conda"), me.read_text().split())
print(install_lock(opts).output.strip().endswith("nothing to do"), me.read_text().split())
"""
    assert _run_code(code)[:2] == ["True []", "True []"]


def test_metadata_is_validated_again_unless_a_finished_install_validated_it_under_these_rules(
    py39_env: Installed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envcheck.provision import validate
    from envcheck.provision.install import pipeline
    from envcheck.provision.install.pipeline import read_plan
    from envcheck.provision.unpacked import VALIDATED

    checked: list[str] = []
    real = validate.check_package

    def spy(package: str, folder: Path, walk) -> int:  # noqa: ANN001 - the real one, counted
        checked.append(package)
        return real(package, folder, walk)

    monkeypatch.setattr(validate, "check_package", spy)
    cache = tmp_path / "cache"
    shutil.copytree(py39_env.cache / "archives", cache / "archives")
    plan = read_plan(py39_env.world.lock, "linux-64")
    pipeline.install(plan, tmp_path / "a", cache)
    conda = len(plan.conda)
    assert len(checked) == conda  # unpacked now: every package validated
    marks = sorted((cache / "verified").glob("*.digest"))
    assert len(marks) == conda and all(m.read_text().split()[2:] == [VALIDATED] for m in marks)
    pipeline.install(plan, tmp_path / "b", cache)
    assert len(checked) == conda  # unchanged since, validated under these rules: not again
    key, dig, _ = marks[0].read_text().split()
    marks[0].write_text(f"{key} {dig} validated-0\n")  # validated under older rules
    pipeline.install(plan, tmp_path / "c", cache)
    assert len(checked) == conda + 1
    marks[1].write_text(" ".join(marks[1].read_text().split()[:2]) + "\n")  # unpacked only
    pipeline.install(plan, tmp_path / "d", cache)
    assert len(checked) == conda + 2
