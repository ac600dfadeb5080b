"""envcheck.text.first_line: the one way an exception becomes a line of a report."""

from envcheck.text import first_line


def test_type_and_first_non_empty_line():
    assert first_line(ValueError("\n\n  bad value  \nsecond line")) == "ValueError: bad value"


def test_type_alone_when_the_text_is_empty():
    assert first_line(TimeoutError()) == "TimeoutError"
    assert first_line(RuntimeError("  \n ")) == "RuntimeError"


def test_truncated_to_the_limit():
    line = first_line(OSError("x" * 500), limit=40)
    assert len(line) == 40 and line.startswith("OSError: xxx") and line.endswith("...")
    assert first_line(OSError("x" * 10), limit=40) == "OSError: " + "x" * 10
