"""The SKU reference: real device names find the right SKU, every figure has a source, the
thresholds give PASS/WARN/FAIL at their bounds, a figure above a spec sheet is a FAIL, an
unknown device is INFO, and the README's table is the module's."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscale.contracts.wording import say
from torchscale.orchestration.validate.check_result import CheckStatus
from torchscale.orchestration.validate.reference import (
    HEALTHY,
    SKUS,
    SPEC_THRESHOLDS,
    Expected,
    expected_for,
    judge,
    sku_for,
)


def reference_rows() -> list[dict[str, object]]:
    """Every figure of the table with its source, as docs/cli.md shows it."""
    rows: list[dict[str, object]] = []
    for sku in SKUS:
        cite = f"{sku.source} ({sku.sheet_text})"
        rows.append(
            {"sku": sku.model, "check": "memory", "value": sku.hbm_gbps, "unit": "GB/s",
             "kind": "spec", "source": cite}
        )  # fmt: skip
        rows.append(
            {"sku": sku.model, "check": "h2d/d2h", "value": sku.pcie_gbps, "unit": "GB/s",
             "kind": "spec", "source": cite}
        )  # fmt: skip
        if sku.nvlink_gbps is not None:
            rows.append(
                {"sku": sku.model, "check": "p2p.bw/busbw", "value": sku.nvlink_gbps,
                 "unit": "GB/s", "kind": "spec", "source": cite}
            )  # fmt: skip
        for dtype, (value, _, source) in sku.healthy_tflops.items():
            rows.append(
                {"sku": sku.model, "check": f"matmul.{dtype}", "value": value,
                 "unit": "TFLOP/s", "kind": "healthy", "source": source}
            )  # fmt: skip
    return rows


README = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
KEPT = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize(
    ("name", "sku", "triad"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350.0),
        ("NVIDIA H100 PCIe", "H100 PCIe", 2000.0),
        ("NVIDIA H100 NVL", "H100 NVL", 3900.0),
        ("NVIDIA H200", "H200 SXM", 4800.0),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", 2039.0),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1555.0),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 1935.0),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB", 1555.0),
        ("NVIDIA L40S", "L40S", 864.0),
        ("NVIDIA L4", "L4", 300.0),
        ("AMD Instinct MI300X", "MI300X", 5300.0),
    ],
)
def test_real_device_names_find_their_sku(name: str, sku: str, triad: float) -> None:
    assert sku_for(name) == sku
    expected = expected_for(name, "memory.triad")
    assert expected is not None and expected.value == triad and expected.kind == "spec"


def test_an_l4_is_not_an_l40s_and_a_pcie_a100_has_no_nvlink() -> None:
    assert expected_for("NVIDIA L4", "memory.copy").value == 300.0  # type: ignore[union-attr]
    assert expected_for("NVIDIA A100-PCIE-40GB", "p2p.bw") is None
    assert expected_for("NVIDIA A100-SXM4-40GB", "p2p.bw").value == 300.0  # type: ignore[union-attr]


def test_matmul_is_judged_by_this_searchs_healthy_figure_where_one_was_measured() -> None:
    h100 = expected_for("NVIDIA H100 80GB HBM3", "matmul.bf16")
    assert h100 is not None and (h100.value, h100.kind, h100.runs) == (708.0, "healthy", 1)
    assert "tests/fixtures/h100_second_run" in h100.source
    h200 = expected_for("NVIDIA H200", "matmul.bf16")  # the same die: the H100's figure
    assert h200 == h100
    a100 = expected_for("NVIDIA A100-SXM4-80GB", "matmul.bf16")  # never run here: the sheet
    assert a100 is not None and (a100.value, a100.kind) == (312.0, "spec")
    mi300x = expected_for("AMD Instinct MI300X", "matmul.bf16")
    assert mi300x is not None and mi300x.kind == "spec"


def _h100_perf_bf16() -> float:
    """The bf16 figure the second H100 run printed (its kept perf output)."""
    text = (KEPT / "h100_second_run" / "perf.out.txt").read_text(encoding="utf-8")
    (line,) = [ln for ln in text.splitlines() if "perf: matmul bf16:" in ln]
    return float(line.split("matmul bf16:")[1].split()[0])


@pytest.mark.parametrize(
    ("name", "tflops", "status"),
    [
        # the H200's 686 of 2026-11-27 (docs/measured.md): not used to set any figure
        ("NVIDIA H200", 686.0, CheckStatus.PASS),
        # a GPU at two thirds of its healthy peers: broken, not a WARN
        ("NVIDIA H100 80GB HBM3", 708.0 * 2 / 3, CheckStatus.FAIL),
        ("NVIDIA H200", 686.0 * 2 / 3, CheckStatus.FAIL),
        # 15 % below: outside a healthy GPU's spread, not broken
        ("NVIDIA H100 80GB HBM3", 708.0 * 0.85, CheckStatus.WARN),
    ],
)
def test_the_bf16_rule_on_readings_it_was_not_set_from(
    name: str, tflops: float, status: CheckStatus
) -> None:
    assert judge("matmul.bf16", tflops, expected_for(name, "matmul.bf16"))[0] is status


def test_a_healthy_h100_reads_pass_by_its_own_kept_output() -> None:
    """The H100 run read 708 bf16 and was WARN against another search's best (792)."""
    status, ratio, finding = judge(
        "matmul.bf16", _h100_perf_bf16(), expected_for("NVIDIA H100 80GB HBM3", "matmul.bf16")
    )
    assert status is CheckStatus.PASS and ratio is not None and ratio > 0.99
    assert finding.code == "perf.pass"
    assert say(finding) == "100 % of this search's 708 on a healthy GPU of this SKU (1 run)"


@pytest.mark.parametrize(
    "name", ["Intel(R) Xeon(R) Platinum 8375C CPU", "CPU x86_64", "NVIDIA H100 MIG 1g.10gb"]
)
def test_an_unknown_device_or_a_cpu_gets_the_figure_alone(name: str) -> None:
    expected = expected_for(name, "matmul.bf16")
    assert expected is None
    status, ratio, finding = judge("matmul.bf16", 1.0, expected)
    assert (status, ratio) == (CheckStatus.INFO, None)
    assert say(finding) == "no reference for this device: the measured value alone"


def test_thresholds_at_their_bounds() -> None:
    healthy = Expected(100.0, "healthy", "src", 1)
    assert judge("matmul.bf16", HEALTHY.pass_at * 100, healthy)[0] is CheckStatus.PASS
    assert judge("matmul.bf16", HEALTHY.pass_at * 100 - 0.01, healthy)[0] is CheckStatus.WARN
    assert judge("matmul.bf16", HEALTHY.warn_at * 100, healthy)[0] is CheckStatus.WARN
    assert judge("matmul.bf16", HEALTHY.warn_at * 100 - 0.01, healthy)[0] is CheckStatus.FAIL
    spec = Expected(100.0, "spec", "src")
    memory = SPEC_THRESHOLDS["memory"]
    assert judge("memory.triad", memory.pass_at * 100, spec)[0] is CheckStatus.PASS
    assert judge("memory.triad", memory.warn_at * 100 - 0.01, spec)[0] is CheckStatus.FAIL
    status, ratio, finding = judge("h2d", 40.0, spec)
    assert (status, ratio) == (CheckStatus.FAIL, 0.4) and "FAIL below 50 %" in say(finding)


def test_above_the_spec_sheet_is_a_fail_except_for_busbw() -> None:
    spec = Expected(100.0, "spec", "src")
    status, _, finding = judge("memory.copy", 106.0, spec)
    assert status is CheckStatus.FAIL and "measurement bug, not a fast GPU" in say(finding)
    assert judge("memory.copy", 104.0, spec)[0] is CheckStatus.PASS  # within the 5 % slack
    assert judge("busbw.all_reduce", 120.0, spec)[0] is CheckStatus.PASS  # NVLink SHARP


def test_lower_is_better_inverts_the_ratio() -> None:
    expected = Expected(2.0, "spec", "s")
    status, ratio, _ = judge("p2p.latency", 4.0, expected, higher_is_better=False)
    assert (status, ratio) == (CheckStatus.WARN, 0.5)  # twice the latency: half as good


def test_every_figure_has_a_source_and_the_readme_shows_the_table() -> None:
    rows = reference_rows()
    assert rows
    readme = README.read_text(encoding="utf-8")
    for row in rows:  # a sheet's link, or this search's kept output
        where = "tests/fixtures/" if row["kind"] == "healthy" else "http"
        assert where in str(row["source"]), row
        line = f"| {row['sku']} | {row['check']} | {row['value']:g} {row['unit']} | {row['kind']} |"
        assert line in readme, f"docs/cli.md's SKU reference lacks: {line}"
