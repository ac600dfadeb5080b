"""The Python API refuses what the command line refuses: both build the verb's Options through
the same constructor, so a bad value is BadInput (exit 4) from either, before any work."""

from __future__ import annotations

import math

import pytest

import envcheck
from envcheck.cli import main
from envcheck.errors import BadInput, ExitCode


def _cli(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own refusals (a flag's type) exit 4 too
        return int(e.code)


# (api call, the command line saying the same, what the API's message says)
CASES = [
    (lambda: envcheck.recipe_new("22.08", "11.5", "el7", description="a\nname: evil"),
     ["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el7",
      "--description", "a\nname: evil"], "--description: control character '\\\\n'"),
    (lambda: envcheck.recipe_new("22.08", "11.5", "el7", with_="numpé"),
     ["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el7", "--with", "numpé"],
     "--with 'numpé': not a conda package spec"),
    (lambda: envcheck.recipe_new("22.08", "11.5", "el6"),
     ["recipe", "new", "--rapids", "22.08", "--cuda", "11.5", "--os", "el6"], "el6"),
    (lambda: envcheck.slurm_script(nodes=0),
     ["slurm", "script", "--nodes", "0"], "--nodes 0: must be more than 0"),
    (lambda: envcheck.slurm_script(partition="gpu\n#SBATCH --x"),
     ["slurm", "script", "--partition", "gpu\n#SBATCH --x"], "--partition: control character"),
    (lambda: envcheck.slurm_script(job=True, protocol="ucx"),
     ["slurm", "script", "--job", "--protocol", "ucx"], "--job starts none"),
    (lambda: envcheck.slurm_script(verify_timeout=math.nan),
     ["slurm", "script", "--verify-timeout", "nan"], "--verify-timeout nan"),
    (lambda: envcheck.verify_job(timeout=math.inf),
     ["verify", "job", "--timeout", "inf"], "--timeout inf: seconds must be a finite number"),
    (lambda: envcheck.verify_job(timeout=0),
     ["verify", "job", "--timeout", "0"], "--timeout must be positive"),
    (lambda: envcheck.verify_ray(timeout=math.nan),
     ["verify", "ray", "--timeout", "nan"], "--timeout nan: seconds must be a finite number"),
    (lambda: envcheck.verify_cluster(timeout=-1.0),
     ["verify", "cluster", "--timeout", "-1"], "--timeout must be positive"),
    (lambda: envcheck.verify_node(load_seconds=math.inf),
     ["verify", "node", "--load-seconds", "inf"], "--load-seconds inf"),
    (lambda: envcheck.verify_node(level=7),
     ["verify", "node", "--level", "7"], "--level must be 1, 2 or 3"),
    (lambda: envcheck.build("r.yaml", fetch_timeout=math.nan),
     ["build", "r.yaml", "--fetch-timeout", "nan"], "--fetch-timeout nan"),
    (lambda: envcheck.image("x.lock", "el6"),
     ["image", "x.lock", "--os", "el6"], "--os 'el6' is not one of centos7, rhel7"),
    (lambda: envcheck.install("x.lock", "/tmp/p", lock_timeout=math.nan),
     ["install", "x.lock", "--prefix", "/tmp/p", "--lock-timeout", "nan"], "--lock-timeout nan"),
    (lambda: envcheck.install("x.lock", "/tmp/p", lock_timeout=-1),
     ["install", "x.lock", "--prefix", "/tmp/p", "--lock-timeout", "-1"],
     "--lock-timeout must be 0 or more"),
    (lambda: envcheck.install("x.lock", "/tmp/p", fetch_timeout=math.inf),
     ["install", "x.lock", "--prefix", "/tmp/p", "--fetch-timeout", "inf"], "--fetch-timeout inf"),
    (lambda: envcheck.install("x.lock", "/tmp/p", fetch_timeout=0),
     ["install", "x.lock", "--prefix", "/tmp/p", "--fetch-timeout", "0"],
     "--fetch-timeout must be positive"),
    (lambda: envcheck.install("x.lock", "/tmp/p", platform="linux-64\nx"),
     ["install", "x.lock", "--prefix", "/tmp/p", "--platform", "linux-64\nx"],
     "--platform: control character"),
    (lambda: envcheck.verify_ray(expect_nodes=0),
     ["verify", "ray", "--expect-nodes", "0"], "--expect-nodes must be 1 or more"),
    (lambda: envcheck.verify_cluster(workers=0),
     ["verify", "cluster", "--workers", "0"], "--workers must be 1 or more"),
]


@pytest.mark.parametrize(("call", "argv", "says"), CASES,
                         ids=[" ".join(c[1][:3]) for c in CASES])
def test_the_api_refuses_what_the_command_line_refuses(call, argv, says, capsys):
    with pytest.raises(BadInput, match=says):
        call()
    assert _cli(argv) == ExitCode.BAD_INPUT
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("call", "says"), [
    (lambda: envcheck.recipe_new("22.08", "11.5", "el7", pip="torch"),
     "--pip must be a list, not str 'torch'"),
    (lambda: envcheck.recipe_new("22.08", "11.5", "el7", targets="A100x8"),
     "--target must be a list"),
    (lambda: envcheck.slurm_script(sbatch="--exclusive"), "--sbatch must be a list of strings"),
    (lambda: envcheck.build("r.yaml", channel_data="file:///ch"),
     "--channel-data must be a list of strings"),
    (lambda: envcheck.slurm_script(nodes=2.5), "--nodes must be a whole number"),
    (lambda: envcheck.slurm_script(verify_timeout="60"), "--verify-timeout must be a number"),
    (lambda: envcheck.verify_job(timeout="60"), "--timeout must be a number of seconds"),
    (lambda: envcheck.verify_job(timeout=True), "--timeout must be a number of seconds"),
    (lambda: envcheck.verify_job(probe_timeout=math.inf),
     "--probe-timeout must be a number of seconds above 0"),
    (lambda: envcheck.verify_node(expect_gpus="8"), "--expect-gpus must be an integer"),
    (lambda: envcheck.verify_node(cuda=12.4), "cuda must be a version as a quoted string"),
    (lambda: envcheck.verify_cluster(jobqueue_options="a=b"), "--jobqueue-option must be a list"),
    (lambda: envcheck.diff("a.lock", "b.lock", markdown="yes"), "--markdown must be True"),
    (lambda: envcheck.why("x\ny", "a.lock"), "PKG: control character"),
    (lambda: envcheck.build([]), "give at least one recipe"),
    (lambda: envcheck.install("x.lock", "/tmp/p", lock_timeout="600"),
     "--lock-timeout must be a number of seconds"),
    (lambda: envcheck.install("x.lock", "/tmp/p", fetch_timeout=math.nan), "--fetch-timeout nan"),
    (lambda: envcheck.install("x.lock", "/tmp/p", force="yes"), "--force must be True"),
    (lambda: envcheck.install("x.lock", "/tmp/p", platform=["linux-64"]),
     "--platform must be a string"),
    (lambda: envcheck.install(["x.lock"], "/tmp/p"), "LOCK must be a path"),
    (lambda: envcheck.verify_ray(expect_nodes=math.nan), "--expect-nodes must be a whole number"),
    (lambda: envcheck.verify_ray(train_workers=2.5), "--train-workers must be a whole number"),
    (lambda: envcheck.verify_ray(train=True, train_workers=math.inf),
     "--train-workers must be a whole number"),
    (lambda: envcheck.verify_cluster(workers=math.nan), "--workers must be a whole number"),
    (lambda: envcheck.verify_cluster(gpus_per_worker=-1), "--gpus-per-worker must be 0 or more"),
    (lambda: envcheck.verify_cluster(gpus_per_worker=1.5),
     "--gpus-per-worker must be a whole number"),
    (lambda: envcheck.verify_cluster("tcp://a:1\nb"), "--address: control character"),
    (lambda: envcheck.verify_node(level=2.0), "--level must be 1, 2 or 3"),
    (lambda: envcheck.verify_node(level=True), "--level must be 1, 2 or 3"),
])
def test_values_only_python_can_give_are_refused_not_misread(call, says):
    """What no flag can spell (a string for a list, a float for a count) is refused by the
    same constructor, never read as something else (pip="torch" as t, o, r, c, h)."""
    with pytest.raises(BadInput, match=says):
        call()


def test_a_keyword_no_verb_takes_is_a_type_error():
    with pytest.raises(TypeError, match="expect_gpu"):
        envcheck.verify_node(expect_gpu=8)  # type: ignore[call-arg]
