"""The public names of `envcheck` (docs/api.md), pinned as httpx pins its own: `__all__` is
this list, every name imports, and each API function's keywords are the ones listed here. A
change to any of them is a change to the API: update docs/api.md with it."""

from __future__ import annotations

import inspect

import pytest

import envcheck
from envcheck import api

EXPORTED = [
    "__version__", "BadInput", "build", "diff", "EnvcheckError", "ExitCode", "image", "install",
    "recipe_import", "recipe_new", "Report", "Result", "slurm_script", "StaleLock", "Status",
    "Unreachable", "Unsolvable", "verify_cluster", "verify_job", "verify_node", "verify_ray", "why",
]

EXPECT = (
    "expect", "lock", "expect_gpus", "expect_gpu_model", "min_gpu_memory", "allow_busy_gpus",
    "cuda", "min_glibc", "min_compute_capability", "imports", "libraries", "expect_ucx",
    "since", "ecc_corrected_threshold", "probe_timeout", "skip",
)

# function -> its parameters in order: (positional-or-keyword, keyword-only)
PARAMETERS = {
    "build": (("recipe", "out"), ("check", "platform", "fetch_timeout", "channel_data", "lint",
                                  "try_")),
    "install": (("lock", "prefix"), ("platform", "cache_dir", "force", "lock_timeout",
                                     "fetch_timeout", "allow_shared_parent")),
    "image": (("lock", "os"), ("tag", "builder_image", "base_image", "platform", "engine",
                               "print_only", "show_command")),
    "recipe_import": (("environment",), ("platform", "out")),
    "recipe_new": (("rapids", "cuda", "os"), ("out", "python", "toolkit", "libs", "with_",
                                              "exclude", "exclude_reason", "pip", "name",
                                              "description", "targets", "channels")),
    "why": (("package", "file"), ("not_", "recipe", "environment", "platform", "channel_data")),
    "diff": (("old", "new"), ("environment", "markdown")),
    "slurm_script": ((), ("nodes", "gpus_per_node", "cpus_per_gpu", "partition", "time",
                          "account", "job_name", "env", "lock", "protocol", "interface",
                          "dashboard", "shared_dir", "wait", "verify_timeout", "smoke", "then",
                          "then_on", "sbatch", "job", "submit", "submit_timeout",
                          "slurm_version")),
    "verify_node": ((), ("facts", "prefix", "save_facts", "plugins", "level", "load_seconds",
                         "kernel_log", *EXPECT)),
    "verify_cluster": (("client_or_address",), (
        "scheduler_file", "tls_ca_file", "tls_cert", "tls_key", "timeout", "smoke",
        "smoke_timeout", "bench", "workers", "plugins", "jobqueue", "jobqueue_config",
        "jobqueue_options", "gpus_per_worker", "debug", *EXPECT)),
    "verify_job": ((), ("timeout", "horovod", "tensorflow", "bench", "debug", *EXPECT)),
    "verify_ray": (("address",), ("timeout", "expect_nodes", "train", "train_workers",
                                  *EXPECT)),
}


def test_all_is_the_exported_list_sorted():
    assert envcheck.__all__ == EXPORTED
    assert sorted(EXPORTED, key=str.casefold) == EXPORTED


def test_every_exported_name_imports():
    namespace: dict[str, object] = {}
    exec("from envcheck import *", namespace)  # noqa: S102 - what a user's star import does
    assert set(EXPORTED) - {"__version__"} <= set(namespace)
    for name in EXPORTED:
        assert getattr(envcheck, name) is not None, name
    assert sorted(name for name in dir(envcheck) if name in EXPORTED) == sorted(EXPORTED)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        envcheck.nope  # noqa: B018


def test_every_verb_is_an_api_function_returning_a_report():
    assert sorted(PARAMETERS) == sorted(api.__all__)
    for name in PARAMETERS:
        fn = getattr(envcheck, name)
        assert fn is getattr(api, name), name
        assert inspect.signature(fn).return_annotation == "Report", name


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_each_api_function_takes_the_listed_keywords(name):
    params = inspect.signature(getattr(api, name)).parameters.values()
    positional = tuple(p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD)
    keyword = tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)
    assert not [p for p in params if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)], name
    assert (positional, keyword) == PARAMETERS[name]
