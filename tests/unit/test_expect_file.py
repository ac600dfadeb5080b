"""`--expect FILE`: expectations of a node type from YAML or TOML, under the flags."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import BadInput, ExitCode
from envcheck.verify.expect_file import KEYS, MAX_BYTES, read_expect_file
from envcheck.verify.expect_options import add_expectation_arguments, expectations_from_options
from envcheck.verify.expectations import ExpectOptions
from tests.support.deadlines import HANG

DOCS = Path(__file__).parents[2] / "docs" / "expect"
EXCERPT = Path(__file__).parents[1] / "data" / "pangeo-pytorch-excerpt.conda-lock.yml"
needs_toml = pytest.mark.skipif(
    sys.version_info < (3, 11) and __import__("importlib").util.find_spec("tomli") is None,
    reason="TOML needs Python 3.11+ or tomli",
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _exp(path: Path, **flags: object):
    return expectations_from_options(ExpectOptions(file=path, **flags))


def test_the_shipped_yaml_example_loads_with_every_value():
    exp = _exp(DOCS / "a100x8.yaml")
    assert exp.expect_gpus == 8 and exp.expect_gpu_model == "A100"
    assert exp.min_memory_mib == 80 * 1024
    assert exp.min_compute_capability == (8, 0) and exp.cuda == "12.2"
    assert exp.min_glibc == "2.28" and exp.allow_busy_gpus is False and exp.expect_ucx is True
    assert exp.import_modules == ("torch", "cupy")
    assert exp.libraries[0] == "nccl" and "libcuda.so.1" in exp.libraries
    assert exp.xid_since_seconds == 24 * 3600 and exp.ecc_corrected_threshold == 100
    assert exp.probe_timeout == 60 and exp.skip == {"mig"}


@needs_toml
def test_the_shipped_toml_example_loads_with_every_value():
    exp = _exp(DOCS / "rtx3090x4.toml")
    assert exp.expect_gpus == 4 and exp.expect_gpu_model == "RTX 3090"
    assert exp.min_memory_mib == 24 * 1024 and exp.min_compute_capability == (8, 6)
    assert exp.cuda == "11.8" and exp.allow_busy_gpus is True
    assert exp.import_modules == ("torch",) and exp.probe_timeout == 120
    assert exp.skip == {"ecc", "nvlink", "persistence"}


def test_every_expectation_flag_has_a_file_key():
    import argparse

    parser = argparse.ArgumentParser()
    add_expectation_arguments(parser)
    flags = {
        a.option_strings[0][2:]
        for a in parser._actions
        if a.option_strings and a.option_strings[0].startswith("--")
    }
    assert flags - {"help", "expect", "list-checks"} == set(KEYS)


def test_flags_override_the_file_and_lists_add_up(tmp_path):
    path = _write(tmp_path, "n.yaml", "expect-gpus: 8\nexpect-gpu-model: A100\n"
                  "import: [torch]\nskip: xid\nprobe-timeout: 30\n")
    exp = _exp(path, expect_gpus=4, imports=("cupy",), skip=("ecc",))
    assert exp.expect_gpus == 4  # the flag
    assert exp.expect_gpu_model == "A100" and exp.probe_timeout == 30  # the file
    assert exp.import_modules == ("torch", "cupy") and exp.skip == {"xid", "ecc"}


def test_flag_override_through_the_command_line(tmp_path):
    path = _write(tmp_path, "n.yaml", "expect-gpus: 0\nmin-glibc: '99.0'\nskip: [ucx]\n")
    out = tmp_path / "r.json"
    rc = main(["verify", "node", "--quiet", "--json", str(out), "--expect", str(path),
               "--min-glibc", "2.17"])
    report = json.loads(out.read_text())
    (glibc,) = [r for r in report["results"] if r["check"] == "glibc"]
    assert glibc["status"] == "pass" and "2.17" in glibc["message"]  # the flag's, not 99.0
    (ucx,) = [r for r in report["results"] if r["check"] == "ucx"]
    assert ucx["message"] == "skipped by --skip" and rc in (0, 1, 2)


def test_a_relative_lock_is_read_from_the_files_directory(tmp_path):
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "env.lock.yml").write_bytes(EXCERPT.read_bytes())
    path = _write(tmp_path, "n.yaml", "lock: locks/env.lock.yml\n")
    exp = _exp(path)
    assert exp.lock_path == str(tmp_path / "locks" / "env.lock.yml") and exp.lock_packages


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("expect-gpu: 8\n", ["unknown key 'expect-gpu'", "expect-gpus"]),
        ("expect-gpus: eight\n", ["expect-gpus must be an integer", "str 'eight'"]),
        ("expect-gpus: true\n", ["expect-gpus must be an integer"]),
        ("expect-gpus: -1\n", ["expect-gpus must be an integer >= 0"]),
        ("cuda: 12.10\n", ["cuda must be a version as a quoted string", "float 12.1"]),
        ("allow-busy-gpus: 'yes'\n", ["allow-busy-gpus must be true or false"]),
        ("import: torch: 1\n", ["not valid YAML"]),
        ("skip: [1, 2]\n", ["skip must be a list of strings"]),
        ("min-gpu-memory: lots\n", ["min-gpu-memory must be a size"]),
        ("- 1\n- 2\n", ["the top level must be a mapping"]),
        ("[" * 5000 + "]" * 5000 + "\n", ["--expect"]),
    ],
)
def test_bad_keys_and_types_are_bad_input_naming_the_key_and_file(tmp_path, text, words):
    path = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(BadInput) as e:
        read_expect_file(path)
    assert str(path) in e.value.message
    for w in words:
        assert w in e.value.message, e.value.message


@needs_toml
def test_bad_toml_is_bad_input(tmp_path):
    path = _write(tmp_path, "bad.toml", "expect-gpus = \n")
    with pytest.raises(BadInput, match="not valid TOML"):
        read_expect_file(path)
    path = _write(tmp_path, "bad2.toml", 'expect-gpus = "8"\n')
    with pytest.raises(BadInput, match="expect-gpus must be an integer"):
        read_expect_file(path)


def test_bad_file_exits_4_with_one_line(tmp_path, capsys):
    path = _write(tmp_path, "bad.yaml", "expect-gpus: [8]\n")
    for verb in ("node", "cluster"):
        assert main(["verify", verb, "--expect", str(path)]) == ExitCode.BAD_INPUT
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--expect {path}: expect-gpus must be" in err


def _refused_quickly(path: Path, words: str) -> None:
    box: dict = {}

    def target() -> None:
        try:
            read_expect_file(path)
        except BadInput as e:
            box["error"] = e.message

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), f"reading {path} hung"
    assert words in box.get("error", ""), box


def test_a_fifo_without_a_writer_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "expect.yaml"
    os.mkfifo(fifo)
    _refused_quickly(fifo, "not a regular file")


def test_a_fifo_with_a_writer_that_never_stops_is_refused(tmp_path):
    fifo = tmp_path / "expect.yaml"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR)  # a writer holds it open: a plain open would not block here
    try:
        os.write(fd, b"expect-gpus: 1\n")
        _refused_quickly(fifo, "not a regular file")
    finally:
        os.close(fd)


def test_dev_zero_and_a_directory_are_refused(tmp_path):
    _refused_quickly(Path("/dev/zero"), "not a regular file")
    _refused_quickly(tmp_path, "not a regular file")


def test_a_file_over_the_cap_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    with path.open("wb") as f:
        f.write(b"# " + b"x" * MAX_BYTES + b"\n")
    _refused_quickly(path, "larger than the 1 MiB limit")


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(BadInput, match="does not exist"):
        read_expect_file(tmp_path / "nope.yaml")
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(BadInput, match="not UTF-8"):
        read_expect_file(path)


def test_an_empty_file_expects_nothing(tmp_path):
    exp = _exp(_write(tmp_path, "empty.yaml", "# nothing yet\n"))
    assert exp.expect_gpus is None and exp.skip == frozenset()


def test_snake_case_keys_and_an_unknown_skip_id(tmp_path):
    assert read_expect_file(_write(tmp_path, "a.yaml", "expect_gpus: 2\n")).expect_gpus == 2
    with pytest.raises(BadInput, match="unknown check id nope for --skip"):
        _exp(_write(tmp_path, "b.yaml", "skip: [nope]\n"))


def test_an_alias_bomb_in_skip_is_refused_at_once(tmp_path, capsys):
    import time

    text = "\n".join(
        ["x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        + [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 9)]
        + ["skip: *x8"]
    ) + "\n"
    assert len(text) < 1024
    path = _write(tmp_path, "bomb.yaml", text)
    started = time.monotonic()
    assert main(["verify", "node", "--expect", str(path)]) == ExitCode.BAD_INPUT
    assert time.monotonic() - started < HANG  # expanded, it would be 9**9 entries
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "YAML alias" in err and "line 2" in err, err


def test_a_single_alias_is_refused_too(tmp_path):
    path = _write(tmp_path, "alias.yaml", "import: &m [torch]\nlibrary: *m\n")
    with pytest.raises(BadInput, match=r"line 2: a YAML alias \(\*'m'\)"):
        read_expect_file(path)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e308", "0", "86401"])
def test_probe_timeout_must_be_finite_positive_and_at_most_a_day(tmp_path, value):
    path = _write(tmp_path, "t.yaml", f"probe-timeout: {value}\n")
    with pytest.raises(BadInput, match="probe-timeout must be a number of seconds above 0 and "
                                       "at most 86400"):
        read_expect_file(path)
    assert read_expect_file(_write(tmp_path, "ok.yaml", "probe-timeout: 86400\n"))


@pytest.mark.parametrize("value", [".inf", ".nan", "'9999999999999d'", "-1"])
def test_since_must_be_a_bounded_duration(tmp_path, value):
    path = _write(tmp_path, "s.yaml", f"since: {value}\n")
    with pytest.raises(BadInput, match="since must be a duration"):
        read_expect_file(path)


def test_no_message_embeds_a_long_value(tmp_path):
    long = "x" * 5000
    path = _write(tmp_path, "long.yaml", f"expect-gpus: {long}\n")
    with pytest.raises(BadInput) as e:
        read_expect_file(path)
    assert long not in e.value.message and "a str of 5000 characters" in e.value.message
    path = _write(tmp_path, "nested.yaml", f"skip: [{', '.join(['[1]'] * 500)}]\n")
    with pytest.raises(BadInput, match="skip must be a list of strings, not a list of 500 items"):
        read_expect_file(path)
    path = _write(tmp_path, "key.yaml", f"? {long}\n: 1\n")  # an explicit key: any length
    with pytest.raises(BadInput, match="unknown key a str of 5000 characters"):
        read_expect_file(path)
