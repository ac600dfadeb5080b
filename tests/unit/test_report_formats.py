"""The report's renderings stay well formed with hostile text: JUnit parses, the Nagios line has
no raw control byte, the notebook HTML escapes everything and parses."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from envcheck.report import Measurement, Report, Result, Status, Table, write_junit
from tests.support.report_schema import validated

# an Xid line as a kernel log can carry it: BEL, an ANSI colour, a NUL, a form feed, DEL, C1
HOSTILE = "GPU has fallen off the bus.\x07\x1b[31m\x00\x0c\x7f\x85 \ud800end"
CONTROL = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]


def _report(message: str) -> Report:
    return Report(
        "verify node <x>",
        results=(
            Result("xid", Status.FAIL, message, node="gpu-node-1\x1b", fix="drain\x00 the node"),
            Result("gpus", Status.PASS, "8 GPUs"),
            Result("ucx", Status.SKIP, "no UCX"),
            Result("probe", Status.ERROR, "raised <&>"),
        ),
        measurements=(Measurement("h2d\x07", 12.5, "GB/s", node="n1", reference=25.0),),
        tables=(Table("skew", ("pkg", "version"), (("dask", "<b>2024</b>"),)),),
        environment={"host": "n1"},
    )


def test_junit_parses_with_control_characters_and_keeps_them_visible(tmp_path):
    path = tmp_path / "r.xml"
    write_junit(_report(HOSTILE), path)
    raw = path.read_bytes()
    assert not any(c.encode() in raw for c in CONTROL if c not in "\t\n\r")
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("errors") == "1"
    failure = suite.find("testcase/failure")
    assert failure is not None
    assert failure.get("message").startswith("GPU has fallen off the bus.\\x07\\x1b[31m\\x00")
    assert "\\ud800end" in failure.get("message")


def test_the_json_of_a_hostile_report_validates(tmp_path):
    from envcheck.report import write_json

    path = tmp_path / "r.json"
    write_json(_report(HOSTILE), path)
    data = validated(path)
    assert data["results"][0]["message"].endswith("\\ud800end")


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.open: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        self.tags.append(tag)
        self.open.append(tag)

    def handle_endtag(self, tag):  # noqa: ANN001
        assert self.open and self.open.pop() == tag, (tag, self.open)

    def handle_data(self, data):  # noqa: ANN001
        self.text.append(data)


def test_html_escapes_a_hostile_message_and_parses():
    message = "<script>alert('x')</script> & \"quoted\" " + HOSTILE
    html = _report(message)._repr_html_()
    parsed = _Collect()
    parsed.feed(html)
    parsed.close()
    assert parsed.open == []  # every tag closed, in order
    assert "script" not in parsed.tags and "b" not in parsed.tags
    text = "".join(parsed.text)
    assert "<script>alert('x')</script>" in text and "<b>2024</b>" in text  # shown, as text
    assert "\x07" not in html and "\x1b" not in html
    # what is wrong (error, fail), passes, measurements, skew; skips are a list
    assert parsed.tags.count("tr") == (1 + 2) + (1 + 1) + (1 + 1) + (1 + 1)
    for colour in ("#cf222e", "#1a7f37", "#6e7781", "#8250df"):  # fail, pass, skip, error
        assert colour in html
    assert "drain\\x00 the node" in text  # the fix column


def test_nagios_line_has_no_raw_control_bytes(tmp_path):
    log = tmp_path / "kern.log"
    log.write_bytes(
        b"[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1122, GPU has fallen off the"
        b" bus.\x07\x1b[31m\x00\x0c\x7f\xc2\x85 end\n"
    )
    js = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "envcheck", "verify", "node", "--nagios", "--no-plugins",
         "--kernel-log", str(log), "--json", str(js)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done
    line = done.stdout.decode()
    assert line.startswith("ENVCHECK CRITICAL") and line.count("\n") == 1
    assert not any(c in line for c in CONTROL), repr(line)
    assert "Xid 79" in line and "\\x07\\x1b[31m" in line
    xid = [r for r in validated(js)["results"] if r["check"] == "xid"]
    assert xid and "\\x07" in xid[0]["message"]
    json.dumps(xid)  # plain, serialisable strings
