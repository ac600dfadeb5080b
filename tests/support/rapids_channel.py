"""A channel shaped by the RAPIDS release record: records for every release's libraries at the
versions the record names, and the base packages around them (Python, CUDA, dask, ...)."""

from __future__ import annotations

import re

from envcheck.resolve.record.specs import matches
from envcheck.resolve.record.table import load_record
from tests.support.channel import pkg

RECORD = load_record()


def a_version(spec: str) -> str:
    """The lowest version named in a spec that satisfies it (a channel needs one record)."""
    for n in re.findall(r"\d+(?:\.\d+)*", spec):
        for v in (n, f"{n}.1", f"{n}.99"):
            if matches(spec, v):
                return v
    raise ValueError(spec)


def release_packages(rel: str) -> list[dict]:
    """Records shaped by the record's own versions for one release (every Python, CUDA major)."""
    r = RECORD.release(rel)
    glibc = f"__glibc >={r.get('glibc').value}"
    v = {k: r.get(k) for k in r.facts}
    out: list[dict] = []
    pins = {n: a_version(str(v[n].value)) for n in ("dask", "distributed") if v[n].known}
    dask_deps = [f"{n} =={ver}" for n, ver in pins.items()]
    for n, ver in pins.items():
        deps = ["python >=3.8"] + (["distributed =={}".format(pins["distributed"])] * (n == "dask"))
        out.append(pkg(n, ver, deps, noarch="python"))
    if v["dask-expr"].known if "dask-expr" in v else False:
        out.append(pkg("dask-expr", a_version(v["dask-expr"].value), noarch="python"))
    libs = ["cudf", "dask-cudf", "dask-cuda", "cuml", "cugraph", "cuspatial", "cuxfilter"]
    libs += ["cucim", "cusignal"]
    # 24.06-24.10: no cudf-cuNN wheel on PyPI says which majors; records for both then
    majors = v["cuda_majors"].value if v["cuda_majors"].known else ["11", "12"]
    rule = str(v["cuda_rule"].value)
    for py in v["python"].value:
        nodot = py.replace(".", "")
        for major in majors:
            cuda_dep = (
                f"cudatoolkit {major}.*"
                if rule.startswith("cudatoolkit")
                else f"cuda-version >={major},<{int(major) + 1}"
            )
            build = f"cuda{major}_py{nodot}_0"
            deps = [f"python {py}.*", glibc, cuda_dep, *dask_deps]
            out += [pkg(lib, f"{rel}.00", deps, build=build) for lib in libs]
            if v["xgboost"].known:
                xv = str(v["xgboost"].value).split(" ")[0]
                xb = f"rapidsai_py{nodot}h{major}_0"
                out.append(pkg("xgboost", xv, [f"python {py}.*", glibc], build=xb))
                out.append(pkg("rapids-xgboost", f"{rel}.00", [f"xgboost =={xv}"], build=build))
            else:  # the record does not say which xgboost (26.10): the meta-package alone
                out.append(pkg("rapids-xgboost", f"{rel}.00", build=build))
    for name in ("ucx-py", "distributed-ucxx"):
        if name in v and v[name].known:
            out.append(pkg(name, str(v[name].value).replace("*", "00"), noarch="python"))
    return out


def base_packages() -> list[dict]:
    """What every release needs around it, at the versions the record's ranges admit."""
    out = [pkg("python", f"{py}.0", ["__glibc >=2.17"], build="h0_cpython")
           for py in ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")]  # fmt: skip
    for major, minors in (("11", range(10)), ("12", range(10)), ("13", range(3))):
        for minor in minors:
            out.append(pkg("cudatoolkit", f"{major}.{minor}.0", [f"__cuda >={major}"]))
            out.append(pkg("cuda-version", f"{major}.{minor}", [f"__cuda >={major}"]))
    names = ("ucx", "nccl", "cupy", "numpy", "pandas", "pytorch")
    seen = set()
    for r in RECORD.releases.values():
        for n in names:
            fact = r.get(n)
            if fact.known and (n, a_version(str(fact.value))) not in seen:
                seen.add((n, a_version(str(fact.value))))
    for n, ver in sorted(seen):
        build = "cuda11_0" if n == "pytorch" else "0"
        out.append(pkg(n, ver, build=build))
    out += [
        pkg("pytorch", "2.0.0", build="cuda118_0"),
        pkg("ucx-proc", "1.0.0", build="gpu"),
        pkg("dask-sql", "2022.8.0", noarch="python"),
    ]
    return out
