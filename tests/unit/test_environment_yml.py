"""environment.yml files read as recipes: the real files in tests/data/environment-yml/
through the recipe loader, `envcheck recipe import` and `envcheck build --check`."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.errors import BadInput, ExitCode
from envcheck.resolve.environment_yml import load_recipe_or_environment, this_platform
from envcheck.resolve.recipe import load_recipe

DATA = Path(__file__).parent.parent / "data" / "environment-yml"
RAPIDS = DATA / "rapids-24.12-environment.yml"
PYTORCH = DATA / "pytorch-environment.yml"
GIT = DATA / "git-url-environment.yml"


def test_rapids_environment_reads_as_the_recipe_it_means() -> None:
    r = load_recipe_or_environment(RAPIDS, "linux-64")
    assert r.name == "rapids-24.12"
    assert r.channels == ("rapidsai", "conda-forge", "nvidia")
    assert r.platforms == ("linux-64",)
    assert r.dependencies == ("rapids=24.12", "python=3.12", "cuda-version>=12.0,<=12.5",
                              "jupyterlab", "pip")
    assert r.pip == ("dask-sql==2024.5.0",)
    assert r.pip_extra_index == ("https://pypi.nvidia.com",)


def test_pytorch_environment_drops_nodefaults_and_keeps_nested_pip() -> None:
    r = load_recipe_or_environment(PYTORCH, "linux-aarch64")
    assert r.channels == ("pytorch", "nvidia", "conda-forge")
    assert r.platforms == ("linux-aarch64",)
    assert "pytorch-cuda=12.1" in r.dependencies and "numpy<2" in r.dependencies
    assert r.pip == ("lightning==2.3.3", "wandb")


def test_platform_defaults_to_this_machine_and_the_file_s_own_wins(tmp_path: Path) -> None:
    assert load_recipe_or_environment(PYTORCH).platforms == (this_platform(),)
    own = tmp_path / "environment.yml"
    own.write_text(PYTORCH.read_text() + "platforms: [linux-64, osx-arm64]\n")
    assert load_recipe_or_environment(own, "linux-64").platforms == ("linux-64", "osx-arm64")


def test_cuda_override_becomes_the_system_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONDA_OVERRIDE_CUDA", "12.4")
    monkeypatch.setenv("CONDA_OVERRIDE_GLIBC", "2.28")
    system = {"cuda": "12.4", "glibc": "2.28"}
    assert dict(load_recipe_or_environment(PYTORCH, "linux-64").system) == system
    monkeypatch.setenv("CONDA_OVERRIDE_CUDA", "twelve")
    with pytest.raises(BadInput, match="CONDA_OVERRIDE_CUDA='twelve'.*`system.cuda`"):
        load_recipe_or_environment(PYTORCH, "linux-64")


def test_glibc_is_this_machine_s_or_conda_lock_s_default(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.delenv("CONDA_OVERRIDE_GLIBC", raising=False)
    here = os.confstr("CS_GNU_LIBC_VERSION").split()[1]
    if this_platform() == "linux-64":
        assert load_recipe_or_environment(PYTORCH).system["glibc"] == here
    assert load_recipe_or_environment(PYTORCH, "linux-ppc64le").system["glibc"] == "2.17"
    assert "glibc" not in load_recipe_or_environment(PYTORCH, "osx-arm64").system


def test_git_url_is_refused_in_one_line_naming_the_pip_key() -> None:
    with pytest.raises(BadInput) as e:
        load_recipe_or_environment(GIT, "linux-64")
    msg = e.value.message
    assert msg.startswith(f"{GIT}:11:7: pip: 'git+https://github.com/facebookresearch/"), msg
    assert "`pip:`" in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        (("  - conda-forge\n", "  - defaults\n"), "`channels:`", "conda's configured set"),
        (("    - opencv-python\n", "    - -r requirements.txt\n"), "`pip:`", "-r"),
        (("    - opencv-python\n", "    - --index-url https://x.org/simple\n"),
         "`pip_extra_index:`", "--index-url"),
        (("    - opencv-python\n", "    - -e .\n"), "`pip:`", "editable"),
        (("    - opencv-python\n", "    - ./vendor/lib\n"), "`pip:`", "not a released"),
        (("name: research\n", ""), "`name:`", "missing"),
        (("name: research\n", "name: My Research\n"), "`name:`", "lower-case"),
        (("channels:\n  - conda-forge\n", ""), "`channels:`", "missing"),
        (("name: research\n", "name: research\nvariables: {A: b}\n"), "variables",
         "envcheck slurm script"),
        (("  - pip:\n", "  - npm:\n"), "`dependencies:`", "only `- pip: [...]`"),
    ],
)
def test_every_refusal_names_the_recipe_key_to_use(
    tmp_path: Path, change: tuple[str, str], key: str, says: str
) -> None:
    text = GIT.read_text().replace(
        "    - git+https://github.com/facebookresearch/detectron2.git\n", "")
    assert change[0] in text
    path = tmp_path / "environment.yml"
    path.write_text(text.replace(change[0], change[1], 1))
    with pytest.raises(BadInput) as e:
        load_recipe_or_environment(path, "linux-64")
    msg = e.value.message
    assert key in msg and says in msg, msg
    assert msg.startswith(f"{path}:") and "\n" not in msg


def test_a_name_in_capitals_locks_under_its_lower_case(tmp_path: Path) -> None:
    path = tmp_path / "environment.yml"
    path.write_text(PYTORCH.read_text().replace("name: pytorch-cuda", "name: PyTorch-CUDA"))
    assert load_recipe_or_environment(path, "linux-64").name == "pytorch-cuda"


def test_a_recipe_file_still_reads_as_a_recipe(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: x\nchannels: [conda-forge]\ndependencies: [python]\n")
    with pytest.raises(BadInput, match="platforms: missing required key"):
        load_recipe_or_environment(recipe)
    named = tmp_path / "environment.yml"  # a recipe by its keys, whatever its name
    named.write_text("name: x\nchannels: [conda-forge]\nplatforms: [osx-64]\n"
                     "system: {glibc: '2.17'}\ndependencies: [python]\n")
    assert load_recipe_or_environment(named, "linux-64") == load_recipe(named)


@pytest.mark.parametrize("source", [RAPIDS, PYTORCH])
def test_recipe_import_writes_a_recipe_the_loader_reads_back(
    tmp_path: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "recipe.yaml"
    rc = main(["recipe", "import", str(source), "--platform", "linux-64", "--out", str(out)])
    assert rc == ExitCode.OK, capsys.readouterr().err
    assert f"wrote {out}" in capsys.readouterr().out
    assert load_recipe(out) == load_recipe_or_environment(source, "linux-64")
    assert load_recipe(out).content_hash() == load_recipe_or_environment(
        source, "linux-64").content_hash()


def test_recipe_import_of_a_git_url_exits_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recipe", "import", str(GIT)]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "git URL" in err


@pytest.mark.parametrize("source", [RAPIDS, PYTORCH])
def test_build_check_takes_an_environment_yml_through_the_lint(
    tmp_path: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offline: no lock yet is stale (exit 6), not a refusal of the file (exit 4)."""
    rc = main(["build", "--check", str(source), "--platform", "linux-64",
               "--out", str(tmp_path / "locks")])
    assert rc == ExitCode.STALE, capsys.readouterr().err
    assert "is missing" in capsys.readouterr().err


def test_build_refuses_a_git_url_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["build", str(GIT), "--out", str(tmp_path / "locks")])
    assert rc == ExitCode.BAD_INPUT
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "locks").exists()


def test_the_api_imports_as_the_command_does(tmp_path: Path) -> None:
    import envcheck

    report = envcheck.recipe_import(PYTORCH, platform="linux-64")
    assert report.exit_code == ExitCode.OK and report.output.startswith("# Imported from")
    out = tmp_path / "r.yaml"
    envcheck.recipe_import(str(PYTORCH), platform="linux-64", out=out)
    assert out.read_text() == report.output
    with pytest.raises(BadInput, match="git URL"):
        envcheck.recipe_import(GIT)


@pytest.mark.parametrize("verb", [["recipe", "import"], ["build"]])
def test_an_environment_nested_past_any_real_one_is_one_line(tmp_path: Path, capsys,
                                                             verb: list[str]) -> None:
    """yaml's composer recurses once per level: the one place that composes says so."""
    deep = tmp_path / "environment.yml"
    deep.write_text("name: deep\ndependencies:\n  - pip: " + "[" * 3000 + "]" * 3000 + "\n")
    rc = main([*verb, str(deep), *(["--out", str(tmp_path / "locks")] if verb == ["build"]
                                    else [])])
    assert rc == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nesting too deep" in err
