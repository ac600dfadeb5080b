"""The facts package shipped by value, to processes that do not have envcheck installed.

One mechanism for both places it goes: Dask workers and schedulers (verify/cluster/gather.py)
and `--prefix` interpreters (verify/node/prefix.py). The payload is the package's module
sources (module name -> source) with one digest over all of them; `load_facts` installs them
on the far side as a package named for the digest, so that the modules' relative imports
resolve there, versions never collide, and a process loads each version once and keeps it
(with its caches and NVML state) for the rest of its life.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import inspect
import json
import marshal
import textwrap
import zlib
from dataclasses import dataclass
from pathlib import Path

import envcheck.verify.facts as facts_package

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Callable

# The name the package gets on the far side: PREFIX + digest.
PREFIX = "_envcheck_facts_"


@dataclass(frozen=True)
class Payload:
    """The facts package as compressed sources, with a digest that names it on the other side."""

    digest: str
    source: bytes  # zlib-compressed JSON: {"__init__": source, "model": source, ...}


@functools.lru_cache(maxsize=1)
def facts_sources() -> dict[str, str]:
    """module name within the package ("__init__", "model", ...) -> its source; read once.

    __main__ (the `python -m` entry point) stays home: loading it would run it."""
    where = Path(facts_package.__file__).parent
    return {
        p.stem: p.read_text(encoding="utf-8")
        for p in sorted(where.glob("*.py"))
        if p.stem != "__main__"
    }


@functools.lru_cache(maxsize=2)
def facts_payload(compiled: bool = True) -> Payload:
    """Made once per process. Sources rather than cloudpickle's by-value pickle of the modules,
    which is made and loaded again on every call: each process loads them once (see
    load_facts). ``compiled``: with them, the modules compiled by this interpreter (marshal,
    under its bytecode's magic number): a process of the same Python runs those and compiles
    nothing, about two thirds of a worker's first facts round; any other compiles the
    sources. The digest is the sources' alone."""
    sources = facts_sources()
    text = json.dumps(sources, sort_keys=True).encode()
    digest = hashlib.sha256(text).hexdigest()[:16]
    if compiled:
        codes = {name: compile(source, f"<envcheck facts {digest}>/{name}.py", "exec")
                 for name, source in sources.items()}
        text = json.dumps({**sources, CODE_KEY: {
            "magic": importlib.util.MAGIC_NUMBER.hex(),
            "code": base64.b64encode(marshal.dumps(codes)).decode("ascii"),
        }}, sort_keys=True).encode()
    return Payload(digest, zlib.compress(text, 6))


# The key of the compiled modules among the payload's sources: no module's name.
CODE_KEY = "__compiled__"


def _make_loader() -> Callable[[str, bytes], Any]:
    # Nested, so never importable by name: cloudpickle ships it by value (gather's runner holds
    # it), and its source, standard library only, goes into standalone_source().
    # The facts package of this digest: the one this process loaded before, else installed
    # from blob (zlib-compressed JSON of module name -> source); None when it was not loaded
    # before and blob is empty (asked by digest alone: the caller sends the sources again).
    # Comments, not docstrings: they would travel with every round's runner.
    def load_facts(digest: str, blob: bytes) -> Any:
        import importlib
        import importlib.util
        import json
        import sys
        import types
        import zlib

        name = "_envcheck_facts_" + digest  # PREFIX + digest
        package = sys.modules.get(name)
        if package is not None or not blob:
            return package
        sources = json.loads(zlib.decompress(blob).decode("utf-8"))
        codes = {}  # module -> its code, where the sender's Python is this one (CODE_KEY)
        compiled = sources.pop("__compiled__", None)
        if compiled and compiled.get("magic") == importlib.util.MAGIC_NUMBER.hex():
            import base64
            import marshal

            codes = marshal.loads(base64.b64decode(compiled["code"]))

        def short(fullname: str) -> str:  # "model" for <name>.model, "__init__" for <name>
            if fullname == name:
                return "__init__"
            return fullname[len(name) + 1 :] if fullname.startswith(name + ".") else ""

        def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
            if short(fullname) not in sources:
                return None
            is_package = fullname == name
            return importlib.util.spec_from_loader(fullname, finder, is_package=is_package)

        def exec_module(module: Any) -> None:
            where = "<envcheck facts " + digest + ">/" + short(module.__name__) + ".py"
            code = codes.get(short(module.__name__))
            if code is None:
                code = compile(sources[short(module.__name__)], where, "exec")
            exec(code, module.__dict__)

        # Finder and loader of the package's modules from `sources`, on sys.meta_path only
        # while the package loads; get_source gives tracebacks their lines (linecache).
        finder = types.SimpleNamespace(
            find_spec=find_spec,
            create_module=lambda spec: None,
            exec_module=exec_module,
            get_source=lambda fullname: sources.get(short(fullname), ""),
        )

        def forget() -> None:  # this version's modules, left by a failed or forgotten load
            # list(): one C-level copy; other threads of this process may be importing
            for key in [k for k in list(sys.modules) if k == name or k.startswith(name + ".")]:
                sys.modules.pop(key, None)

        forget()
        sys.meta_path.insert(0, finder)
        try:
            package = importlib.import_module(name)
            for module in sorted(sources):  # every module now: the finder does not stay
                if module != "__init__":
                    importlib.import_module(name + "." + module)
        except BaseException:
            forget()
            raise
        finally:
            sys.meta_path.remove(finder)
        return package

    return load_facts


load_facts = _make_loader()


# Run as a script (a file, or `python -I - KWARGS_JSON` with the script on stdin), the
# standalone source prints this interpreter's facts as one JSON line; collect_node_facts'
# keyword arguments come as JSON in argv[1].
_STANDALONE_MAIN = """
def main():
    import json
    import sys

    facts = load_facts(DIGEST, PAYLOAD)
    kwargs = json.loads(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else {}
    collected = facts.collect_node_facts("local", "", **kwargs)
    sys.stdout.write(json.dumps(facts.facts_to_dict(collected)))


if __name__ == "__main__":
    main()
"""


@functools.lru_cache(maxsize=1)
def standalone_source() -> str:
    """One self-contained Python source: load_facts, the payload, and a main.

    Run, it prints the facts; imported, `load_facts(DIGEST, PAYLOAD)` gives the package. The
    `--prefix` interpreters run it from stdin."""
    payload = facts_payload(compiled=False)  # other interpreters: the sources alone
    encoded = base64.b85encode(payload.source).decode("ascii")
    lines = [encoded[i : i + 96] for i in range(0, len(encoded), 96)]
    return (
        '"""envcheck\'s facts collector, standalone (standard library only)."""\n\n'
        "from __future__ import annotations\n\n"
        "import base64\n"
        "from typing import Any\n\n\n"
        + textwrap.dedent(inspect.getsource(load_facts))
        + f"\n\nDIGEST = {payload.digest!r}\n"
        + "PAYLOAD = base64.b85decode(\n"
        + "".join(f"    {line!r}\n" for line in lines)
        + ")\n\n"
        + _STANDALONE_MAIN
    )
