"""Start-up cost of `envcheck --version`, `--help` and `verify node --quiet` against
`python -c pass`.

Whole processes, run in turn (A B A B ...) so a drift of the machine's speed hits both; the
ratio is taken pair by pair and the median reported. The targets: --version at most 1.5x a bare
interpreter start, `verify node --quiet` (every check on a GPU-less node) at most 3x. Also
lists which modules the CLI imports for --version and --help that a bare start does not
(report, rich, xml, importlib.metadata must not be among them).

    python bench/startup.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pairs import load_average, quartiles  # noqa: E402

ENVCHECK = str(Path(sys.executable).with_name("envcheck"))
FORBIDDEN = ("envcheck.report", "rich", "xml", "importlib.metadata", "json")


def _wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # a verdict's code
    return time.perf_counter() - t


def _paired(a: list[str], b: list[str], runs: int) -> tuple[float, float, list[float]]:
    _wall(a), _wall(b)  # warm the page cache
    ta, tb, ratios = [], [], []
    for _ in range(runs):
        x, y = _wall(a), _wall(b)
        ta.append(x)
        tb.append(y)
        ratios.append(x / y)
    return statistics.median(ta), statistics.median(tb), ratios


def _extra_modules(argv: list[str]) -> list[str]:
    code = (
        "import sys; base = set(sys.modules); from envcheck.cli import main\n"
        f"try: main({argv!r})\nexcept SystemExit: pass\n"
        "print('\\n'.join(sorted(set(sys.modules) - base)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return done.stderr.split()


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    bare = [sys.executable, "-c", "pass"]
    print(f"{sys.executable} (load average {load_average()})")
    for argv in (["--version"], ["--help"], ["verify", "node", "--quiet"]):
        a, b, ratios = _paired([ENVCHECK, *argv], bare, runs)
        print(f"envcheck {' '.join(argv)}: {a * 1e3:.1f} ms, python -c pass: {b * 1e3:.1f} ms, "
              f"ratio {statistics.median(ratios):.2f} (median of {runs} pairs; quartiles "
              f"{quartiles(ratios)}; load {load_average()})")  # fmt: skip
        if argv[0] == "verify":
            continue  # a verb imports what it needs
        mods = _extra_modules(argv)
        bad = [m for m in mods if m.startswith(FORBIDDEN)]
        print(f"  modules beyond a bare start: {len(mods)}; forbidden among them: {bad or 'none'}")


if __name__ == "__main__":
    main()
