"""Sweep `envcheck recipe new` over every release x driver CUDA x toolkit x Python x OS and
count what it accepts and refuses, and why; the table goes into docs/recipes.md.

    python scripts/record/rapids_sweep.py [--check]

Each accepted recipe is linted (it must lint clean: recipe new and the lint agree); each
refusal keeps its rule and the record's source lines. tests/build/test_record_sweep.py runs
the same sweep and holds the docs' table to it.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from doc_section import Section

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "recipes.md"
BEGIN, END = "<!-- sweep: begin (scripts/record/rapids_sweep.py) -->", "<!-- sweep: end -->"
SECTION = Section(DOC, BEGIN, END, "the sweep's table")
# driver CUDAs: each major's first and newest minors, and the floors between
DRIVERS = ("11.0", "11.2", "11.4", "11.8", "12.0", "12.2", "12.8", "12.9", "13.0", "13.1")
# one OS per glibc that matters: 2.17 (CentOS 7), 2.27 (below manylinux_2_28), 2.28, 2.34
OSES = ("el7", "ubuntu18.04", "el8", "el9")
OUTSIDE_PYTHON = "3.8"  # a Python no release of the record was built for


@dataclass(frozen=True)
class Case:
    rapids: str
    cuda: str
    os: str
    python: str | None
    toolkit: str | None
    rule: str  # "" when accepted
    reason: str  # the refusal's short line, or ""
    sources: tuple[str, ...]  # the refusal's record pointers
    lint_errors: tuple[str, ...]  # the lint's errors on the accepted recipe's entries

    @property
    def args(self) -> str:
        out = f"--rapids {self.rapids} --cuda {self.cuda} --os {self.os}"
        out += f" --python {self.python}" if self.python else ""
        return out + (f" --toolkit {self.toolkit}" if self.toolkit else "")


def _pythons(release) -> list[str | None]:  # type: ignore[no-untyped-def]
    py = release.get("python")
    return [None, *(py.value if py.known else []), OUTSIDE_PYTHON]


def _toolkits(release) -> list[str | None]:  # type: ignore[no-untyped-def]
    builds = release.get("cuda_builds")
    return [None, *(builds.value if builds.known else [])]


def run_one(record, rapids, cuda, os_, python, toolkit) -> Case:  # type: ignore[no-untyped-def]
    from envcheck.errors import EnvcheckError
    from envcheck.resolve.record.lint import ERROR, lint
    from envcheck.resolve.record.new.options import Options
    from envcheck.resolve.record.new.pipeline import _compose, _Refused

    opts = Options(rapids=rapids, cuda=cuda, os=os_, python=python, toolkit=toolkit)
    try:
        text = _compose(opts, record)
    except _Refused as e:
        f = e.finding
        return Case(rapids, cuda, os_, python, toolkit, f.rule, f.message, f.sources, ())
    except EnvcheckError as e:
        rule = m.group(1) if (m := re.search(r"rule (rapids\.[\w-]+)", str(e))) else "bad-input"
        return Case(rapids, cuda, os_, python, toolkit, rule, str(e), (), ())
    deps = [ln.split("#")[0].strip()[2:] for ln in text.splitlines() if ln.startswith("  - ")]
    system = {"cuda": cuda, "glibc": _glibc(text)}
    errors = tuple(f.line() for f in lint(deps, system, record) if f.severity == ERROR)
    return Case(rapids, cuda, os_, python, toolkit, "", "", (), errors)


def _glibc(text: str) -> str:
    m = re.search(r'^system: \{cuda: "[^"]*", glibc: "([^"]+)"\}', text, re.M)
    return m.group(1) if m else ""


def sweep(record=None) -> list[Case]:  # type: ignore[no-untyped-def]
    """Every release x driver x OS x Python (default, each built for, one outside) with the
    default toolkit, and every release x driver x toolkit (each build) on el8."""
    from envcheck.resolve.record.table import load_record, release_key

    record = record or load_record()
    out = []
    for rel in sorted(record.releases, key=release_key):
        release = record.release(rel)
        for cuda in DRIVERS:
            for os_ in OSES:
                for py in _pythons(release):
                    out.append(run_one(record, rel, cuda, os_, py, None))
            for toolkit in _toolkits(release)[1:]:
                out.append(run_one(record, rel, cuda, "el8", None, toolkit))
    return out


def _why(case: Case) -> str:
    """The refusal's reason without its asides, entries and the numbers that vary."""
    from envcheck.resolve.record.refusal import short_reason

    text = re.sub(r"recipe entry '[^']*' contradicts RAPIDS [\d.]+ \('[^']*'\): ", "", case.reason)
    text = re.sub(r"(?<![\w.])\d+\.\d+(\.\d+)*", "N", short_reason(text))
    text = re.sub(r"driver >= \d+", "driver >= N", text)
    return re.sub(r"N(, N)+", "N, ...", text)


def examples(cases: list[Case]) -> dict[tuple[str, str], Case]:
    """The first refusal of each (rule, why)."""
    first: dict[tuple[str, str], Case] = {}
    for c in cases:
        if c.rule:
            first.setdefault((c.rule, _why(c)), c)
    return first


def table(cases: list[Case]) -> str:
    """Markdown: accepted, then each rule's refusals by reason, with a count and an example."""
    ok = [c for c in cases if not c.rule]
    lines = [
        BEGIN,
        f"{len(cases)} combinations of `recipe new` (the {len({c.rapids for c in cases})} "
        f"releases of the record x driver CUDA {', '.join(DRIVERS)} x OS {', '.join(OSES)} x "
        "Python: the default, each the release was built for, 3.8; and x each `--toolkit` the "
        "release was built with, on el8): "
        f"{len(ok)} accepted, each linting clean; {len(cases) - len(ok)} refused, each citing "
        "the record's source lines.",
        "",
        "| verdict | rule | why (numbers as N) | combinations | example |",
        "|---|---|---|---|---|",
        f"| accepted | | | {len(ok)} | `{ok[0].args}` |" if ok else "| accepted | | | 0 | |",
    ]
    groups = Counter((c.rule, _why(c)) for c in cases if c.rule)
    first = examples(cases)
    for (rule, why), n in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1])):
        why_cell = why.replace("|", "\\|")
        lines.append(f"| refused | `{rule}` | {why_cell} | {n} | `{first[(rule, why)].args}` |")
    return "\n".join([*lines, END])


def with_table(doc: str, text: str) -> str:
    """``doc`` with the part between the markers replaced by ``text``."""
    return SECTION.replaced(doc, text)


def main(argv: list[str] | None = None) -> int:
    return SECTION.main("python scripts/record/rapids_sweep.py", lambda: table(sweep()), argv,
                        description=__doc__)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
