"""Each GPU's matmul figure of `validate --level perf` is judged against its SKU and against
the node's other GPUs: a power-capped node below the SKU on every GPU is the node's doing,
one GPU below its peers is the faulty-GPU signal. Pure judging, fed fake per-GPU figures."""

from __future__ import annotations

import sys

import pytest
import torch

from tests.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeHandle, FakeNvml
from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.power_limit import PowerLimit, power_limit_of
from torchscale.contracts.schema.perf import PeakResult, PerfRun, RankPerf
from torchscale.contracts.wording import validate_measured as shown
from torchscale.orchestration.validate.check_result import CheckStatus, Measurement
from torchscale.orchestration.validate.node_peers import (
    CAPPED_HINT,
    LAGGING_HINT,
    PEER_FAIL,
    PEER_PASS,
    POWER_HINT,
    UNCAPPED_HINT,
    judge_with_peers,
    peer_status,
)
from torchscale.orchestration.validate.perf import judge_perf, perf_checks
from torchscale.orchestration.validate.reference import expected_for
from torchscale.rank.programs import perf as perf_program

H100 = "NVIDIA H100 80GB HBM3"
L4 = "NVIDIA L4"
UNKNOWN = "NVIDIA Imaginary X1"


def _words(code: str) -> str:
    """A fix's words, as the check's hint gives them."""
    return wording.say(Finding(code=code))


def node(
    shares: list[float],
    name: str = H100,
    device: str = "cuda",
    dtype: str = "bf16",
    power: list[PowerLimit] | None = None,
) -> list[Measurement]:
    """One GPU per share, each reaching `share` x the SKU's `dtype` reference (x 500 TFLOP/s
    for a GPU without one), with its power limits as its rank read them (`power`: none read),
    judged as `validate --level perf` judges them."""
    expected = expected_for(name, f"matmul.{dtype}")
    scale = expected.value if expected is not None else 500.0
    ranks = [
        RankPerf(
            rank=gpu,
            device=f"cuda:{gpu}",
            device_name=name,
            matmul=[
                PeakResult(
                    dtype=dtype, device=f"cuda:{gpu}", device_name=name, best_tflops=s * scale
                )
            ],
            power_limit=power[gpu] if power is not None else None,
        )
        for gpu, s in enumerate(shares)
    ]
    return judge_perf(PerfRun(world_size=len(ranks), ranks=ranks), device)  # type: ignore[arg-type]


def _check(rows: list[Measurement]) -> tuple[CheckStatus, str, str]:
    (line,) = perf_checks(rows, "GPU")
    return line.status, shown.detail(line), shown.hint(line)


def test_a_power_capped_node_is_the_nodes_doing_not_a_faulty_gpu() -> None:
    """8 healthy GPUs all at 0.85 x the reference: below the SKU's PASS bar (90 %), alike."""
    rows = node([0.85] * 8)
    assert {r.status for r in rows} == {CheckStatus.WARN}
    for row in rows:
        assert row.data["peer_verdict"] == "node_below_sku"
        assert "the whole node is below the SKU" in shown.detail(row)
        assert "not a per-GPU fault" in shown.detail(row) and "lags" not in shown.detail(row)
        assert row.data["peer_ratio"] == pytest.approx(1.0)
    status, _, hint = _check(rows)
    assert status is CheckStatus.WARN
    assert hint == _words(POWER_HINT) and "nvidia-smi -q -d POWER" in hint


def test_one_gpu_below_its_peers_is_flagged_and_only_that_one() -> None:
    """7 GPUs at 0.95 x the reference and one at 0.7."""
    rows = node([0.95] * 7 + [0.7])
    slow = rows[7]
    assert slow.status is CheckStatus.FAIL
    assert slow.data["peer_verdict"] == "lags_peers"
    assert slow.data["peer_ratio"] == pytest.approx(0.7 / 0.95, abs=1e-3)
    assert shown.detail(slow).startswith("74 % of the median of the node's other 7 GPUs")
    assert {r.status for r in rows[:7]} == {CheckStatus.PASS}
    assert {r.data["peer_verdict"] for r in rows[:7]} == {"with_peers"}
    status, detail, hint = _check(rows)
    assert status is CheckStatus.FAIL
    assert "GPU 7: 74 % of the median" in detail
    assert hint == _words(LAGGING_HINT)


def test_a_gpu_that_passes_its_sku_but_lags_its_peers_warns() -> None:
    """The SKU bar alone passes a GPU at 0.92 of the reference; on a node whose others reach
    1.03 it is 11 % behind them: the per-GPU signal the SKU bar cannot give."""
    rows = node([1.03] * 7 + [0.92])
    assert rows[7].ratio == pytest.approx(0.92) and rows[7].ratio >= 0.9  # the SKU: PASS
    assert rows[7].status is CheckStatus.WARN
    assert "this GPU lags its peers" in shown.detail(rows[7])
    assert {r.status for r in rows[:7]} == {CheckStatus.PASS}


def test_a_healthy_node_with_the_usual_spread_passes() -> None:
    rows = node([0.97, 0.99, 1.0, 0.95, 0.98, 1.01, 0.96, 0.99])
    assert {r.status for r in rows} == {CheckStatus.PASS}
    assert _check(rows)[2] == ""


def test_a_node_far_below_its_sku_still_fails_and_says_it_is_the_whole_node() -> None:
    rows = node([0.6] * 8)
    assert {r.status for r in rows} == {CheckStatus.FAIL}
    assert {r.data["peer_verdict"] for r in rows} == {"node_below_sku"}
    assert _check(rows)[2] == _words(POWER_HINT)


def test_without_a_reference_a_lagging_gpu_is_still_flagged() -> None:
    """No SKU reference (INFO): the peers are the only bar, and they still name the GPU."""
    rows = node([1.0, 1.0, 1.0, 0.85], name=UNKNOWN)
    assert [r.status for r in rows] == [CheckStatus.INFO] * 3 + [CheckStatus.WARN]
    assert shown.detail(rows[3]).startswith("85 % of the median of the node's other 3 GPUs")
    assert "no reference" not in shown.detail(rows[3])


def test_a_gpu_alone_or_a_cpu_has_no_peers_and_keeps_its_sku_verdict() -> None:
    (alone,) = node([0.85])
    assert alone.status is CheckStatus.WARN and "peer_ratio" not in alone.data
    assert "whole node" not in shown.detail(alone)
    (cpu,) = node([1.0], name="CPU: Some Xeon", device="cpu")
    assert cpu.status is CheckStatus.INFO and "peer_ratio" not in cpu.data


def test_only_matmul_rows_of_the_same_model_are_peers() -> None:
    h100 = node([0.95, 0.95])
    (other,) = node([0.5], name=UNKNOWN)
    memory = h100[0].model_copy(update={"check": "memory.copy", "value": 1.0, "gpu": 2})
    rows = [h100[0], h100[1], other.model_copy(update={"gpu": 3}), memory]
    judged = judge_with_peers(rows, {0: H100, 1: H100, 2: H100, 3: UNKNOWN})
    assert judged[0].status is CheckStatus.PASS  # the slower model is no peer of an H100
    assert "peers" not in judged[2].data  # alone of its model
    assert judged[3] is memory  # not a matmul row: untouched


def test_peer_bars() -> None:
    assert peer_status(PEER_PASS) is CheckStatus.PASS
    assert peer_status(PEER_PASS - 0.01) is CheckStatus.WARN
    assert peer_status(PEER_FAIL) is CheckStatus.WARN
    assert peer_status(PEER_FAIL - 0.01) is CheckStatus.FAIL


def test_a_node_above_its_spec_sheet_is_a_measurement_bug_not_a_node_below_its_sku() -> None:
    """4 L4s at 1.2 x the fp32 spec sheet: each FAILs for being above the sheet (a timing
    bug); the node's median is no node below its SKU and no power cap."""
    expected = expected_for(L4, "matmul.fp32")
    assert expected is not None and expected.kind == "spec"
    rows = node([1.2] * 4, name=L4, dtype="fp32")
    assert {r.status for r in rows} == {CheckStatus.FAIL}
    for row in rows:
        assert "above the spec sheet" in shown.detail(row)
        assert "below the SKU" not in shown.detail(row) and "power" not in shown.detail(row).lower()
        assert row.data["peer_verdict"] == "with_peers"
        assert "hint" not in row.data
    assert _check(rows)[2] != _words(POWER_HINT)


def read_limits(*gpus: FakeGpu) -> list[PowerLimit]:
    """Each GPU's limits as a rank reads them from NVML (here a fake pynvml)."""
    fake = FakeNvml(list(gpus))
    return [power_limit_of(fake, FakeHandle(i)) for i in range(len(gpus))]


def capped(enforced_w: int, default_w: int = 700, gpus: int = 8) -> list[PowerLimit]:
    gpu = FakeGpu(
        enforced_power_limit_mw=enforced_w * 1000, default_power_limit_mw=default_w * 1000
    )
    return read_limits(*[gpu] * gpus)


def test_nvml_power_limits_are_read_in_watts_or_say_why_not() -> None:
    (limit,) = capped(500, gpus=1)
    assert (limit.enforced_w, limit.default_w, limit.capped) == (500.0, 700.0, True)
    (default,) = capped(700, gpus=1)
    assert default.capped is False and default.unavailable is None
    (unknown,) = read_limits(FakeGpu(enforced_power_limit_mw=NOT_SUPPORTED))
    assert unknown.capped is None and unknown.default_w == 700.0
    errors = {"nvmlDeviceGetEnforcedPowerLimit": "NVMLError_NotSupported: Not Supported"}
    assert unknown.unavailable == Finding(
        code="power_limit.queries_failed", figures={"errors": errors}
    )
    assert wording.say(unknown.unavailable) == (
        "nvmlDeviceGetEnforcedPowerLimit: NVMLError_NotSupported: Not Supported"
    )


@pytest.mark.parametrize("share", [0.8, 0.7])
def test_a_power_capped_healthy_node_warns_at_most_and_says_the_cap(share: float) -> None:
    """8 H100s at 500 W of 700 W, every GPU at `share` x 792: below the SKU's WARN bar (0.9)
    or its FAIL bar (0.75), all alike. The node is capped: WARN, never FAIL, the cap said."""
    rows = node([share] * 8, power=capped(500))
    assert {r.status for r in rows} == {CheckStatus.WARN}
    for row in rows:
        assert "power limit 500 W of 700 W default: the node is capped; per GPU it is healthy" in (
            shown.detail(row)
        )
        assert row.data["power_capped"] is True
        assert (row.data["power_limit_w"], row.data["default_power_limit_w"]) == (500.0, 700.0)
    status, detail, hint = _check(rows)
    assert status is CheckStatus.WARN and hint == _words(CAPPED_HINT)
    assert "the node is capped" in detail


def test_a_node_whose_power_limits_cannot_be_read_keeps_its_verdict_and_says_so() -> None:
    unreadable = FakeGpu(enforced_power_limit_mw=NOT_SUPPORTED)
    rows = node([0.7] * 8, power=read_limits(*[unreadable] * 8))
    assert {r.status for r in rows} == {CheckStatus.FAIL}
    assert "power limit unknown on 8 of 8 GPUs (nvmlDeviceGetEnforcedPowerLimit" in shown.detail(
        rows[0]
    )
    assert {r.data["power_capped"] for r in rows} == {None}
    assert _check(rows)[2] == _words(POWER_HINT)
    (not_read,) = {shown.detail(r).rsplit("; ", 1)[-1] for r in node([0.7] * 8)}
    assert not_read.startswith("power limit unknown on 8 of 8 GPUs (not read)")


def test_a_node_at_its_default_power_limit_is_not_excused() -> None:
    rows = node([0.7] * 8, power=capped(700))
    assert {r.status for r in rows} == {CheckStatus.FAIL}
    assert "power limit 700 W, its default: not a power cap" in shown.detail(rows[0])
    assert _check(rows)[2] == _words(UNCAPPED_HINT)


def test_a_node_capped_on_some_gpus_only_is_not_excused() -> None:
    power = capped(500, gpus=4) + capped(700, gpus=4)
    rows = node([0.7] * 8, power=power)
    assert {r.status for r in rows} == {CheckStatus.FAIL}
    assert "4 of 8 GPUs capped below their default" in shown.detail(rows[0])


def test_on_a_capped_node_a_gpu_lagging_its_peers_keeps_its_fail() -> None:
    rows = node([0.7] * 7 + [0.5], power=capped(500))
    assert rows[7].status is CheckStatus.FAIL and rows[7].data["peer_verdict"] == "lags_peers"
    assert {r.status for r in rows[:7]} == {CheckStatus.WARN}
    assert _check(rows)[2] == _words(LAGGING_HINT)


def test_a_rank_reads_the_power_limit_of_its_own_gpu_by_uuid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CUDA_VISIBLE_DEVICES=1: the rank's cuda:0 is NVML's GPU 1, found by its UUID."""
    other = FakeGpu(uuid="GPU-aaaaaaaa-0000-0000-0000-000000000000")
    mine = FakeGpu(uuid="GPU-bbbbbbbb-0000-0000-0000-000000000000", enforced_power_limit_mw=450_000)
    fake = FakeNvml([other, mine])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(
        perf_program, "torch_uuid", lambda device: "bbbbbbbb-0000-0000-0000-000000000000"
    )
    limit = perf_program.gpu_power_limit(torch.device("cuda", 0))
    assert (limit.enforced_w, limit.default_w) == (450.0, 700.0)
    assert fake.called("nvmlShutdown")  # NVML's reference count given back
    monkeypatch.setattr(perf_program, "torch_uuid", lambda device: "cccccccc-0000")
    missing = perf_program.gpu_power_limit(torch.device("cuda", 0))
    assert missing.unavailable == Finding(
        code="power_limit.no_gpu_with_uuid", figures={"uuid": "GPU-cccccccc-0000"}
    )


def test_a_rows_finding_is_the_verdict_its_status_rests_on() -> None:
    """A GPU the peers judge FAIL never keeps the SKU's 'perf.pass' finding beside it (the JSON
    said FAIL with finding perf.pass); the SKU's verdict is kept inside the peers' finding."""
    rows = node([1.0] * 7 + [0.7])
    assert rows[7].status is CheckStatus.FAIL and rows[7].finding is not None
    assert rows[7].finding.code == "perf.lags_peers"
    assert rows[7].finding.figures["sku"]["code"] == "perf.fail"
    assert shown.detail(rows[7]).startswith("70 % of the median of the node's other 7 GPUs")
    assert {r.finding.code for r in rows[:7] if r.finding} == {"perf.pass"}
    capped = node([0.85] * 4, power=[PowerLimit(enforced_w=500, default_w=700)] * 4)
    assert {r.finding.code for r in capped if r.finding} == {"perf.node_below_sku"}
    assert "power limit 500 W of 700 W default: the node is capped" in shown.detail(capped[0])
