"""validate's NVLink, fabric and settings checks on a fake 8 x H100 SXM node (no kept output has
two GPUs): links against the SKU's cited count, peer access over NVLink or PCIe, the fabric
manager's registration, link error counters and speed, settings that differ between GPUs, the
GPU's serial and UUID on every finding, and NotSupported read as not readable."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.fake_nvml import (
    NOT_SUPPORTED,
    NVML_ERROR_NOT_READY,
    NVML_GPU_FABRIC_STATE_COMPLETED,
    NVML_GPU_FABRIC_STATE_IN_PROGRESS,
    NVML_GPU_FABRIC_STATE_NOT_STARTED,
    NVML_NVLINK_ERROR_DL_CRC_FLIT,
    NVML_NVLINK_ERROR_DL_RECOVERY,
    NVML_NVLINK_VERSION_3_0,
    NVML_P2P_STATUS_NOT_SUPPORTED,
    FakeGpu,
    FakeNvml,
)
from tests.orchestration.test_validate_checks import fake_torch, gpu_ctx, make_ctx, uuid
from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.nvml import probe_nvml
from torchscale.contracts.schema.validate_report import SCHEMA_VERSION
from torchscale.contracts.wording import validate_measured as shown
from torchscale.interfaces.console.validate import check_words
from torchscale.orchestration.validate import run_checks as runner
from torchscale.orchestration.validate.check_result import CheckResult, CheckStatus, passed, skipped
from torchscale.orchestration.validate.checks_gpu_settings import check_gpu_settings
from torchscale.orchestration.validate.checks_nvlink import check_fabric, check_nvlink, check_p2p
from torchscale.orchestration.validate.nvlink_reference import nvlink_sku

H100_SXM = "NVIDIA H100 80GB HBM3"


def node(count: int = 8, **changes: dict[str, Any]) -> FakeNvml:
    """`count` healthy H100 SXM GPUs (18 active links each, registered in the fabric), GPU i
    changed by `changes[f"gpu{i}"]`."""
    gpus = []
    for i in range(count):
        fields: dict[str, Any] = {
            "name": H100_SXM,
            "uuid": f"GPU-{uuid(i)}",
            "serial": f"16500000000{i:02d}",
            "nvlinks": [True] * 18,
            "fabric_state": NVML_GPU_FABRIC_STATE_COMPLETED,
            "nvlink_speed_mbps": 26562,
        }
        fields.update(changes.get(f"gpu{i}", {}))
        gpus.append(FakeGpu(**fields))
    return FakeNvml(gpus)


def codes(check: CheckResult) -> list[str]:
    return [f.code for f in check.findings]


def one(check: CheckResult, code: str) -> Finding:
    matches = [f for f in check.findings if f.code == code]
    assert len(matches) == 1, (code, codes(check))
    return matches[0]


# ------------------------------------------------------------------------- NVLink links (2)


def test_every_link_active_passes_with_the_skus_source() -> None:
    result = check_nvlink(gpu_ctx(node()))
    assert result.status is CheckStatus.PASS, shown.detail(result)
    full = one(result, "nvlink.links_full")
    assert full.figures["gpus"] == list(range(8)) and full.figures["links"] == [18]
    assert "nvidia.com" in full.figures["source"][0]


def test_a_gpu_with_16_of_18_links_fails_naming_the_gpu_and_the_links() -> None:
    fake = node(gpu3={"nvlinks": [True] * 16 + [False, False]})
    result = check_nvlink(gpu_ctx(fake))
    assert result.status is CheckStatus.FAIL
    down = one(result, "nvlink.links_down")
    assert down.figures == {
        "gpu": 3,
        "uuid": f"GPU-{uuid(3)}",
        "serial": "1650000000003",
        "active": 16,
        "expected": 18,
        "down": [16, 17],
        "sku": "H100 SXM",
    }
    assert "GPU 3: 16 of 18 NVLink links active on an H100 SXM; links 16, 17 not active" in (
        shown.detail(result)
    )
    assert "nvidia-smi nvlink" in shown.hint(result)


def test_links_nvml_cannot_read_are_not_readable_never_a_pass_or_a_fail() -> None:
    fake = node(2, gpu0={"nvlinks": []}, gpu1={"nvlinks": []})  # every state: NotSupported
    result = check_nvlink(gpu_ctx(fake))
    assert result.status is CheckStatus.SKIP
    assert codes(result) == ["gpus.not_readable", "gpus.not_readable"]
    assert "not readable (NVMLError_NotSupported)" in shown.detail(result)


def test_error_counters_nvml_cannot_read_are_said_and_the_links_still_judged() -> None:
    result = check_nvlink(gpu_ctx(node(2, gpu1={"nvlink_errors": NOT_SUPPORTED})))
    assert result.status is CheckStatus.PASS
    unread = one(result, "gpus.not_readable")
    assert (unread.figures["gpu"], unread.figures["what"]) == (1, "error counters")


def test_a_gpu_with_no_cited_link_count_is_counted_not_judged() -> None:
    fake = node(2, gpu0={"name": "NVIDIA L40S"}, gpu1={"name": "NVIDIA L40S"})
    result = check_nvlink(gpu_ctx(fake))
    assert result.status is CheckStatus.INFO
    assert codes(result) == ["nvlink.not_judged", "nvlink.not_judged"]


@pytest.mark.parametrize(
    ("name", "model", "links"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 18),
        ("NVIDIA H200", "H200 SXM", 18),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM", 12),
        ("NVIDIA B200", "B200", 18),
        # PCIe cards and bridged pairs: their links depend on the bridges fitted
        ("NVIDIA H100 PCIe", None, None),
        ("NVIDIA H100 NVL", None, None),
        ("NVIDIA H200 NVL", None, None),
        ("NVIDIA A100-PCIE-40GB", None, None),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", None, None),
    ],
)
def test_sxm_skus_have_a_cited_link_count(name: str, model: str | None, links: int | None) -> None:
    sku = nvlink_sku(name)
    assert (sku.model if sku else None, sku.links if sku else None) == (model, links)
    assert sku is None or sku.source.startswith("https://www.nvidia.com/")


# --------------------------------------------------------------------- peer access path (2)


def test_pcie_only_peer_access_on_an_sxm_board_fails_naming_both_gpus() -> None:
    """Peer access works (torch), but NVML says it is not over NVLink: PCIe on an SXM board."""
    fake = node(2, gpu0={"p2p_nvlink": NVML_P2P_STATUS_NOT_SUPPORTED})
    result = check_p2p(gpu_ctx(fake))
    assert result.status is CheckStatus.FAIL
    pcie = one(result, "p2p.pcie_only")
    assert pcie.figures["pairs"] == [[0, 1]]
    assert pcie.figures["uuids"] == [f"GPU-{uuid(0)}", f"GPU-{uuid(1)}"]
    assert pcie.figures["serials"] == ["1650000000000", "1650000000001"]
    assert result.data["paths"] == {"0-1": "pcie"}


def test_peer_access_over_nvlink_passes_and_pcie_cards_are_not_held_to_it() -> None:
    over_nvlink = check_p2p(gpu_ctx(node(2)))
    assert over_nvlink.status is CheckStatus.PASS, shown.detail(over_nvlink)
    assert "peer access 2/2 pairs (1 over NVLink)" in shown.detail(over_nvlink)
    pcie_cards = node(2, gpu0={"name": "NVIDIA H100 PCIe", "nvlinks": []})
    pcie_cards.gpus[1].name = "NVIDIA H100 PCIe"
    assert check_p2p(gpu_ctx(pcie_cards)).status is CheckStatus.PASS


# ------------------------------------------------------------------------ fabric state (12)


@pytest.mark.parametrize(
    ("state", "status", "words"),
    [
        (NVML_GPU_FABRIC_STATE_NOT_STARTED, 0, "not started"),
        (NVML_GPU_FABRIC_STATE_IN_PROGRESS, 0, "in progress"),
        (NVML_GPU_FABRIC_STATE_COMPLETED, NVML_ERROR_NOT_READY, "NVML_ERROR_NOT_READY"),
    ],
)
def test_a_gpu_the_fabric_manager_has_not_registered_fails(
    state: int, status: int, words: str
) -> None:
    fake = node(gpu5={"fabric_state": state, "fabric_status": status})
    result = check_fabric(gpu_ctx(fake))
    assert result.status is CheckStatus.FAIL
    bad = one(result, "fabric.not_registered")
    assert (bad.figures["gpu"], bad.figures["serial"]) == (5, "1650000000005")
    assert words in shown.detail(result)
    assert "nvidia-fabricmanager" in shown.hint(result)


def test_a_registered_fabric_passes_and_says_xid_is_not_read() -> None:
    result = check_fabric(gpu_ctx(node()))
    assert result.status is CheckStatus.PASS
    assert codes(result) == ["fabric.registered", "gpus.xid_not_read"]
    assert "Xid errors are not readable through NVML" in shown.detail(result)


def test_fabric_query_not_supported_is_not_readable() -> None:
    fake = node(2, gpu0={"fabric_state": NOT_SUPPORTED}, gpu1={"fabric_state": NOT_SUPPORTED})
    result = check_fabric(gpu_ctx(fake))
    assert result.status is CheckStatus.SKIP
    assert codes(result) == ["gpus.not_readable", "gpus.not_readable", "gpus.xid_not_read"]


# --------------------------------------------------------- link errors, version, speed (12)


def test_link_error_counters_since_the_driver_loaded_are_context_naming_gpu_link_and_counts() -> (
    None
):
    """Counts since the driver loaded may be a boot's or a reseat's long past: context, never a
    WARN on their own; whether they grow under load is judged after it (below)."""
    errors = {5: {NVML_NVLINK_ERROR_DL_CRC_FLIT: 12, NVML_NVLINK_ERROR_DL_RECOVERY: 1}}
    result = check_nvlink(gpu_ctx(node(gpu2={"nvlink_errors": errors})))
    assert result.status is CheckStatus.PASS and result.fix == []
    found = one(result, "nvlink.errors")
    assert found.figures | {"uuid": "-"} == {
        "gpu": 2,
        "uuid": "-",
        "serial": "1650000000002",
        "link": 5,
        "recovery": 1,
        "crc_flit": 12,
    }
    assert "GPU 2 NVLink 5: 1 recovery, 12 CRC flit error(s)" in shown.detail(result)


def test_a_link_below_the_skus_generation_and_a_slower_gpu_warn() -> None:
    fake = node(
        gpu1={"nvlink_version": {i: NVML_NVLINK_VERSION_3_0 if i == 4 else 6 for i in range(18)}},
        gpu6={"nvlink_speed_mbps": 13281},
    )
    result = check_nvlink(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    assert one(result, "nvlink.old_generation").figures["links"] == [4]
    slow = one(result, "nvlink.speed_differs")
    assert (slow.figures["gpu"], slow.figures["speed_mbps"], slow.figures["peers_mbps"]) == (
        6,
        13281,
        26562,
    )


@pytest.mark.parametrize("level", ["basic", "perf"])
def test_link_errors_are_judged_by_how_much_they_rose_while_validate_loaded_the_links(
    monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    """GPU 1 has 40 replays since the driver loaded and none more; GPU 3's link 2 gains 500
    during the smoke test's collectives. Before, the 40 stale ones warned and the 500 new ones
    were never seen (one reading); now the rise is the verdict, named with its GPU and link."""
    from tests.fake_nvml import NVML_NVLINK_ERROR_DL_REPLAY

    fake = node(4, gpu1={"nvlink_errors": {0: {NVML_NVLINK_ERROR_DL_REPLAY: 40}}})
    monkeypatch.setitem(sys.modules, "pynvml", fake)

    def smoke_that_hurts_a_link(ctx: Any, env: dict[str, str]) -> list[CheckResult]:
        fake.gpus[3].nvlink_errors = {2: {NVML_NVLINK_ERROR_DL_REPLAY: 500}}
        return [passed("smoke_nccl_cuda", "Smoke", Finding(code="test.noted"))]

    monkeypatch.setattr(runner, "CHECKS", (check_nvlink,))
    monkeypatch.setattr(runner, "check_smoke", smoke_that_hurts_a_link)
    monkeypatch.setattr(runner, "_measure", lambda *args: None)  # perf's own steps: not here
    torch = fake_torch(gpus=4, uuids=[uuid(i) for i in range(4)])

    def validate(quick: bool = False) -> dict[str, CheckResult]:
        ctx = make_ctx("cuda", quick=quick, torch=torch, nvml=probe_nvml())
        ctx.level = level  # type: ignore[assignment]
        return {c.id: c for c in runner.run_validation(ctx, base_env={}).checks}

    checks = validate()
    assert one(checks["nvlink"], "nvlink.errors").figures["replay"] == 40  # context
    assert checks["nvlink"].status is CheckStatus.PASS
    rose = checks["nvlink_errors"]
    assert rose.status is CheckStatus.WARN
    (finding,) = rose.findings
    assert finding.code == "nvlink.errors_rose"
    figures = finding.figures
    assert (figures["gpu"], figures["link"], figures["replay"]) == (3, 2, 500)
    during = "smoke test" if level == "basic" else "smoke test, perf"
    assert wording.say(finding) == (
        f"GPU 3 NVLink 2: +500 replay error(s) while validate loaded the links ({during})"
    )
    # nothing grew this time (500 before and after): a pass, saying what loaded the links
    monkeypatch.setattr(runner, "check_smoke", lambda ctx, env: [])
    assert validate()["nvlink_errors"].status is CheckStatus.PASS
    # --quick at the basic level runs nothing on the links: nothing judged
    if level == "basic":
        assert validate(quick=True)["nvlink_errors"].status is CheckStatus.SKIP


# ----------------------------------------------------------------- settings agree (12)


def test_a_gpu_with_a_lower_power_limit_warns_and_one_in_mig_mode_fails() -> None:
    fake = node(gpu5={"power_management_limit_mw": 500_000}, gpu2={"mig_mode": True})
    result = check_gpu_settings(gpu_ctx(fake))
    assert result.status is CheckStatus.FAIL
    differs = {
        f.figures["setting"]: f.figures for f in result.findings if f.code.endswith("differs")
    }
    assert differs["power_limit_w"]["gpus"] == [5] and differs["power_limit_w"]["usual"] == 700
    assert differs["power_limit_w"]["serials"] == ["1650000000005"]
    assert differs["mig_mode"]["gpus"] == [2] and differs["mig_mode"]["values"] == ["on"]
    assert "power limit (W) differs: GPU 5: 500; 700 on GPUs 0, 1, 2, 3, 4, 6, 7" in shown.detail(
        result
    )


def test_vbios_ecc_and_clocks_that_differ_warn() -> None:
    fake = node(
        gpu7={"vbios": "96.00.61.00.01", "ecc_mode": False, "app_clock_sm": 1755},
    )
    result = check_gpu_settings(gpu_ctx(fake))
    assert result.status is CheckStatus.WARN
    settings = [f.figures["setting"] for f in result.findings if f.code == "gpus.setting_differs"]
    assert settings == ["vbios", "ecc_mode", "app_clock_sm_mhz"]


def test_a_setting_nvml_cannot_give_is_not_compared() -> None:
    fake = node(**{f"gpu{i}": {"app_clock_mem": NOT_SUPPORTED} for i in range(8)})
    result = check_gpu_settings(gpu_ctx(fake))
    assert result.status is CheckStatus.PASS
    unread = one(result, "gpus.setting_not_readable")
    assert unread.figures == {
        "setting": "app_clock_mem_mhz",
        "gpus": list(range(8)),
        "error": "NVMLError_NotSupported",
    }
    assert "app_clock_mem_mhz" not in one(result, "gpus.settings_agree").figures["settings"]


# ------------------------------------------------------------------ serial and UUID (12)


def test_the_probe_reads_each_gpus_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", node(2))
    state = probe_nvml()
    assert [g.serial for g in state.gpus] == ["1650000000000", "1650000000001"]


def test_verbose_shows_the_serial_and_uuid_of_every_gpu_a_finding_names() -> None:
    result = check_nvlink(gpu_ctx(node(gpu3={"nvlinks": [True] * 16 + [False, False]})))
    assert check_words(result, verbose=False).count("serial") == 0
    assert check_words(result, verbose=True).endswith(
        f"GPU 3: serial 1650000000003, UUID GPU-{uuid(3)}"
    )


def test_per_gpu_health_checks_carry_serial_and_uuid() -> None:
    from torchscale.orchestration.validate.checks_gpu import check_ecc, check_persistence

    for check in (check_ecc, check_persistence):
        ids = check(gpu_ctx(node(2))).data["ids"]
        assert ids[1] == {"gpu": 1, "uuid": f"GPU-{uuid(1)}", "serial": "1650000000001"}


# ------------------------------------------------------------------------ one GPU (11)


def test_one_gpu_is_not_called_ready_for_distributed_training() -> None:
    ctx = make_ctx("cuda", quick=False, torch=fake_torch(gpus=1), nvml=node(1).state())
    results = [
        passed("smoke_nccl_cuda", "Smoke", Finding(code="test.noted")),
        skipped("p2p", "P2P / NVLink", Finding(code="test.noted")),
        skipped("perf_busbw_all_reduce", "busbw all_reduce", Finding(code="test.noted")),
    ]
    basis = runner.verdict_basis(ctx, results)
    assert basis is not None and basis.code == "validate.ready_one_gpu"
    assert basis.figures["unchecked"] == ["P2P / NVLink", "busbw all_reduce", "NCCL between GPUs"]
    text = wording.say(runner.verdict_basis(ctx, results))
    assert "ready for GPU (NCCL) distributed training" not in text
    assert text == wording.say(basis)
    assert "not checked: P2P / NVLink, busbw all_reduce, NCCL between GPUs" in text


def test_the_report_stores_the_verdicts_basis() -> None:
    ctx = make_ctx("cuda", quick=True, torch=fake_torch(gpus=2), nvml=node(2).state())
    report = runner._report(ctx, [passed("a", "A", Finding(code="test.noted"))], [], {}, None)
    assert report.verdict_basis == Finding(
        code="validate.ready", figures={"quick": True, "warns": [], "path": "GPU (NCCL)"}
    )
    assert report.schema_version == SCHEMA_VERSION


# ----------------------------------------------------------------- a slice of the board


def _slice_checks(ctx: Any) -> dict[str, CheckResult]:
    from torchscale.orchestration.validate.checks_gpu import (
        check_ecc,
        check_gpus,
        check_persistence,
    )

    checks = (check_gpus, check_ecc, check_persistence, check_gpu_settings, check_nvlink)
    return {check.__name__: check(ctx) for check in (*checks, check_fabric)}


def test_a_one_gpu_slice_of_a_board_judges_its_gpu_not_the_others() -> None:
    """A job given GPU 0 of an 8-GPU board (CUDA_VISIBLE_DEVICES, a Slurm share): NVML lists
    all 8, and GPUs 4-7 belong to other jobs (links down, MIG mode, ECC errors, a fabric still
    registering, persistence off). It used to fail on them; it judges GPU 0, says which it
    left out, and a bad GPU it can use still fails, named by its NVML index."""
    bad = {
        "gpu4": {"persistence": False},
        "gpu5": {"nvlinks": [True] * 16 + [False, False]},
        "gpu6": {"mig_mode": True},
        "gpu7": {"ecc_uncorrected_volatile": 3, "fabric_state": NVML_GPU_FABRIC_STATE_IN_PROGRESS},
    }
    fake = node(8, **bad)
    ours = make_ctx("cuda", torch=fake_torch(gpus=1, uuids=[uuid(0)]), nvml=fake.state())
    results = _slice_checks(ours)
    statuses = {name: r.status for name, r in results.items()}
    assert statuses["check_gpu_settings"] is CheckStatus.SKIP  # one GPU: nothing to compare
    others = {n: s for n, s in statuses.items() if n != "check_gpu_settings"}
    assert set(others.values()) == {CheckStatus.PASS}, statuses
    listed = one(results["check_gpus"], "gpus.listed")
    assert listed.figures["not_visible"] == [1, 2, 3, 4, 5, 6, 7]
    assert "NVML GPU(s) 1, 2, 3, 4, 5, 6, 7 not visible to this process" in wording.say(listed)
    # the whole board seen (every ordinal matched): judged as before
    board = _slice_checks(gpu_ctx(fake))
    assert board["check_ecc"].status is CheckStatus.FAIL
    assert board["check_nvlink"].status is CheckStatus.FAIL
    # a slice whose one GPU is a bad one, CUDA ordinal 0 being NVML GPU 7
    theirs = make_ctx("cuda", torch=fake_torch(gpus=1, uuids=[uuid(7)]), nvml=fake.state())
    results = _slice_checks(theirs)
    assert results["check_ecc"].status is CheckStatus.FAIL
    assert results["check_ecc"].findings[0].figures["bad"] == [[7, "uncorrected", 3]]
    assert results["check_fabric"].status is CheckStatus.FAIL
