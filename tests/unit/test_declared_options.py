"""An option is declared once (envcheck/option.py): the command line and the Python API build
the same Options, so every API keyword's default is the command line's, and docs/api.md shows
api.py's signatures as they are."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

from envcheck import api, cli
from envcheck.option import DEFAULT

ROOT = Path(__file__).resolve().parents[2]

# api function -> (the shortest command line of its verb, its command module, api keyword ->
# Options field where the names differ)
VERBS = {
    "build": (["build", "r.yaml"], "envcheck.resolve.build.command", {"recipe": "recipes"}),
    "install": (["install", "l.yml", "--prefix", "p"], "envcheck.provision.install.command", {}),
    "image": (["image", "l.yml", "--os", "rhel7"], "envcheck.provision.image.command",
              {"os": "os_name"}),
    "recipe_new": (["recipe", "new", "--rapids", "24.04", "--cuda", "12.0", "--os", "el7"],
                   "envcheck.resolve.record.new.command", {}),
    "recipe_import": (["recipe", "import", "environment.yml"],
                      "envcheck.resolve.recipe_import.command", {}),
    "why": (["why", "dask", "l.yml"], "envcheck.resolve.why.command", {}),
    "diff": (["diff", "a.yml", "b.yml"], "envcheck.resolve.diff.command", {}),
    "slurm_script": (["slurm", "script"], "envcheck.slurm.command", {}),
    "verify_node": (["verify", "node"], "envcheck.verify.node.command", {}),
    "verify_cluster": (["verify", "cluster"], "envcheck.verify.cluster.command",
                       {"client_or_address": "address"}),
    "verify_job": (["verify", "job"], "envcheck.verify.job.command", {}),
    "verify_ray": (["verify", "ray"], "envcheck.verify.ray.command", {}),
}
VERIFY = ("verify_node", "verify_cluster", "verify_job", "verify_ray")
POSITIONAL = {"build": ("recipes",), "install": ("lock", "prefix"), "image": ("lock", "os_name"),
              "recipe_new": ("rapids", "cuda", "os"),
              "recipe_import": ("environment",), "why": ("package", "file"),
              "diff": ("old", "new")}


def _cli_options(name: str) -> object:
    argv, module, _ = VERBS[name]
    args = cli.build_parser(argv).parse_args(argv)
    return importlib.import_module(module).options_from_args(args)


@pytest.mark.parametrize("name", sorted(VERBS))
def test_every_api_default_is_the_command_lines(name):
    """Each keyword left out gives the Options field the command line gives it with its flag
    left out (a DEFAULT keyword takes the field's declared default)."""
    _, _, renamed = VERBS[name]
    from_cli = _cli_options(name)
    cls = type(from_cli)
    fields = {f.name for f in dataclasses.fields(cls)}
    given = {f: getattr(from_cli, f) for f in POSITIONAL.get(name, ())}
    compared = 0
    for p in inspect.signature(getattr(api, name)).parameters.values():
        field = renamed.get(p.name, p.name)
        if field not in fields or field in given or field == "expect":
            continue
        kw = {} if p.default is DEFAULT else {field: p.default}
        assert getattr(cls(**given, **kw), field) == getattr(from_cli, field), (
            f"{name}({p.name}=...) defaults to {p.default!r}, the command line to "
            f"{getattr(from_cli, field)!r}")
        compared += 1
    assert compared >= 2, name


def _expectation_options() -> dict:
    """The verify functions' expectation keywords -> ExpectOptions' Options (``expect``: the
    --expect file's field)."""
    from envcheck.verify.expectations import ExpectOptions

    return {"expect" if n == "file" else n: o for n, o in ExpectOptions.__options__.items()}


@pytest.mark.parametrize("name", VERIFY)
def test_every_expectation_keyword_default_is_the_command_lines(name):
    """Every verify function takes every expectation flag as a keyword, and each left out
    gives the ExpectOptions the command line gives with the flags left out."""
    from envcheck.verify.expect_options import expect_options_from_keywords

    params = inspect.signature(getattr(api, name)).parameters
    options = _expectation_options()
    assert set(options) <= set(params), f"{name} lacks {set(options) - set(params)}"
    defaults = {k: params[k].default for k in options}
    assert expect_options_from_keywords(defaults) == _cli_options(name).expect
    for keyword, option in options.items():
        assert params[keyword].default is DEFAULT, f"{name}({keyword}=) retypes its default"
        one = expect_options_from_keywords({keyword: option.default})
        assert one == _cli_options(name).expect, keyword


def test_an_expectation_keyword_reads_as_its_flag():
    """The API keyword and the flag go through the one check: the same value either way."""
    from envcheck.verify.expect_options import expect_options_from_keywords

    argv = ["verify", "node", "--min-gpu-memory", "40GiB", "--import", "a,b", "--import", "c",
            "--min-compute-capability", "8.0", "--since", "12h", "--skip", "xid"]
    from_cli = importlib.import_module(VERBS["verify_node"][1]).options_from_args(
        cli.build_parser(argv).parse_args(argv)).expect
    assert from_cli == expect_options_from_keywords(dict(
        min_gpu_memory="40GiB", imports=("a,b", "c"), min_compute_capability="8.0",
        since="12h", skip="xid"))


def test_declared_verbs_retype_no_default():
    """Where a verb's Options declare a field, api.py's keyword takes the declared default."""
    checked = 0
    for name, (_, _, renamed) in VERBS.items():
        cls = type(_cli_options(name))
        options = {**getattr(cls, "__options__", {}),
                   **(_expectation_options() if name in VERIFY else {})}
        for p in inspect.signature(getattr(api, name)).parameters.values():
            field = renamed.get(p.name, p.name)
            if field in options and p.kind is p.KEYWORD_ONLY:
                assert p.default is DEFAULT, f"{name}({p.name}=) retypes {p.default!r}"
                checked += 1
    assert checked >= 20 + 4 * len(_expectation_options())


def _shown(name: str) -> str:
    """api.py's signature of ``name`` as docs/api.md shows it: DEFAULT as the Options field's
    default, no annotations."""
    options = _expectation_options() if name in VERIFY else {}
    if name in VERBS:
        options.update(getattr(type(_cli_options(name)), "__options__", {}))
        options.update({k: options[v] for k, v in VERBS[name][2].items() if v in options})
    params = []
    for p in inspect.signature(getattr(api, name)).parameters.values():
        default = p.default
        if default is DEFAULT:
            default = options[p.name].default
        params.append(p.replace(annotation=p.empty, default=default))
    return f"envcheck.{name}{inspect.Signature(params)}"


def test_docs_show_every_api_signature_as_api_py_has_it():
    text = (ROOT / "docs" / "api.md").read_text()
    block = re.search(r"## Signatures\n.*?```python\n(.*?)```", text, re.S)
    assert block, "docs/api.md has no ## Signatures block"
    documented = " ".join(block[1].split())
    expected = " ".join(_shown(name) for name in api.__all__)
    assert documented.replace("( ", "(").replace(" )", ")").replace(", )", ")") == expected, (
        "docs/api.md ## Signatures should read:\n" + "\n".join(_shown(n) for n in api.__all__))


def test_a_client_of_the_callers_is_never_the_embedded_cluster():
    """ClusterOptions.embedded is the one decision the pipeline asks: a caller's client (as
    api.verify_cluster passes it) is not embedded, whatever else is left out."""
    from envcheck.errors import BadInput
    from envcheck.verify.cluster.options import ClusterOptions

    class Client:  # a synchronous client as distributed's reads to the options
        asynchronous = False

    assert ClusterOptions().embedded
    assert not ClusterOptions(client=Client(), bench=True).embedded
    assert not ClusterOptions(address="tcp://h:1").embedded
    with pytest.raises(BadInput, match="not more than one"):
        ClusterOptions(client=Client(), jobqueue="slurm", workers=1)
    Client.asynchronous = True
    with pytest.raises(BadInput, match="synchronous Client"):
        ClusterOptions(client=Client())
