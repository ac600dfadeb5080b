"""envcheck install's staging tree and linker child for real: the env names its final path, a killed
swap is undone, a linker that aborts is reported, the child is forked or started as the process
allows, and a prestarted child reads the lock ahead and is replaced or ended as needed."""

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

pytestmark = pytest.mark.slow


def _script_wheel(dest: Path) -> Path:
    """A wheel standing in for the lock's six 1.17.0 entry, with a console script."""
    import base64
    import hashlib
    import zipfile

    dist = "six-1.17.0.dist-info"
    files = {
        "six_hello.py": b"import sys\n\ndef main():\n    print(sys.prefix)\n",
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{dist}/entry_points.txt": b"[console_scripts]\nsix-hello = six_hello:main\n",
    }

    def row(name: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{name},sha256={digest},{len(data)}"

    record = "\n".join([*(row(n, d) for n, d in files.items()), f"{dist}/RECORD,,"]) + "\n"
    path = dest / "six-1.17.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{dist}/RECORD", record)
    return path


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
    import base64
    import hashlib

    data = script.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert row.endswith(f"sha256={digest},{len(data)}")
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


def test_the_next_install_undoes_what_a_killed_swap_left(tmp_path: Path) -> None:
    lock = _tiny_lock(tmp_path)
    prefix, cache = tmp_path / "env", tmp_path / "cache"
    assert envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache).returncode == 0
    before = listing(prefix)
    # what SIGKILL between the fallback swap's two renames leaves: no prefix, the old env
    # aside, a complete or partial staging tree
    prefix.rename(tmp_path / ".env.envcheck-old-99999")
    (tmp_path / ".env.envcheck-staging-99998" / "share").mkdir(parents=True)
    done = envcheck("install", lock, "--prefix", prefix, "--cache-dir", cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "restored" in done.stderr and "nothing to do" in done.stdout
    assert listing(prefix) == before
    assert beside(prefix) == []


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
        many = stages and stages[0] / "share" / "many"
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
        "print(report.exit_code())\n"
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
        "from envcheck.provision.plan import read_plan\n"
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


@pytest.mark.parametrize("ahead", [True, False], ids=["lock-read-ahead", "lock-read-on-plan"])
def test_a_prestarted_linker_child_links_the_lock_and_refuses_one_changed_after_it_was_read(
    tmp_path: Path, ahead: bool
) -> None:
    # the CLI forks its linker before it reads the lock; the install adopts that child, which
    # reads the lock itself (ahead, as soon as py-rattler is in, when prestart names it) and
    # must find the sha256 envcheck read
    lock = _tiny_lock(tmp_path)
    start = "lock, 'linux-64', cache" if ahead else ""
    head = f"""
import os, time
from pathlib import Path
from envcheck.errors import EnvcheckError
from envcheck.provision import install, linker
from envcheck.provision.plan import read_plan
lock, cache = Path({str(lock)!r}), Path({str(tmp_path / "cache")!r})
linker.prestart({start})
early = linker._EARLY[0][0]

def child_waits_for_a_job():  # its warm-up (and the lock read ahead) is over
    deadline = time.monotonic() + 120
    while "pipe" not in Path(f"/proc/{{early}}/wchan").read_text():
        assert time.monotonic() < deadline, "the linker child never got ready"
        time.sleep(0.01)
"""
    if ahead:  # the child read the lock before the change, envcheck after
        change_then_read = """
child_waits_for_a_job()
lock.write_bytes(lock.read_bytes() + b"# changed after the child read it\\n")
plan = read_plan(lock, "linux-64")
"""
    else:  # envcheck read the lock before the change, the child after (on the plan job)
        change_then_read = """
plan = read_plan(lock, "linux-64")
lock.write_bytes(lock.read_bytes() + b"# changed after envcheck read it\\n")
"""
    same = head + f"""
plan = read_plan(lock, "linux-64")
install.install(plan, Path({str(tmp_path / "env")!r}), cache)
print(not linker._EARLY)  # adopted by the install's Linker
"""
    assert _run_code(same)[0] == "True"
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"
    changed = head + change_then_read + """
with linker.Linker(plan, cache) as child:
    print(child.pid == early)
    try:
        child.run({"op": "extract", "items": []}, "unpacking")
    except EnvcheckError as e:
        print(e.message)
"""
    adopted, message = _run_code(changed)[:2]
    assert adopted == "True"
    assert message == f"unpacking failed: {lock} changed while envcheck read it", message


def test_the_plan_made_of_the_linker_childs_reading_is_read_plans(tmp_path: Path) -> None:
    # `envcheck install` takes its plan from what the linker child read (py-rattler imported
    # there only): the same sha256, records, packages and archive paths as read_plan's
    from envcheck.provision import _link_child
    from envcheck.provision.fetch import cache_path
    from envcheck.provision.plan import plan_of, read_plan

    data = Path(__file__).parents[1] / "data"
    real = ["holoviz_holoviews_fb85eeb_pixi.lock",  # pixi.lock, 478 linux-64 packages
            "pangeo_ml-notebook_2023-10-03_2e817e6.conda-lock.yml"]  # conda-lock, 682  # fmt: skip
    for lock in (_tiny_lock(tmp_path), *(data / name for name in real)):
        plan = read_plan(lock, "linux-64")  # the in-process reading, as the API makes it
        sha256, mine, rows = _link_child._read_lock(str(lock), "linux-64")
        reading = json.loads(json.dumps({"sha256": sha256, "platform": "linux-64", "rows": rows}))
        made = plan_of(lock, reading)
        assert (made.lock_sha256, made.platform) == (plan.lock_sha256, plan.platform)
        assert (made.conda, made.pip) == (plan.conda, plan.pip) and made.conda
        assert [r.url for r in mine.records] == [r.url for r in plan.records]
        assert [r.url for r in plan.records] == [p.url for p in plan.conda]
        cache = tmp_path / "cache"
        assert _link_child._archives(mine, str(cache)) == {
            p.url: str(cache_path(cache, p)) for p in plan.conda
        }
    with pytest.raises(EnvcheckError, match="no packages for platform osx-arm64"):
        _link_child._read_lock(str(lock), "osx-arm64")


def test_the_cli_imports_py_rattler_only_in_its_linker_child(tmp_path: Path) -> None:
    # `envcheck install` forks its linker child before its flags are parsed and takes its plan
    # from the child's reading of the lock: envcheck's own process never imports py-rattler
    lock = _tiny_lock(tmp_path)
    code = f"""
import sys
sys.argv = ["envcheck", "install", {str(lock)!r}, "--prefix", {str(tmp_path / "env")!r},
            "--cache-dir", {str(tmp_path / "cache")!r}, "--platform", "linux-64"]
from envcheck.cli import main
rc = main()
print(rc, "rattler" in sys.modules)
"""
    assert _run_code(code)[1] == "0 False"  # after the install's own line
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"


def test_a_prestarted_child_that_died_is_replaced_or_the_lock_read_by_envcheck(
    tmp_path: Path,
) -> None:
    # found dead when the lock is named: a new child is forked and reads it; dead before it
    # answered with its reading: envcheck discards it (and would read the lock in its own
    # process); the next install forks a child of its own and completes, none left
    lock = _tiny_lock(tmp_path)
    code = f"""
import os, signal, sys, time
from pathlib import Path
from envcheck.provision import linker
from envcheck.provision.command import InstallOptions, install_lock
lock, cache = Path({str(lock)!r}), Path({str(tmp_path / "cache")!r})

def kill_early():
    pid = linker._EARLY[0][0]
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{{pid}}/stat").read_text().split(")")[1].split()[0] != "Z":
        time.sleep(0.005)
    return pid

linker.prestart()
dead = kill_early()
linker.prestart(lock, "linux-64", cache)
print(linker._EARLY[0][0] != dead, linker.reading_pending())
print(linker.prestarted_reading()["sha256"] and "rattler" not in sys.modules)
linker.discard_prestarted()
linker.prestart(lock, "linux-64", cache)
kill_early()  # it had not answered: its imports take far longer than this
print(linker.prestarted_reading(), linker._EARLY)
out = install_lock(InstallOptions(lock, Path({str(tmp_path / "env")!r}), platform="linux-64",
                                  cache_dir=cache)).output
print(out.startswith("installed 1 conda"), linker._EARLY)
"""
    assert _run_code(code)[:4] == ["True True", "True", "None []", "True []"]
    assert (tmp_path / "env" / "share" / "tiny" / "a.txt").read_text() == "tiny\n"


def test_a_prestarted_linker_child_no_install_takes_is_ended(tmp_path: Path) -> None:
    # an install's child answers its last job and leaves (not waited for: reaped by the next
    # install); a no-op install (the stamp matches) never enters a Linker: its prestarted
    # child is killed and reaped before it returns
    lock = _tiny_lock(tmp_path)
    code = f"""
import os, time
from pathlib import Path
from envcheck.provision import linker
from envcheck.provision.command import InstallOptions, install_lock
opts = InstallOptions(Path({str(lock)!r}), Path({str(tmp_path / "env")!r}),
                      platform="linux-64", cache_dir=Path({str(tmp_path / "cache")!r}))
install_lock(opts)
me = Path(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children")
left = [int(p) for p in me.read_text().split()]
print(left == linker._LEFT[:len(left)])  # a child still there is one that was let go
for pid in left:  # it leaves on its own: a zombie within seconds
    deadline = time.monotonic() + 10
    while Path(f"/proc/{{pid}}/stat").read_text().split(")")[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child did not leave"
        time.sleep(0.01)
print(install_lock(opts).output.strip().endswith("nothing to do"), me.read_text().split())
print(linker._LEFT)
"""
    assert _run_code(code)[:3] == ["True", "True []", "[]"]


def test_metadata_is_validated_again_unless_a_finished_install_validated_it_under_these_rules(
    py39_env: Installed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envcheck.provision import install as install_module
    from envcheck.provision import validate
    from envcheck.provision.plan import read_plan
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
    install_module.install(plan, tmp_path / "a", cache)
    conda = len(plan.conda)
    assert len(checked) == conda  # unpacked now: every package validated
    marks = sorted((cache / "verified").glob("*.digest"))
    assert len(marks) == conda and all(m.read_text().split()[2:] == [VALIDATED] for m in marks)
    install_module.install(plan, tmp_path / "b", cache)
    assert len(checked) == conda  # unchanged since, validated under these rules: not again
    key, dig, _ = marks[0].read_text().split()
    marks[0].write_text(f"{key} {dig} validated-0\n")  # validated under older rules
    install_module.install(plan, tmp_path / "c", cache)
    assert len(checked) == conda + 1
    marks[1].write_text(" ".join(marks[1].read_text().split()[:2]) + "\n")  # unpacked only
    install_module.install(plan, tmp_path / "d", cache)
    assert len(checked) == conda + 2
