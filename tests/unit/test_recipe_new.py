"""envcheck recipe new: record-pinned recipes lint clean, solve, and refuse what it rules out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envcheck.cli import build_parser, main
from envcheck.errors import ExitCode
from envcheck.resolve.build import exclusion_constraints
from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.record.lint import ERROR, lint, matches
from envcheck.resolve.record.new import OSES, Options, command_in, compose
from envcheck.resolve.record.table import load_record
from envcheck.resolve.solve import solve_specs, virtual_packages
from tests.support.channel import pkg, write_channel

ROOT = Path(__file__).resolve().parents[2]
RECORD = load_record()
COVERED = sorted(RECORD.releases)
EXTRAS = ("xgboost", "ucx", "torch", "dask-sql")


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


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> str:
    records = {}
    for r in [*base_packages(), *(p for rel in COVERED for p in release_packages(rel))]:
        records[(r["name"], r["version"], r["build"])] = r
    return write_channel(tmp_path_factory.mktemp("record-channel"), records.values())


def _cases():
    for rel in COVERED:
        for os_ in ("el7", "el8"):
            yield rel, os_


@pytest.mark.parametrize(("rel", "os_"), list(_cases()))
def test_recipe_new_for_every_release_and_os_lints_clean_and_solves(tmp_path, channel, rel, os_):
    release = RECORD.release(rel)
    majors = release.get("cuda_majors")
    cuda = "12.8" if majors.known and "11" not in majors.value else "11.8"
    opts = Options(rapids=rel, cuda=cuda, os=os_, with_=EXTRAS, channels=(channel,))
    glibc = OSES[os_][0]
    if matches(f"<{release.get('glibc').value}", glibc):
        floor = re.escape(str(release.get("glibc").value))
        with pytest.raises(Exception, match=rf"rapids\.glibc: .*needs glibc >= {floor}"):
            compose(opts)
        return
    text = compose(opts)
    path = tmp_path / "r.yaml"
    path.write_text(text)
    recipe = load_recipe(path)
    assert not [f for f in lint(recipe.dependencies, recipe.system, RECORD) if f.severity == ERROR]
    # every pin line cites a source (the record, or says it is not in it)
    for line in text.split("dependencies:\n")[1].splitlines():
        if line.startswith("  - "):
            assert "# " in line, line
    vps = virtual_packages(recipe.system, "linux-64")
    solved = solve_specs(
        recipe.dependencies, [channel], "linux-64", vps, constraints=exclusion_constraints(recipe)
    )
    got = {p.name: p.version for p in solved}
    assert got["cudf"] == f"{rel}.00"
    assert matches(str(release.get("dask").value).replace("==", "=="), got["dask"])
    assert got["python"].startswith(release.get("python").value[-1] + ".")


def test_shipped_rapids_recipes_are_what_their_own_command_generates():
    shipped = sorted((ROOT / "recipes").glob("rapids-*.yaml"))
    assert {p.stem for p in shipped} == {
        "rapids-22.08-el7",
        "rapids-24.04-el7",
        "rapids-26.10-cuda12",
    }
    for path in shipped:
        text = path.read_text()
        argv = ["recipe", "new", *command_in(text)]
        args = build_parser(argv).parse_args(argv)
        from envcheck.resolve.record.new import options

        assert compose(options(args)) == text, f"{path.name}: run scripts/regen-rapids-recipes.sh"
        recipe = load_recipe(path)
        findings = lint(recipe.dependencies, recipe.system, RECORD)
        assert not [f for f in findings if f.severity == ERROR], path
    r2208 = load_recipe(ROOT / "recipes" / "rapids-22.08-el7.yaml")
    assert "dask==2022.7.1" in r2208.dependencies and "python=3.9" in r2208.dependencies
    assert {e.name for e in r2208.exclude} == {"cuml", "cugraph"}


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (["--rapids", "24.06", "--cuda", "11.5", "--os", "el7"], ExitCode.UNSOLVABLE,
         "rapids.glibc: RAPIDS 24.06 needs glibc >= 2.28"),
        (["--rapids", "23.04", "--cuda", "11.5", "--os", "el7", "--python", "3.9"],
         ExitCode.UNSOLVABLE, "rapids.python: recipe entry 'python=3.9' contradicts RAPIDS 23.04"),
        (["--rapids", "22.08", "--cuda", "12.2", "--os", "el8"], ExitCode.UNSOLVABLE,
         "rapids.cuda: recipe entry 'cudatoolkit=12.2' contradicts RAPIDS 22.08"),
        (["--rapids", "26.10", "--cuda", "12.0", "--os", "el8"], ExitCode.UNSOLVABLE,
         "rapids.cuda: RAPIDS 26.10 ('cudf=26.10'): RAPIDS 25.12 and later require CUDA >= 12.2"),
        (["--rapids", "26.12", "--cuda", "12.2", "--os", "el8"], ExitCode.BAD_INPUT,
         "RAPIDS 26.12 is not in the release record"),
        (["--rapids", "24.04", "--cuda", "12.2", "--os", "el8", "--libs", "cudf,cusignal"],
         ExitCode.BAD_INPUT, "cusignal: not part of RAPIDS 24.04"),
    ],
)  # fmt: skip
def test_recipe_new_refuses_what_the_record_rules_out_in_one_line(capsys, argv, code, needle):
    assert main(["recipe", "new", *argv]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    if code == ExitCode.UNSOLVABLE:
        assert re.search(r"\[(integration/|docs/|RAPIDS support notice RSN 37)", err[0]), err[0]


def test_recipe_new_writes_the_file_it_is_given(tmp_path, capsys):
    out = tmp_path / "r.yaml"
    argv = [
        "recipe",
        "new",
        "--rapids",
        "22.08",
        "--cuda",
        "11.5",
        "--os",
        "el7",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    assert load_recipe(out).system == {"cuda": "11.5", "glibc": "2.17"}
    assert main(argv[:-2]) == 0
    assert capsys.readouterr().out.split("\n", 1)[1] == out.read_text()


BASE = ["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el7", "--libs", "cudf"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--description", "a\nname: evil"], "--description: control character '\\n'"),
        (["--exclude-reason", "x\ry"], "--exclude-reason: control character '\\r'"),
        (["--target", "A100\x1b[2J"], "--target: control character '\\x1b'"),
        (["--pip", "torch\n- evil"], "--pip: control character"),
        (["--with", "numpé"], "--with 'numpé': not a conda package spec"),
        (["--exclude", "cüml"], "--exclude 'cüml': not a conda package spec"),
        (["--name", "My Recipe"], "--name 'My Recipe': a recipe name is lower-case"),
    ],
)
def test_recipe_new_refuses_what_build_could_not_read_in_one_line(capsys, tmp_path, args, says):
    out = tmp_path / "r.yaml"
    try:
        rc = main([*BASE, *args, "--out", str(out)])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == ExitCode.BAD_INPUT and not out.exists()
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_printable_hostile_text_lands_in_the_recipe_verbatim(capsys, tmp_path):
    """YAML's own syntax in free text (': ', ' #', quotes, brackets, 'null', numbers) is read
    back by build as the very text given."""
    out = tmp_path / "r.yaml"
    targets = ["x: y # z", "null", "1.5", "- dash", "'quoted' \"both\" {a} [b] é"]
    pip = 'torch>=2; python_version<"3.10"'
    args = [*BASE, "--description", "a: b # c 'd' \"e\" {f}", "--exclude", "cuspatial",
            "--exclude-reason", "r: s # t", "--pip", pip, "--channels", "conda-forge,a: b",
            "--out", str(out)]
    for t in targets:
        args += ["--target", t]
    assert main(args) == 0, capsys.readouterr().err
    recipe = load_recipe(out)
    assert list(recipe.targets) == targets
    assert list(recipe.pip) == [pip]
    assert list(recipe.channels) == ["conda-forge", "a: b"]
    assert recipe.description == "a: b # c 'd' \"e\" {f}"
