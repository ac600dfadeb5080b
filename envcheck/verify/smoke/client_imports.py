"""The modules the client imports to build the smoke tests' graphs (SmokeTest.client_modules):
each imported once, in one thread, beside the tests already running. A test that needs none
(the DDP ranks, the GPU kernel) does not wait for them; a test that needs one waits only for
its own. One thread, not one per test: packages that import each other (dask.array,
dask.dataframe, xgboost.dask) imported from several threads at once can meet a module half
initialised."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from envcheck.text import first_line


def import_error(module: str) -> str:
    """Why ``module`` does not import on the client ("" when it does).

    A real import, not find_spec: dask.dataframe is present but needs pyarrow, dask_cudf is
    present but needs a CUDA driver; the smoke test imports them anyway.
    """
    try:
        importlib.import_module(module)
    except Exception as exc:
        return first_line(exc)
    return ""


class ClientImports:
    """``modules`` imported in order, in one background thread, as soon as this is made."""

    def __init__(self, modules: Iterable[str],
                 why_not: Callable[[str], str] = import_error) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="envcheck-client-imports")
        self._done: dict[str, Future[str]] = {
            m: self._pool.submit(why_not, m) for m in dict.fromkeys(modules)}
        self._why_not = why_not

    def error(self, module: str) -> str:
        """Why ``module`` did not import ("" when it did), once its import has run; one not
        asked for up front is imported in the same thread, after the others."""
        if module not in self._done:
            self._done.setdefault(module, self._pool.submit(self._why_not, module))
        return self._done[module].result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> ClientImports:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
