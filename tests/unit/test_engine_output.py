"""What tells an unreachable registry (exit 7) from a failed build step (exit 2): the engine's
own words, here as podman 4 printed them on this project's CI machine."""

from __future__ import annotations

import sys

from envcheck.provision.engine_run import run_engine, unreachable_registry

PODMAN = [  # `podman build` of FROM 127.0.0.1:9/nothing:1, nothing listening there
    "STEP 1/2: FROM 127.0.0.1:9/nothing:1",
    "Trying to pull 127.0.0.1:9/nothing:1...",
    'time="2026-11-28T22:37:16Z" level=warning msg="Failed, retrying in 2s ... (1/3). Error: '
    "initializing source docker://127.0.0.1:9/nothing:1: pinging container registry "
    '127.0.0.1:9: Get \\"https://127.0.0.1:9/v2/\\": dial tcp 127.0.0.1:9: connect: '
    'connection refused"',
    "Error: creating build container: initializing source docker://127.0.0.1:9/nothing:1: "
    'pinging container registry 127.0.0.1:9: Get "https://127.0.0.1:9/v2/": dial tcp '
    "127.0.0.1:9: connect: connection refused",
]


def test_a_pull_the_network_failed_names_the_registry() -> None:
    assert unreachable_registry(PODMAN) == "127.0.0.1:9"
    lookup = ("Error: initializing source docker://registry.example.invalid/ubi7:7.9: pinging "
              "container registry registry.example.invalid: Get "
              '"https://registry.example.invalid/v2/": dial tcp: lookup '
              "registry.example.invalid: no such host")
    assert unreachable_registry([lookup]) == "registry.example.invalid"


def test_a_build_step_s_own_network_trouble_is_a_build_failure() -> None:
    step = ["STEP 5/12: RUN envcheck install ...",
            "envcheck: cannot fetch http://10.0.2.2:8000/x.conda: connection refused "
            "(after 3 tries)", "Error: building at STEP \"RUN ...\": exit status 7"]
    assert unreachable_registry(step) is None
    assert unreachable_registry(["Error: sha256 mismatch"]) is None


def test_the_engine_s_stderr_passes_through_and_its_tail_is_kept(capfd) -> None:  # noqa: ANN001
    code, tail = run_engine([sys.executable, "-c",
                             "import sys; [print(i, file=sys.stderr) for i in range(300)];"
                             "print('out'); sys.exit(3)"])
    assert code == 3 and tail[0] == "100" and tail[-1] == "299" and len(tail) == 200
    out, err = capfd.readouterr()
    assert out == "out\n" and err.splitlines()[0] == "0" and len(err.splitlines()) == 300
