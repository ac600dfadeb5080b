"""The notebook view as a browser draws it: headless Chromium renders a report's _repr_html_;
the verdict band is on top in the status's colour, failures come before warnings, passes and
skips, skips are folded in <details>, and a failing version-skew table is shown highlighted."""

from __future__ import annotations

import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from envcheck.report import Measurement, Report, Result, Status, Table
from envcheck.report_html import COLOURS

pytestmark = pytest.mark.browser  # tests/conftest.py: skipped without chromium

WORKER = "tcp://10.0.0.7:40123"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)


def _report() -> Report:
    return Report(
        "verify cluster",
        (
            Result("glibc", Status.PASS, "glibc 2.36", group="node"),
            Result("ucx", Status.SKIP, "UCX not installed and not expected", group="node"),
            Result("gpus", Status.SKIP, "no GPU on this machine", group="node"),
            Result("busy-gpus", Status.WARN, "GPU 0 is held by pid 4242", group="node"),
            Result("skew.distributed", Status.FAIL, f"distributed differs: {WORKER} has 2025.1.0",
                   node=WORKER, fix="install distributed==2026.1.0 on it", group="cluster"),
        ),
        measurements=(Measurement("facts round", 0.25, "s"),),
        tables=(Table("version skew", ("package", "client", WORKER, "verdict"),
                      (("distributed", "2026.1.0", "2025.1.0", "fail"),
                       ("numpy", "2.1.0", "2.1.0", "ok"))),),
    )


def _page(tmp_path: Path, report: Report) -> Path:
    page = tmp_path / "report.html"
    page.write_text('<!doctype html><html><head><meta charset="utf-8"></head><body>'
                    f"{report._repr_html_()}</body></html>", encoding="utf-8")
    return page


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["chromium", *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def _pixels(png: bytes, top: int) -> tuple[int, int, list[bytes]]:
    """(width, height, the first ``top`` rows as RGB bytes) of an 8-bit RGB or RGBA PNG, with
    the stdlib alone (zlib, struct)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        header = data if kind == b"IHDR" else header
        idat += data if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytes(width * bpp)
    for y in range(min(top, height)):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = bytes(line)
    return width, height, [bytes(r) for r in rows] if bpp == 3 else [
        b"".join(r[i:i + 3] for i in range(0, len(r), 4)) for r in rows]


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def test_the_screenshot_opens_with_a_band_in_the_verdicts_colour(tmp_path: Path) -> None:
    page = _page(tmp_path, _report())
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    width, height, rows = _pixels(shot.read_bytes(), 60)
    assert (width, height) == (1200, 900)
    top = [tuple(rows[y][x * 3:x * 3 + 3]) for y in range(0, 60) for x in (100, 600, 1000)]
    fail = _rgb(COLOURS["fail"])
    band = [p for p in top if all(abs(a - b) <= 8 for a, b in zip(p, fail, strict=True))]
    assert len(band) >= 30, top  # the band spans the width within the first 60 rows
    pass_ = _rgb(COLOURS["pass"])
    assert not [p for p in top if all(abs(a - b) <= 8 for a, b in zip(p, pass_, strict=True))]


class _Order(HTMLParser):
    """The DOM as Chromium serialized it: landmarks in document order, what sits in <details>."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.depth_details = 0
        self.in_details: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class") or ""
        if tag == "details":
            self.depth_details += 1
        for name in ("envcheck-verdict", "envcheck-highlight"):
            if name in cls:
                self.seen.append(name)

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self.depth_details -= 1

    def handle_data(self, data: str) -> None:
        for word in ("skew.distributed", "busy-gpus", "glibc 2.36", "UCX not installed",
                     "facts round"):
            if word in data:
                self.seen.append(word)
                if self.depth_details:
                    self.in_details.append(word)


def test_the_dom_puts_the_verdict_first_and_folds_passes_skips_and_measurements(
    tmp_path: Path,
) -> None:
    page = _page(tmp_path, _report())
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    order = _Order()
    order.feed(dom)
    first = {name: order.seen.index(name) for name in dict.fromkeys(order.seen)}
    assert first["envcheck-verdict"] == 0, order.seen
    assert first["skew.distributed"] < first["busy-gpus"] < first["envcheck-highlight"]
    assert first["envcheck-highlight"] < first["glibc 2.36"] < first["UCX not installed"]
    assert set(order.in_details) == {"glibc 2.36", "UCX not installed", "facts round"}
    assert "FAIL" in dom.split("envcheck-verdict", 1)[1].split("</div>", 1)[0]


def _passing() -> Report:
    return Report(
        "envcheck verify cluster",
        (
            Result("glibc", Status.PASS, "glibc 2.36", group="node"),
            Result("driver", Status.PASS, "driver 580.95", group="node"),
            Result("versions", Status.PASS, "4 workers agree on 212 packages", group="cluster"),
            Result("smoke.cudf", Status.PASS, "cudf merge on 4 GPUs", group="smoke"),
            Result("ucx", Status.SKIP, "UCX not installed and not expected", group="node"),
        ),
    )


def _dom(tmp_path: Path, page: Path) -> str:
    """The page as Chromium serializes it after loading."""
    return _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout


def test_the_passing_page_shows_what_passed_by_group_under_a_green_band(tmp_path: Path) -> None:
    from envcheck.report_html import page

    html = tmp_path / "pass.html"
    html.write_text(page(_passing()), encoding="utf-8")
    shot = tmp_path / "pass.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", html.as_uri())
    _, _, rows = _pixels(shot.read_bytes(), 40)
    pass_ = _rgb(COLOURS["pass"])
    top = [tuple(rows[y][x * 3:x * 3 + 3]) for y in range(0, 40) for x in (100, 600, 1000)]
    assert len([p for p in top if all(abs(a - b) <= 8 for a, b in zip(p, pass_, strict=True))
                ]) >= 20, top
    dom = _dom(tmp_path, html)
    for summary in ("2 passed (node)", "1 passed (cluster)", "1 passed (smoke)"):
        assert summary in dom
    # each group's section is open: its checks are on the page, not behind a click
    sections = [p for p in dom.split("<details")[1:] if "passed (" in p.split("</summary>")[0]]
    assert len(sections) == 3 and all('open=""' in p.split(">", 1)[0] for p in sections)
    assert "envcheck-run" in dom and "envcheck verify cluster" in dom


def test_the_failing_page_says_each_distinct_fix_once(tmp_path: Path) -> None:
    from envcheck.report_html import page

    fix = "install distributed==2026.1.0 on the workers (envcheck install LOCK --prefix P)"
    workers = [f"tcp://10.0.0.{i}:40123" for i in range(1, 5)]
    report = Report("envcheck verify cluster", tuple(
        Result("skew.distributed", Status.FAIL, "distributed 2025.1.0, client 2026.1.0",
               node=w, fix=fix, group="cluster") for w in workers
    ) + (Result("gpus", Status.FAIL, "1 of 8 GPUs missing", node=workers[0],
                fix="drain the node", group="node"),))
    html = tmp_path / "fail.html"
    html.write_text(page(report), encoding="utf-8")
    dom = _dom(tmp_path, html)
    assert dom.count("install distributed==2026.1.0") == 1
    assert dom.count("drain the node") == 1
    assert dom.count("fix 1") == 4 and dom.count("fix 2") == 1
    assert "skew.distributed on 4 nodes" in dom and f"gpus[{workers[0]}]" in dom
