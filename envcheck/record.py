"""@frozen records for envcheck outside the facts package, from their one source.

The source is envcheck/verify/facts/record.py (the facts package is shipped by source and
imports nothing from envcheck, so the code lives there). Importing it by its dotted name would
run the facts package's __init__ first, that is the whole collector, which a verb that only
reports (build, install) should not pay for. So the file is loaded by itself, as
`envcheck._record`: the facts package loads the same file again as its own `record` module.
The two hold no shared state: a class made by either's `frozen` works with both's helpers.
"""

from __future__ import annotations

import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path

_NAME = "envcheck._record"


def _load():  # noqa: ANN202 - the module itself
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    path = Path(__file__).parent / "verify" / "facts" / "record.py"
    spec = spec_from_loader(_NAME, SourceFileLoader(_NAME, str(path)))
    module = module_from_spec(spec)
    sys.modules[_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_NAME]
        raise
    return module


_record = _load()
field = _record.field
field_names = _record.field_names
frozen = _record.frozen
replace = _record.replace
