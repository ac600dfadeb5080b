"""A refusal's shape: the reason without its asides, the nearest choices that work, one line."""

from __future__ import annotations

from envcheck.resolve.record.refusal import (
    LIMIT,
    by_distance,
    nearest,
    refusal_line,
    short_reason,
)


def test_short_reason_drops_parentheses_nested_and_source_lists() -> None:
    message = ("RAPIDS 24.06 needs glibc >= 2.28 (no wheel (see notice 37); docs say 2.28); "
               "the recipe targets glibc 2.17 [docs/a.md:1, docs/b.yml:8]")
    assert short_reason(message) == (
        "RAPIDS 24.06 needs glibc >= 2.28; the recipe targets glibc 2.17"
    )
    assert short_reason("entry 'python=3.12' contradicts RAPIDS 24.04 ('cudf=24.04'): it was") \
        == "entry 'python=3.12' contradicts RAPIDS 24.04: it was"


def test_nearest_first_older_before_newer_at_the_same_distance() -> None:
    releases = ["22.08", "24.02", "24.04", "24.08", "24.10"]
    assert by_distance("24.06", releases) == ["24.04", "24.08", "24.02", "24.10", "22.08"]
    assert by_distance("3.10", ["3.9", "3.10", "3.11"]) == ["3.9", "3.11"]
    assert nearest("24.06", releases, lambda r: r < "24.06") == "24.04"
    assert nearest("24.06", releases, lambda r: False) is None


def test_refusal_line_is_short_and_offers_each_choice() -> None:
    line = refusal_line("recipe new: RAPIDS 24.06 needs glibc >= 2.28",
                        [("--rapids", "24.04"), ("--os", "el8")], "rapids.glibc")
    assert line == ("recipe new: RAPIDS 24.06 needs glibc >= 2.28: try --rapids 24.04 or "
                    "--os el8 (rule rapids.glibc; --debug names its sources)")
    assert "no single flag change" in refusal_line("x", [])
    assert len(refusal_line("y" * 500, [("--os", "el8")], "r")) <= LIMIT
