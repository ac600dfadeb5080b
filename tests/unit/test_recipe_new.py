"""envcheck recipe new: record-pinned recipes lint clean, solve, and refuse what it rules out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envcheck.cli import build_parser, main
from envcheck.errors import ExitCode
from envcheck.resolve.recipe import load_recipe
from envcheck.resolve.record.lint import ERROR, lint
from envcheck.resolve.record.new.pipeline import command_in, compose
from envcheck.resolve.record.table import load_record

ROOT = Path(__file__).resolve().parents[2]
RECORD = load_record()
COVERED = sorted(RECORD.releases)
EXTRAS = ("xgboost", "ucx", "torch", "dask-sql")


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
        from envcheck.resolve.record.new.command import options_from_args

        assert compose(options_from_args(args)) == text, (
            f"{path.name}: run scripts/regen-rapids-recipes.sh"
        )
        recipe = load_recipe(path)
        findings = lint(recipe.dependencies, recipe.system, RECORD)
        assert not [f for f in findings if f.severity == ERROR], path
    r2208 = load_recipe(ROOT / "recipes" / "rapids-22.08-el7.yaml")
    assert "dask==2022.7.1" in r2208.dependencies and "python=3.9" in r2208.dependencies
    assert {e.name for e in r2208.exclude} == {"cuml", "cugraph"}


@pytest.mark.parametrize(
    ("argv", "code", "needle", "choices"),
    [
        (["--rapids", "24.06", "--cuda", "11.5", "--os", "el7"], ExitCode.UNSOLVABLE,
         "RAPIDS 24.06 needs glibc >= 2.28", "try --rapids 24.04 or --os el8"),
        (["--rapids", "23.04", "--cuda", "11.5", "--os", "el7", "--python", "3.9"],
         ExitCode.UNSOLVABLE, "RAPIDS 23.04.00 rules out 'python=3.9'",
         "--python 3."),
        (["--rapids", "22.08", "--cuda", "12.2", "--toolkit", "12.2", "--os", "el8"],
         ExitCode.UNSOLVABLE, "RAPIDS 22.08 rules out 'cudatoolkit=12.2'",
         "or --toolkit 11.5 (rule"),
        (["--rapids", "26.10", "--cuda", "12.0", "--os", "el8"], ExitCode.UNSOLVABLE,
         "RAPIDS 25.12 and later require CUDA >= 12.2", "try --rapids 25.10 (rule"),
        (["--rapids", "26.12", "--cuda", "12.2", "--os", "el8"], ExitCode.BAD_INPUT,
         "RAPIDS 26.12 is not in the release record", "try --rapids 26."),
        (["--rapids", "24.04", "--cuda", "12.2", "--os", "el8", "--libs", "cudf,cusignal"],
         ExitCode.UNSOLVABLE, "cusignal has no RAPIDS 24.04: its last release is 23.08", ""),
        (["--rapids", "24.06", "--cuda", "12.2", "--os", "el8", "--libs", "cudf,cusignal"],
         ExitCode.UNSOLVABLE, "cusignal has no RAPIDS 24.06: its last release is 23.08", ""),
        (["--rapids", "24.04", "--cuda", "12.2", "--os", "el8", "--libs", "cudf,cuspatial",
          "--exclude", "cuspatial"], ExitCode.BAD_INPUT, "both in --libs and --exclude", ""),
        # a value that is no version is bad input, not a contradiction of the record
        (["--rapids", "24.08", "--cuda", "eleven", "--os", "el8"], ExitCode.BAD_INPUT,
         "--cuda 'eleven' is not a version (e.g. 12.4)", ""),
        (["--rapids", "24.08", "--cuda", "12.4", "--os", "el8", "--python", "x"],
         ExitCode.BAD_INPUT, "--python 'x' is not a version (e.g. 3.11)", ""),
        (["--rapids", "24.08", "--cuda", "12.4", "--os", "el8", "--toolkit", "x"],
         ExitCode.BAD_INPUT, "--toolkit 'x' is not a version (e.g. 11.8)", ""),
        (["--rapids", "24.08", "--cuda", "1" * 5000, "--os", "el8"], ExitCode.BAD_INPUT,
         "--cuda a str of 5000 characters is not a version", ""),
    ],
)  # fmt: skip
def test_recipe_new_refuses_in_one_short_line_with_the_nearest_choices(
    capsys, argv, code, needle, choices
):
    assert main(["recipe", "new", *argv]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and choices in err[0], err
    if code == ExitCode.UNSOLVABLE:
        assert len(err[0]) <= 220, err[0]  # "envcheck: " + refusal.LIMIT
        assert "(rule rapids." in err[0] and "[" not in err[0], err[0]  # sources: --debug
        assert main(["recipe", "new", *argv, "--debug"]) == code
        debug = capsys.readouterr().err
        assert re.search(r"\[(integration/|docs/|RAPIDS support notice RSN 37)", debug), debug


def test_every_suggested_choice_makes_a_recipe(capsys):
    argv = ["--rapids", "24.06", "--cuda", "11.5", "--os", "el7"]
    assert main(["recipe", "new", *argv]) == ExitCode.UNSOLVABLE
    line = capsys.readouterr().err
    suggested = re.findall(r"(--rapids|--os|--cuda|--python) (\S+?)(?= or | \(|$)", line)
    assert suggested, line
    for flag, value in suggested:
        changed = list(argv)
        if flag in changed:
            changed[changed.index(flag) + 1] = value
        else:
            changed += [flag, value]
        assert main(["recipe", "new", *changed]) == 0, (flag, value)
        capsys.readouterr()


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


@pytest.mark.parametrize("release", ["22.08", "24.04", "26.10"])
def test_a_users_recipe_names_no_path_of_envchecks_own_checkout(release, capsys):
    """What a user gets cites upstream sources (integration/..., pypi/...) and envcheck's
    docs, never this project's test files or source tree, which an installed user lacks."""
    cuda = "12.8" if release == "26.10" else "11.5"
    os_ = "el8" if release == "26.10" else "el7"
    assert main(["recipe", "new", "--rapids", release, "--cuda", cuda, "--os", os_]) == 0
    text = capsys.readouterr().out
    for project_path in ("tests/", "test_", "envcheck/", "SOURCES.tsv", "scripts/"):
        assert project_path not in text, project_path
    assert "integration/" in text or "pypi/" in text  # the citations stay
    assert "`envcheck docs recipes`" in text


def test_with_naming_a_package_the_recipe_holds_lists_it_once(tmp_path, capsys):
    """The seed guide's final command pins dask-cuda and dask-cudf builds next to the RAPIDS
    libraries, and asks for ucx-py next to ucx: each package once, so that build reads it."""
    out = tmp_path / "r.yaml"
    assert main(["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el7",
                 "--libs", "dask-cuda,dask-cudf", "--with",
                 "dask-cuda=22.08.00=py39_g9a61ce5_0,ucx,ucx-py,dask,skorch",
                 "--out", str(out)]) == 0
    deps = load_recipe(out).dependencies
    names = [re.split(r"[=<> ]", d)[0] for d in deps]
    assert len(names) == len(set(names)), deps
    assert "dask-cuda=22.08.00=py39_g9a61ce5_0" in deps and "dask-cudf=22.08" in deps
    assert "ucx-py=0.27" in deps and "dask==2022.7.1" in deps and "skorch" in deps
    assert "# --with, in place of dask-cuda=22.08 (" in out.read_text()


def test_a_with_spec_in_place_of_a_record_pin_is_held_to_the_record(capsys):
    assert main(["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el7",
                 "--libs", "dask-cuda", "--with", "dask-cuda=22.10"]) == ExitCode.UNSOLVABLE
    err = capsys.readouterr().err
    assert "RAPIDS 22.10 rules out 'dask==2022.7.1'" in err and err.count("\n") == 1


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


@pytest.mark.parametrize("name", ["rhel7", "centos7"])
def test_the_image_verbs_os_names_make_the_el7_recipe(name, tmp_path):
    """`envcheck image --os rhel7|centos7` and `recipe new --os` take the same names: the
    recipe is el7's (glibc 2.17), its header naming the distribution asked for."""
    from envcheck.provision.image.options import OSES as IMAGE_OSES

    assert name in IMAGE_OSES
    el7, named = tmp_path / "el7.yaml", tmp_path / f"{name}.yaml"
    common = ["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--libs", "cudf"]
    assert main([*common, "--os", "el7", "--out", str(el7)]) == 0
    assert main([*common, "--os", name, "--out", str(named)]) == 0
    assert load_recipe(named).system == load_recipe(el7).system
    assert load_recipe(named).system["glibc"] == "2.17"
    assert load_recipe(named).dependencies == load_recipe(el7).dependencies
