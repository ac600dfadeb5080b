"""The one table of health thresholds: its numbers are the quoted source lines', and
docs/verify-node.md carries every row of it."""

from __future__ import annotations

import re
from pathlib import Path

from envcheck.verify.node.checks.gpu import thresholds as t

ROOT = Path(__file__).resolve().parents[2]


def _defines() -> dict[str, float]:
    text = (ROOT / "tests" / "data" / "health-authorities.md").read_text()
    return {m[1]: float(m[2]) for m in re.finditer(r"#define (DCGM_LIMIT_\w+)\s+([\d.]+)", text)}


def test_constants_are_dcgms_quoted_limits():
    d = _defines()
    assert t.NVLINK_CRC_PER_S == d["DCGM_LIMIT_MAX_NVLINK_CRC_ERROR"] == 100.0
    assert d["DCGM_LIMIT_MAX_NVLINK_ERROR"] == t.NVLINK_ERROR_MIN
    assert d["DCGM_LIMIT_MAX_RETIRED_PAGES"] == t.RETIRED_PAGES_MAX
    assert d["DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT"] == t.RETIRED_PAGES_DBE_SOFT
    assert d["DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE"] == t.ROW_REMAP_UNCORRECTABLE_MAX


def test_pcie_rates_are_the_quoted_per_lane_rates():
    text = (ROOT / "tests" / "data" / "health-authorities.md").read_text()
    quoted = {int(g): float(r) for g, r in re.findall(r"Gen(\d) speed .*= ([\d.]+) errors/min",
                                                         text)}
    assert quoted and all(t.PCIE_REPLAYS_PER_LANE_PER_MIN[g - 1] == r for g, r in quoted.items())


def test_docs_carry_every_row_with_its_source():
    doc = (ROOT / "docs" / "verify-node.md").read_text()
    for row in t.THRESHOLDS:
        line = f"| `{row.check}` | {row.condition} | {row.reading} |"
        assert line in doc, row.condition
        assert row.source in doc
