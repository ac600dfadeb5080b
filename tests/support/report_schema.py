"""The --json report's schema (envcheck/report.schema.json), for tests to validate against."""

from __future__ import annotations

import functools
import json
from importlib.resources import files
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=1)
def validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads(files("envcheck").joinpath("report.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(data: Any) -> list[str]:
    """Every way ``data`` breaks the schema, one line each (empty: it validates)."""
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator().iter_errors(data)
    ]


def validated(path: Path) -> dict:
    """The JSON report at ``path``, asserted valid."""
    data = json.loads(Path(path).read_text())
    errors = schema_errors(data)
    assert not errors, f"{path} breaks envcheck/report.schema.json: {errors}"
    return data
