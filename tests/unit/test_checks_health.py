"""The health checks on NodeFacts built here: healthy, and each failure."""

from __future__ import annotations

import dataclasses

import pytest

from envcheck.report import Status
from envcheck.verify.across.workers import check_stack_agreement
from envcheck.verify.facts import IbPort, NvLink, XidEvent
from envcheck.verify.node.checks import BUILTIN_CHECKS, run_node_checks
from tests.support.factories import (
    H200,
    RTX3090,
    expect,
    h200x2,
    healthy_a100x8,
    healthy_host,
    make_gpu,
    no_driver_node,
    node,
    with_env,
    with_gpu_health,
    with_health,
)

HEALTH = ("ecc", "xid", "pcie", "nvlink", "clocks", "persistence", "mig", "compute-mode",
          "host-limits", "infiniband", "peermem")


def run(check: str, facts, **exp):
    results = BUILTIN_CHECKS[check](facts, expect(**exp))
    for r in results:  # every warning and failure says how to fix it
        assert r.status not in (Status.WARN, Status.FAIL) or r.fix, r
    return results


def statuses(results) -> list[str]:
    return [r.status.value for r in results]


def one(check: str, facts, **exp):
    [r] = run(check, facts, **exp)
    return r


@pytest.mark.parametrize("make", [healthy_a100x8, h200x2])
def test_a_healthy_node_passes_every_health_check(make):
    facts = with_health(make())
    results = run_node_checks(facts, expect(), "n", plugins=False)
    bad = [r for r in results if r.status not in (Status.PASS, Status.SKIP)]
    assert not bad, bad
    got = {r.check for r in results if r.status == Status.PASS}
    assert set(HEALTH) <= got


def test_facts_without_health_skip_rather_than_pass():
    facts = healthy_a100x8()  # an older collector: no gpu_health, no host_health
    for check in HEALTH:
        assert set(statuses(run(check, facts))) == {"skip"}, check


def test_no_gpu_skips_gpu_health_and_still_judges_the_host():
    facts = with_health(no_driver_node())
    assert one("ecc", facts).status == Status.SKIP
    assert "no GPU" in one("ecc", facts).message
    assert one("host-limits", facts).status == Status.PASS


# ---- ECC ------------------------------------------------------------------------------------


def test_uncorrectable_volatile_ecc_fails_and_names_the_gpu():
    facts = with_gpu_health(with_health(healthy_a100x8()), 5, ecc_uncorrected_volatile=2)
    r = one("ecc", facts)
    assert r.status == Status.FAIL and "GPU 5" in r.message and "2 uncorrectable" in r.message
    assert "reset" in r.fix


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"row_remap_pending": True}, "row remapping pending"),
        ({"row_remap_failed": True}, "row remapping failed"),
        ({"retired_pages_sbe": 60, "retired_pages_dbe": 3}, "63 retired pages"),
    ],
)
def test_pending_or_failed_memory_repair_fails(fields, words):
    r = one("ecc", with_gpu_health(with_health(healthy_a100x8()), 1, **fields))
    assert r.status == Status.FAIL and words in r.message
    if "failed" in words:
        assert "RMA" in r.fix


def test_memory_warnings_follow_dcgms_limits():
    base = with_health(healthy_a100x8())
    assert one("ecc", with_gpu_health(base, 1, retired_pages_pending=True)).status == Status.WARN
    assert one("ecc", with_gpu_health(base, 1, retired_pages_dbe=15)).status == Status.PASS
    assert one("ecc", with_gpu_health(base, 1, retired_pages_dbe=16)).status == Status.WARN
    assert one("ecc", with_gpu_health(base, 1, remapped_rows_uncorrectable=511)).status \
        == Status.PASS
    r = one("ecc", with_gpu_health(base, 1, remapped_rows_uncorrectable=512))
    assert r.status == Status.WARN and "DcgmGPUHardwareLimits.h" in r.message


def test_correctable_errors_warn_only_over_the_threshold():
    facts = with_gpu_health(with_health(healthy_a100x8()), 0, ecc_corrected_volatile=150)
    assert one("ecc", facts).status == Status.WARN
    assert one("ecc", facts, ecc_corrected_threshold=1000).status == Status.PASS


def test_ecc_disabled_warns_and_a_failed_read_is_an_error_not_a_pass():
    facts = with_gpu_health(with_health(healthy_a100x8()), 2, ecc_enabled=False)
    assert "ECC is disabled" in one("ecc", facts).message
    broken = with_gpu_health(
        with_health(healthy_a100x8()), 3, ecc_uncorrected_volatile=None,
        errors=("ecc_uncorrected_volatile: Unknown Error",),
    )
    assert statuses(run("ecc", broken)) == ["error", "pass"]


# ---- Xid -------------------------------------------------------------------------------------


def _xid(*events: XidEvent, **host):
    return with_health(healthy_a100x8(), healthy_host(xid_events=events, **host))


def test_xid_79_fails_and_is_mapped_to_the_gpu_by_pci_address():
    # make_gpu puts GPU 3 at 00000000:37:00.0; the kernel writes 0000:37:00
    facts = _xid(XidEvent(79, "0000:37:00", 5000.0, "pid=1122, GPU has fallen off the bus."))
    r = one("xid", facts)
    assert r.status == Status.FAIL and "GPU 3 (PCI 0000:37:00)" in r.message
    assert "fallen off the bus" in r.message and "drain" in r.fix


def test_application_xids_warn_and_unknown_codes_point_to_the_catalog():
    facts = _xid(XidEvent(13, "0000:07:00", 10.0, "Graphics SM Warp Exception"),
                 XidEvent(13, "0000:07:00", 11.0, "again"), XidEvent(999, "0000:99:00", 12.0))
    results = run("xid", facts)
    assert statuses(results) == ["warn", "warn"]
    assert "GPU 0 (PCI 0000:07:00) x2" in results[0].message
    assert "xid-errors" in results[1].fix


def test_since_leaves_out_older_events():
    facts = _xid(XidEvent(48, "0000:07:00", 1000.0, "DBE"), uptime_seconds=90000.0)
    assert one("xid", facts).status == Status.FAIL
    r = one("xid", facts, xid_since_seconds=3600)
    assert r.status == Status.PASS and "last 3600 s" in r.message


def test_unreadable_kernel_log_is_a_skip_saying_why_and_a_clean_log_passes():
    facts = _xid(kernel_log_error="/dev/kmsg: Operation not permitted; dmesg: exit 1",
                 kernel_log_source="", kernel_log_lines=0)
    r = one("xid", facts)
    assert r.status == Status.SKIP and "Operation not permitted" in r.message
    r = one("xid", _xid())
    assert r.status == Status.PASS and "2310 lines of /dev/kmsg" in r.message


# ---- PCIe ------------------------------------------------------------------------------------


def test_pcie_at_maximum_passes_and_x8_idle_warns_pointing_to_level_2():
    base = with_health(healthy_a100x8())
    assert "gen4 x16" in one("pcie", base).message
    r = one("pcie", with_gpu_health(base, 6, pcie_width=8))
    assert r.status == Status.WARN and "GPU 6" in r.message and "x8" in r.message
    assert "--level 2" in r.message and "downshift" in r.message


def test_pcie_below_maximum_under_load_fails():
    base = with_health(h200x2())
    loaded = dataclasses.replace(base, gpu_health_after=base.gpu_health)
    idle_gen1 = with_gpu_health(loaded, 1, pcie_gen=1)  # idle downshift, fine under load
    assert one("pcie", idle_gen1).status == Status.PASS
    r = one("pcie", with_gpu_health(loaded, 1, after=True, pcie_gen=3))
    assert r.status == Status.FAIL and "under load" in r.message and "gen3" in r.message


def test_pcie_replays_are_judged_as_a_rate_over_the_load_window():
    facts = with_gpu_health(with_health(h200x2()), 0, pcie_replays=42, read_at=10.0)
    assert statuses(run("pcie", facts)) == ["pass", "pass"]  # undated: said, not judged
    assert "GPU 0 (00000000:07:00.0) 42" in run("pcie", facts)[1].message
    loaded = dataclasses.replace(facts, gpu_health_after=facts.gpu_health)
    # gen5 x16: DCGM expects at most ceil(1.92 * 16) = 31 per minute
    slow = with_gpu_health(loaded, 0, after=True, pcie_replays=44, read_at=70.0)
    assert statuses(run("pcie", slow)) == ["pass", "pass"]
    fast = with_gpu_health(loaded, 0, after=True, pcie_replays=82, read_at=70.0)
    r = run("pcie", fast)[1]
    assert r.status == Status.WARN and "+40 in 60.0 s" in r.message and "31/min" in r.message


def test_pcie_replay_rates_are_dcgms():
    from envcheck.verify.node.checks.gpu.thresholds import pcie_replays_allowed_per_min

    assert pcie_replays_allowed_per_min(3, 16) == 8
    assert pcie_replays_allowed_per_min(4, 16) == 16
    assert pcie_replays_allowed_per_min(5, 16) == 31
    assert pcie_replays_allowed_per_min(9, 16) == 62  # capped at gen6, as DCGM caps it


# ---- NVLink ----------------------------------------------------------------------------------


def _links(n: int, down=(), **counters):
    return tuple(NvLink(i, i not in down, **({k: 0 for k in ("replay", "recovery", "crc_flit",
                                                              "crc_data")} | counters))
                 for i in range(n))


def test_a_link_down_that_peers_have_up_fails():
    facts = with_gpu_health(with_health(healthy_a100x8()), 3, nvlinks=_links(12, down=(4,)))
    r = one("nvlink", facts)
    assert r.status == Status.FAIL and "GPU 3" in r.message and "link 4 down" in r.message


def test_a_link_down_on_every_gpu_is_unwired_not_broken():
    # Gpu.nvlinks_active is read from the same NVML state: 17 on both
    base = with_health(h200x2(gpus=tuple(make_gpu(i, H200, nvlinks=17) for i in range(2))))
    facts = with_gpu_health(with_gpu_health(base, 0, nvlinks=_links(18, down=(17,))), 1,
                            nvlinks=_links(18, down=(17,)))
    r = one("nvlink", facts)
    assert r.status == Status.PASS and "link 17 down on every GPU" in r.message


def test_error_counters_warn_and_growth_under_load_fails():
    base = with_health(h200x2())
    counted = with_gpu_health(base, 1, nvlinks=_links(18, replay=3), read_at=100.0)
    r = one("nvlink", counted)
    assert r.status == Status.WARN and "link 0: replay 3" in r.message
    grown = with_gpu_health(
        dataclasses.replace(counted, gpu_health_after=counted.gpu_health),
        1, after=True, nvlinks=_links(18, replay=4), read_at=104.0,
    )
    r = one("nvlink", grown)
    assert r.status == Status.FAIL and "+replay 1 over 4.0 s" in r.message


def test_pcie_only_gpus_skip_nvlink():
    facts = with_health(node(4, RTX3090))
    assert one("nvlink", facts).status == Status.SKIP


# ---- clocks, persistence, MIG, compute mode ---------------------------------------------------


def test_thermal_or_power_brake_slowdown_fails_and_power_cap_does_not():
    base = with_health(healthy_a100x8())
    r = one("clocks", with_gpu_health(base, 2, clocks_event_reasons=0x40 | 0x1))
    assert r.status == Status.FAIL and "hardware thermal slowdown" in r.message
    r = one("clocks", with_gpu_health(base, 2, clocks_event_reasons=0x80))
    assert r.status == Status.FAIL and "power brake" in r.message
    r = one("clocks", with_gpu_health(base, 2, clocks_event_reasons=0x4))
    assert r.status == Status.PASS and "software power cap" in r.message


def test_persistence_off_warns():
    r = one("persistence", with_gpu_health(with_health(h200x2()), 0, persistence_mode=False))
    assert r.status == Status.WARN and "GPU 0" in r.message and "nvidia-persistenced" in r.fix


def test_mig_fails_when_whole_gpus_are_expected_and_passes_when_the_job_uses_instances():
    facts = with_gpu_health(with_health(h200x2()), 1, mig_mode=1, mig_mode_pending=1)
    assert one("mig", facts, expect_gpus=2).status == Status.FAIL
    assert one("mig", facts).status == Status.WARN
    mig = with_env(facts, CUDA_VISIBLE_DEVICES="MIG-1c4f2a3b-0000-4000-8000-000000000001")
    assert one("mig", mig, expect_gpus=1).status == Status.PASS
    pending = with_gpu_health(with_health(h200x2()), 0, mig_mode_pending=1)
    assert statuses(run("mig", pending)) == ["warn", "pass"]


def test_compute_mode_prohibited_fails_and_exclusive_process_explains_dask():
    base = with_health(h200x2())
    assert one("compute-mode", with_gpu_health(base, 0, compute_mode=2)).status == Status.FAIL
    r = one("compute-mode", with_gpu_health(base, 0, compute_mode=3))
    assert r.status == Status.WARN and "Dask worker" in r.message


# ---- host limits, interfaces, InfiniBand -------------------------------------------------------


def test_memlock_limited_on_an_infiniband_host_fails():
    facts = with_health(healthy_a100x8(), healthy_host(memlock_soft=64 * 1024))
    r = one("host-limits", facts)
    assert r.status == Status.FAIL and "ulimit -l" in r.message and "memlock" in r.fix


def test_memlock_limited_without_rdma_passes():
    facts = with_health(healthy_a100x8(), healthy_host(memlock_soft=8 * 2**20, ib_ports=()))
    r = one("host-limits", facts)
    assert r.status == Status.PASS and "memlock 8 MiB (no RDMA device)" in r.message


def test_small_nofile_warns_and_dockers_default_shm_fails():
    facts = with_health(healthy_a100x8(), healthy_host(nofile_soft=1024, shm_bytes=64 * 2**20))
    results = run("host-limits", facts)
    assert statuses(results) == ["warn", "fail"]
    assert "1024" in results[0].message
    assert "64 MiB for 8 GPUs" in results[1].message and "--shm-size" in results[1].fix


@pytest.mark.parametrize(
    "env, status, words",
    [
        ({"NCCL_SOCKET_IFNAME": "eth"}, "pass", "eth -> eth0"),
        ({"NCCL_SOCKET_IFNAME": "^docker,lo"}, "pass", "exclude only"),
        ({"NCCL_SOCKET_IFNAME": "=eth1"}, "fail", "'eth1' matches no interface"),
        ({"NCCL_SOCKET_IFNAME": "eth2"}, "fail", "(it is down)"),
        ({"UCX_NET_DEVICES": "mlx5_0:1,eth0"}, "pass", "mlx5_0:1 ACTIVE"),
        ({"UCX_NET_DEVICES": "mlx5_1:1"}, "fail", "no such HCA port"),
        ({"UCX_NET_DEVICES": "ib1"}, "fail", "no such interface"),
        ({"NCCL_IB_HCA": "mlx5"}, "pass", "mlx5 ACTIVE"),
        ({"NCCL_IB_HCA": "=mlx5_2:1"}, "fail", "matches no HCA (have mlx5_0)"),
    ],
)
def test_variables_naming_interfaces_and_hcas(env, status, words):
    host = healthy_host()
    host = dataclasses.replace(
        host, net_interfaces=(*host.net_interfaces,
                              type(host.net_interfaces[0])("eth2", False, "down"))
    )
    r = one("net-devices", with_env(with_health(healthy_a100x8(), host), **env))
    assert r.status.value == status and words in r.message, r


def test_net_devices_unset_is_a_skip():
    assert one("net-devices", with_health(healthy_a100x8())).status == Status.SKIP


def test_infiniband_port_down_or_at_a_lower_rate_warns():
    ports = (
        IbPort("mlx5_0", 1, "ACTIVE", "LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand"),
        IbPort("mlx5_1", 1, "ACTIVE", "LinkUp", "100 Gb/sec (4X EDR)", "InfiniBand"),
        IbPort("mlx5_2", 1, "DOWN", "Polling", "10 Gb/sec (4X SDR)", "InfiniBand"),
    )
    results = run("infiniband", with_health(healthy_a100x8(), healthy_host(ib_ports=ports)))
    assert statuses(results) == ["warn", "warn"]
    assert "mlx5_2:1 DOWN (Polling)" in results[0].message
    assert "100 Gb/sec" in results[1].message


def test_no_infiniband_skips_with_the_reason():
    host = healthy_host(ib_ports=(), ib_error="/sys/class/infiniband absent: no InfiniBand")
    r = one("infiniband", with_health(healthy_a100x8(), host))
    assert r.status == Status.SKIP and "absent" in r.message


def test_peermem_missing_on_a_gpu_infiniband_host_warns():
    host = healthy_host(modules=("nvidia", "ib_core"))
    r = one("peermem", with_health(healthy_a100x8(), host))
    assert r.status == Status.WARN and "modprobe nvidia-peermem" in r.fix


# ---- GPUs visible to NVML, none to a job ------------------------------------------------------


@pytest.mark.parametrize("value", ["", "-1", "0,0"])
def test_gpus_visible_to_nvml_but_none_to_the_job_warns_without_expect_gpus(value):
    facts = with_env(h200x2(), CUDA_VISIBLE_DEVICES=value)
    r = one("gpus", facts)
    assert r.status == Status.WARN and "NVML sees 2 GPUs but a job here sees none" in r.message
    assert "--expect-gpus 0" in r.fix


def test_expect_gpus_0_says_none_are_wanted():
    facts = with_env(h200x2(), CUDA_VISIBLE_DEVICES="-1")
    assert one("gpus", facts, expect_gpus=0).status == Status.PASS
    r = one("cuda-visible-devices", facts, expect_gpus=0)
    assert r.status == Status.PASS and "--expect-gpus 0" in r.message
    assert one("gpus", with_env(h200x2()), expect_gpus=0).status == Status.FAIL


# ---- cluster: one NCCL, UCX, CUDA runtime -----------------------------------------------------


def _worker(host: str, pid: int, **kw):
    f = healthy_a100x8(host=host, pid=pid)
    return dataclasses.replace(f, **kw) if kw else f


def test_stack_agreement_passes_folded_per_host():
    workers = {f"tcp://{h}:{p}": _worker(h, p) for h in ("a", "b") for p in (1, 2)}
    results = check_stack_agreement(workers)
    assert [r.check for r in results] == [
        "stack-agreement.nccl", "stack-agreement.ucx", "stack-agreement.cuda-runtime"]
    assert all(r.status == Status.PASS for r in results)
    assert "a (2 workers), b (2 workers)" in results[0].message
    assert "11.7.0" in results[2].message  # cudatoolkit's version


def test_a_worker_with_another_nccl_fails_and_is_named():
    workers = {f"tcp://{h}:{p}": _worker(h, p) for h in ("a", "b") for p in (1, 2)}
    workers["tcp://b:2"] = _worker("b", 2, nccl_version="2.18.1")
    [nccl] = [r for r in check_stack_agreement(workers) if r.check == "stack-agreement.nccl"]
    assert nccl.status == Status.FAIL
    assert "2.18.1 on tcp://b:2" in nccl.message and "a (2 workers), tcp://b:1" in nccl.message
    assert nccl.fix


def test_workers_without_a_value_do_not_disagree():
    workers = {"tcp://a:1": _worker("a", 1), "tcp://c:1": _worker("c", 1, nccl_version="",
               packages={}, python_packages={})}
    results = {r.check: r for r in check_stack_agreement(workers)}
    assert results["stack-agreement.nccl"].status == Status.PASS


def test_a_worker_reading_only_its_gpu_still_sees_a_link_its_peers_have():
    # a cluster worker reads health for its own GPU; the other GPUs' link counts come from
    # the Gpu facts every process reads
    facts = with_env(with_health(healthy_a100x8()), CUDA_VISIBLE_DEVICES="3")
    mine = [h for h in facts.gpu_health if h.index == 3]
    facts = dataclasses.replace(facts, role="worker", gpu_health=tuple(mine))
    assert one("nvlink", facts).status == Status.PASS
    broken = with_gpu_health(facts, 3, nvlinks=_links(12, down=(4,)))
    r = one("nvlink", broken)
    assert r.status == Status.FAIL and "GPU 3" in r.message and "link 4 down" in r.message


def test_a_worker_without_a_gpu_says_so():
    facts = with_env(with_health(h200x2()), CUDA_VISIBLE_DEVICES="")
    facts = dataclasses.replace(facts, role="worker", gpu_health=())
    r = one("ecc", facts)
    assert r.status == Status.SKIP and "leaves this worker no GPU" in r.message


def test_a_low_nofile_on_a_cpu_machine_is_not_a_health_problem():
    facts = with_health(no_driver_node(), healthy_host(nofile_soft=1024, ib_ports=()))
    r = one("host-limits", facts)
    assert r.status == Status.PASS and "nofile 1024" in r.message
