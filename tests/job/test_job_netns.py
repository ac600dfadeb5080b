"""verify job's rendezvous seen from another host: two ranks in one network namespace
(hostA, 10.77.0.1), a stranger as uid nobody in another (hostB) that reaches the store over
the bridge and claims the missing rank with a pickle that would run a command. It connects
(the network lets it), and is refused: it has not the job's secret."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hosts.netns import Unavailable, namespaced_hosts
from tests.job.test_job_untrusted import (
    AS_NOBODY,
    ENVCHECK,
    PREFIX,
    SECRET,
    STRANGER,
    TIMEOUT,
    _errors,
    _ready,
)
from tests.support.ranks import rank_env

pytest.importorskip("torch.distributed")
pytestmark = [pytest.mark.slow, pytest.mark.netns]  # namespaced hosts: root, ip, the heavy group

PORT = 29611  # inside fresh namespaces nothing else listens


def _listening(hosts, host: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "exec", hosts.ns(host), "ss", "-Hltn",
                          f"sport = :{PORT}"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines() if line.strip()]


def test_a_stranger_on_another_host_reaches_the_store_and_is_refused(tmp_path: Path):
    tmp_path.chmod(0o755)
    marker = tmp_path / "marker"
    try:
        with namespaced_hosts("hostA", "hostB", prefix="ej") as hosts:
            addr = hosts.ip("hostA")
            stranger = hosts.start("hostB", [*AS_NOBODY, sys.executable, "-c", STRANGER, addr,
                                             str(PORT), "rank2", str(marker), PREFIX],
                                   tmp_path / "stranger.log")
            _ready(tmp_path, "stranger.log")
            ranks = [hosts.start("hostA", [*ENVCHECK, "verify", "job", "--timeout", str(TIMEOUT),
                                           "--json", str(tmp_path / f"rank{r}.json"),
                                           *(["--debug"] if r else [])],
                                 tmp_path / f"rank{r}.log",
                                 env=rank_env(PORT, r, 3, addr,
                                              ENVCHECK_JOB_SECRET_DIR=str(tmp_path / "secrets"),
                                              ENVCHECK_JOB_SECRET=SECRET),
                                 cwd=tmp_path)
                     for r in (0, 1)]
            # where rank 0's store listens, looked at while the ranks run (a fast refusal can
            # end them before `ss` looks: then nothing was seen, and nothing is asserted of it)
            seen: list[str] = []
            end = time.monotonic() + TIMEOUT
            while not seen and time.monotonic() < end and any(p.poll() is None for p in ranks):
                seen = _listening(hosts, "hostA")
                time.sleep(0.05)
            codes = [p.wait(TIMEOUT * 3 + 30) for p in ranks]
            stranger.kill()
    except Unavailable as e:
        pytest.skip(f"no network namespaces here: {e}")
    logs = {n: (tmp_path / f"{n}.log").read_text() for n in ("rank0", "rank1", "stranger")}
    assert set(seen) <= {f"{addr}:{PORT}"}, (seen, logs)  # MASTER_ADDR's only, never 0.0.0.0
    assert "connected as uid 65534" in logs["stranger"], logs  # from hostB: it reached the store
    assert not marker.exists()
    assert codes == [3, 3], (codes, logs)
    assert any(m.startswith("rank 2 was claimed by a process without this job's secret")
               for m in _errors(tmp_path / "rank0.json")), logs
    assert "rank 2 was claimed by a process without this job's secret" in logs["rank1"], logs
