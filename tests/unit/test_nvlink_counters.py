"""The NVLink counters judged as DCGM's health watch judges them, on NodeFacts built here:
growth over the load window, CRC as a rate against 100/s, and the per-link CRC counters that
nvidia-smi does not show reported rather than failed."""

from __future__ import annotations

import dataclasses

from envcheck.report import Status
from envcheck.verify.facts import NvLink
from envcheck.verify.node.checks import BUILTIN_CHECKS
from envcheck.verify.node.checks.gpu.nvlink_counters import shown_crc
from tests.support.factories import expect, h200x2, with_gpu_health, with_health

ZERO = {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}


def _links(n: int = 18, **counters) -> tuple[NvLink, ...]:
    return tuple(NvLink(i, True, **(ZERO | counters)) for i in range(n))


def _window(before: dict, after: dict, seconds: float = 4.0):
    """An H200 pair whose GPU 0 links read `before` at t=1000 and `after` at t=1000+seconds."""
    base = with_gpu_health(with_health(h200x2()), 0, nvlinks=_links(**before), read_at=1000.0)
    base = with_gpu_health(base, 1, read_at=1000.0)
    loaded = dataclasses.replace(base, gpu_health_after=base.gpu_health)
    loaded = with_gpu_health(loaded, 1, after=True, read_at=1000.0 + seconds)
    return with_gpu_health(loaded, 0, after=True, nvlinks=_links(**after),
                           read_at=1000.0 + seconds)


def nvlink(facts):
    results = BUILTIN_CHECKS["nvlink"](facts, expect())
    for r in results:
        assert r.status not in (Status.WARN, Status.FAIL) or r.fix, r
    return results


def test_healthy_hopper_whose_per_link_crc_data_grows_passes_and_says_so():
    # The host: crc_data +12 per link in a 4 s load while the DL CRC count nvidia-smi
    # nvlink -e prints stayed 0: reported with its rate, not failed, not warned.
    results = nvlink(_window({"crc": 0, "crc_data": 11}, {"crc": 0, "crc_data": 23}))
    assert [r.status for r in results] == [Status.PASS]
    msg = results[0].message
    assert "GPU 0" in msg and "CRC-flit/CRC-data" in msg and "+216" in msg  # 12 x 18 links
    assert "3.0/s" in msg and "nvidia-smi nvlink -e" in msg and "went +0" in msg
    assert "not judged" in msg and "DcgmGPUHardwareLimits.h" in msg


def test_per_link_crc_at_100_per_second_warns_never_fails():
    results = nvlink(_window({"crc": 0, "crc_data": 0}, {"crc": 0, "crc_data": 400}))
    assert [r.status for r in results] == [Status.WARN]
    assert "100.0/s" in results[0].message and "100/s" in results[0].message


def test_shown_crc_below_100_per_second_warns_and_at_100_fails():
    slow = nvlink(_window({"crc": 5}, {"crc": 9}))
    assert [r.status for r in slow] == [Status.WARN]
    assert "crc +4 over 4.0 s (1.0/s)" in slow[0].message and "DCGM" in slow[0].message
    fast = nvlink(_window({"crc": 0}, {"crc": 800}))
    assert fast[0].status == Status.FAIL and "200.0/s" in fast[0].message


def test_without_the_dl_crc_field_crc_flit_plus_data_is_what_nvidia_smi_shows():
    # pre-Hopper: nvidia-smi prints CRC-flit and CRC-data; they are judged by DCGM's rule
    assert shown_crc(NvLink(0, True, crc_flit=2, crc_data=3)) == (5, "crc_flit+crc_data")
    assert shown_crc(NvLink(0, True, crc=7, crc_flit=2, crc_data=3)) == (7, "crc")
    results = nvlink(_window({}, {"crc_data": 1000}, seconds=2.0))
    assert results[0].status == Status.FAIL and "crc_flit+crc_data +1000" in results[0].message


def test_replay_or_recovery_growth_fails_naming_gpu_link_and_source():
    results = nvlink(_window({"crc": 0}, {"crc": 0, "recovery": 1}))
    assert results[0].status == Status.FAIL
    assert "GPU 0" in results[0].message and "link 0: +recovery 1" in results[0].message
    assert "DcgmHealthWatch.cpp" in results[0].message


def test_totals_without_a_window_warn_only_for_replay_and_recovery():
    base = with_health(h200x2())
    crc_only = with_gpu_health(base, 0, nvlinks=_links(crc=0, crc_data=27))
    r = nvlink(crc_only)
    assert [x.status for x in r] == [Status.PASS] and "not judged" in r[0].message
    replayed = with_gpu_health(base, 0, nvlinks=_links(replay=2))
    assert [x.status for x in nvlink(replayed)] == [Status.WARN]
