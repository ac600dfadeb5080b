"""The tests' downloads (tests/support/fetch.py and .ci/run's `retry`): three tries with a pause,
and a last failure that says what the tool said."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fetch import FetchFailed, fetch

ROOT = Path(__file__).resolve().parents[2]
# fails (exit 2, a line on stderr) until its counter file holds `n` tries, then succeeds
FLAKY = """
import sys
from pathlib import Path
counter, n = Path(sys.argv[1]), int(sys.argv[2])
tries = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(tries))
if tries < n:
    print(f"E: mirror reset the connection (try {tries})", file=sys.stderr)
    sys.exit(2)
print("fetched")
"""


def _flaky(tmp_path: Path, succeeds_on: int) -> list[str]:
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY)
    return [sys.executable, str(script), str(tmp_path / "tries"), str(succeeds_on)]


def test_a_download_that_fails_twice_succeeds_on_the_third_try(tmp_path: Path) -> None:
    done = fetch(_flaky(tmp_path, 3), "a flaky mirror", pause=0)
    assert done.stdout.strip() == "fetched"
    assert (tmp_path / "tries").read_text() == "3"


def test_the_last_failure_names_the_command_and_the_tools_own_output(tmp_path: Path) -> None:
    with pytest.raises(FetchFailed) as e:
        fetch(_flaky(tmp_path, 99), "a dead mirror", pause=0)
    said = str(e.value)
    assert said.startswith("a dead mirror: `") and "failed 3 times (exit 2, 2, 2)" in said
    assert said.rstrip().endswith("E: mirror reset the connection (try 3)")
    assert (tmp_path / "tries").read_text() == "3"


@pytest.mark.parametrize("succeeds_on, code", [(3, 0), (4, 1)], ids=["third-try", "never"])
def test_ci_run_retries_the_same_way(tmp_path: Path, succeeds_on: int, code: int) -> None:
    """.ci/run's own `retry` function, taken out of the script and run with no pauses."""
    text = (ROOT / ".ci" / "run").read_text()
    body = text[text.index("retry() {"):text.index("\n}\n", text.index("retry() {")) + 3]
    body = body.replace("sleep $((10 * i))", "true")
    cmd = " ".join(_flaky(tmp_path, succeeds_on))
    done = subprocess.run(["bash", "-c", f"{body}\nretry 'a mirror' {cmd}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stdout.count("ci: a mirror failed (try") == min(succeeds_on - 1, 3)
    if code:
        assert "E: mirror reset the connection (try 3)" in done.stdout
        assert done.stdout.rstrip().endswith("ci: a mirror failed 3 times")
