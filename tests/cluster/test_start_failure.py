"""verify cluster whose embedded cluster cannot start: the node's own checks judge it (exit 2)
when they fail; otherwise the start failure stays exit 7."""

from __future__ import annotations

import contextlib

import pytest

from envcheck.errors import ExitCode, Unreachable
from envcheck.verify.cluster import pipeline
from envcheck.verify.cluster.options import ClusterOptions
from envcheck.verify.expectations import ExpectOptions


@pytest.fixture
def no_start(monkeypatch):
    """The embedded cluster fails as LocalCUDACluster does when a worker's NVML raises."""

    @contextlib.contextmanager
    def refuse(**_):
        raise Unreachable("the embedded LocalCUDACluster did not start: NVMLError_Unknown")
        yield

    monkeypatch.setattr(pipeline, "embedded_cluster", refuse)


def test_a_node_whose_checks_fail_is_judged_exit_2_naming_the_checks(no_start):
    # no GPU on this test machine: --expect-gpus 4 fails the node's gpus check
    report = pipeline.verify_cluster(ClusterOptions(expect=ExpectOptions(expect_gpus=4),
                                                    smoke=""))
    assert report.exit_code == ExitCode.FAIL
    lead = report.results[0]
    assert lead.check == "cluster" and lead.status.value == "fail"
    assert "did not start" in lead.message and "gpus" in lead.message
    failing = {r.check for r in report.results[1:] if r.status.value == "fail"}
    assert "gpus" in failing


def test_a_node_whose_checks_pass_keeps_the_start_failure(no_start):
    with pytest.raises(Unreachable):
        pipeline.verify_cluster(ClusterOptions(smoke=""))
