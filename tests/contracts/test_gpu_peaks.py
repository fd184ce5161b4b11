"""The MFU peak table (torchscale/contracts/gpu_peaks.py) against the device names drivers really
report: NVML's nvmlDeviceGetName (the same string torch.cuda.get_device_name gives on NVIDIA)
and ROCm's torch.cuda.get_device_name / amdsmi's names on AMD. A partial match must never give
a GPU its neighbour's peak ("GH200" is not "H200", "GB200" not "B200", "MI308X" not "MI300X").
"""

from __future__ import annotations

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_peaks import (
    GPU_PEAKS,
    GpuPeaks,
    Tf32Settings,
    cell_peak,
    lookup,
    peak_tflops,
)
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_reasons import peak_basis
from torchscale.orchestration.config.hardware import PROFILES

TF32_OFF = Tf32Settings(False, False, "matmul=False", "conv=False")
TF32_ON = Tf32Settings(True, True, "matmul=True", "conv=True")

# (device name as reported, the row it must read as, bf16 (fp16 where no bf16), fp32, tf32)
REAL_NAMES: list[tuple[str, str, float, float, float | None]] = [
    # NVML / torch on NVIDIA
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.0, 67.0, 494.0),
    ("NVIDIA H100 PCIe", "H100 PCIe", 756.0, 51.0, 378.0),
    ("NVIDIA H100 NVL", "H100 NVL", 835.5, 60.0, 417.5),
    ("NVIDIA H200", "H200 SXM", 989.0, 67.0, 494.0),
    ("NVIDIA H200 NVL", "H200 NVL", 835.5, 60.0, 417.5),
    ("NVIDIA GH200 480GB", "GH200 (its Hopper GPU)", 989.0, 67.0, 494.0),
    ("NVIDIA GH200 144G HBM3e", "GH200 (its Hopper GPU)", 989.0, 67.0, 494.0),
    ("NVIDIA B200", "B200 (HGX)", 2250.0, 75.0, 1125.0),
    ("NVIDIA GB200", "GB200 (per GPU)", 2500.0, 80.0, 1250.0),
    ("NVIDIA A100-SXM4-80GB", "A100", 312.0, 19.5, 156.0),
    ("NVIDIA A100-SXM4-40GB", "A100", 312.0, 19.5, 156.0),
    ("NVIDIA A100 80GB PCIe", "A100", 312.0, 19.5, 156.0),
    ("NVIDIA A100-PCIE-40GB", "A100", 312.0, 19.5, 156.0),
    ("NVIDIA L40S", "L40S", 362.0, 91.6, 183.0),
    ("NVIDIA L4", "L4", 121.0, 30.3, 60.0),
    ("NVIDIA A10", "A10", 125.0, 31.2, 62.5),
    ("Tesla V100-SXM2-32GB", "V100 SXM2", 125.0, 15.7, None),
    ("Tesla V100-PCIE-32GB", "V100 PCIe", 112.0, 14.0, None),
    # ROCm torch (HIP marketing name) and amdsmi on AMD
    ("AMD Instinct MI250X/MI250", "MI250X (per GCD)", 191.5, 47.85, None),
    ("AMD Instinct MI250X", "MI250X (per GCD)", 191.5, 47.85, None),
    ("AMD Instinct MI300X", "MI300X", 1307.4, 163.4, 653.7),
    ("AMD Instinct MI300X OAM", "MI300X", 1307.4, 163.4, 653.7),  # amdsmi product_name
    ("MI300X-O", "MI300X", 1307.4, 163.4, 653.7),  # amdsmi asic market_name on an OAM
    ("AMD Instinct MI325X", "MI325X", 1307.4, 163.4, 653.7),
]

# names that must read as no row at all: each is a different GPU beside a known one
NOT_IN_TABLE = [
    "NVIDIA H20",  # a cut-down Hopper, not H200
    "NVIDIA H800",
    "NVIDIA B300 SXM6 AC",  # Blackwell Ultra, not B200
    "NVIDIA GB300",
    "NVIDIA L40",  # not L4 or L40S
    "NVIDIA RTX A1000 6GB Laptop GPU",  # not A100 or A10
    "NVIDIA A10G",  # AWS's A10 variant: no NVIDIA sheet
    "Tesla V100S-PCIE-32GB",
    "AMD Instinct MI300A",  # the APU: 228 CUs, not MI300X
    "AMD Instinct MI308X",  # 80 CUs, not MI300X
    "AMD Instinct MI210",
    "AMD Radeon Graphics",  # the generic name some ROCm setups report for an MI300X
]


def _precision(row_bf16: bool) -> str:
    return "bf16" if row_bf16 else "amp"


@pytest.mark.parametrize(("name", "model", "half", "fp32", "tf32"), REAL_NAMES)
def test_real_device_names_read_as_their_own_row(
    name: str, model: str, half: float, fp32: float, tf32: float | None
) -> None:
    row = lookup(name)
    assert row is not None and row.model == model
    precision = _precision("bf16" in row.tflops)
    assert peak_tflops(name, precision, False) == (half, None)
    assert peak_tflops(name, "fp32", False) == (fp32, None)
    # with TF32 allowed: the TF32 peak, or the fp32 one where the GPU has no TF32 units
    assert peak_tflops(name, "fp32", True) == (tf32 if tf32 is not None else fp32, None)


@pytest.mark.parametrize("name", NOT_IN_TABLE)
def test_neighbouring_gpus_get_no_peak_with_the_reason(name: str) -> None:
    assert lookup(name) is None
    peak = cell_peak(name, "bf16", False, TF32_OFF)
    assert peak.tflops is None and peak.note == Finding(
        code="peak.not_in_table", figures={"device": name}
    )
    assert name in say(peak.note)


def test_superchip_gpus_are_not_read_as_their_neighbours() -> None:
    """GB200's GPU is clocked above HGX B200's; GH200's GPU is H100 SXM's (the same figures,
    on purpose, in a row of its own)."""
    gb200, b200 = lookup("NVIDIA GB200"), lookup("NVIDIA B200")
    assert gb200 is not None and b200 is not None
    assert gb200.tflops["bf16"] > b200.tflops["bf16"]
    gh200, h100 = lookup("NVIDIA GH200 480GB"), lookup("NVIDIA H100 80GB HBM3")
    assert gh200 is not None and h100 is not None
    assert gh200.model != h100.model and gh200.tflops == h100.tflops


def test_b200_fp32_is_the_hgx_sheets_75() -> None:
    assert peak_tflops("NVIDIA B200", "fp32", False) == (75.0, None)


@pytest.mark.parametrize("row", GPU_PEAKS, ids=lambda r: r.model)
def test_every_row_cites_a_vendor_page(row: GpuPeaks) -> None:
    assert row.source.startswith(("https://www.nvidia.com/", "https://www.amd.com/"))


@pytest.mark.parametrize("row", GPU_PEAKS, ids=lambda r: r.model)
def test_every_row_is_dense(row: GpuPeaks) -> None:
    """Dense tensor peaks keep the 2:1 steps fp8 : bf16 : tf32 (within the vendors' rounding);
    a "with sparsity" figure slipped into one column would double it and break the ratio."""
    tflops = row.tflops
    half = tflops.get("bf16", tflops.get("fp16"))
    assert half is not None
    if "bf16" in tflops and "fp16" in tflops:
        assert tflops["bf16"] == tflops["fp16"]
    if "fp8" in tflops:
        assert tflops["fp8"] == pytest.approx(2 * half, rel=0.02)
    if "tf32" in tflops:
        assert tflops["tf32"] == pytest.approx(half / 2, rel=0.02)
    assert tflops["fp32"] < half


def test_basis_names_the_row_a_name_was_read_as() -> None:
    peak = cell_peak("NVIDIA GB200", "bf16", False, TF32_OFF)
    assert peak_basis(peak.basis, peak.tflops) == (
        "NVIDIA GB200 (as GB200 (per GPU)): bf16 dense peak 2500 TFLOP/s"
    )
    assert peak.basis is not None and peak.basis.figures["row"] == "GB200 (per GPU)"


def test_cdna2_has_no_tf32_units_so_fp32_uses_the_matrix_peak() -> None:
    peak = cell_peak("AMD Instinct MI250X/MI250", "fp32", False, TF32_ON)
    assert peak.tflops == 47.85
    assert "no TF32 units" in (peak_basis(peak.basis, peak.tflops) or "")


def test_mi300x_with_tf32_allowed_uses_the_xf32_peak() -> None:
    """Never the lower fp32 peak when fp32 matmuls may run in XF32: MFU could then read 4x high."""
    assert cell_peak("AMD Instinct MI300X", "fp32", False, TF32_ON).tflops == 653.7


# named hardware profiles whose GPU has no row, with why
PROFILE_GAPS = {"NVIDIA A10G": "AWS's A10 variant: NVIDIA publishes no sheet for it"}


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_named_hardware_profile_has_a_peak(profile: str) -> None:
    name = PROFILES[profile].gpu_name
    assert name is not None
    assert (lookup(name) is not None) != (name in PROFILE_GAPS)


@pytest.mark.parametrize(
    ("name", "precision", "tf32", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "bf16", False, 989.0),  # SXM
        ("NVIDIA H100 80GB HBM3", "amp", False, 989.0),
        ("NVIDIA H100 80GB HBM3", "fp32", False, 67.0),
        ("NVIDIA H100 80GB HBM3", "fp32", True, 494.0),
        ("NVIDIA H100 PCIe", "bf16", False, 756.0),
        ("NVIDIA H100 PCIe", "fp32", True, 378.0),
        ("NVIDIA H100 PCIe", "fp32", False, 51.0),
        ("NVIDIA A100-SXM4-80GB", "bf16", False, 312.0),
        ("NVIDIA A100-SXM4-80GB", "fp32", True, 156.0),
        ("NVIDIA L40S", "bf16", False, 362.0),
        ("NVIDIA L4", "bf16", False, 121.0),
        ("Tesla V100-SXM2-32GB", "amp", False, 125.0),
        ("Tesla V100-SXM2-32GB", "fp32", False, 15.7),
    ],
)
def test_peak_tflops_known(name: str, precision: str, tf32: bool, expected: float) -> None:
    assert peak_tflops(name, precision, tf32) == (expected, None)


def test_peak_tflops_unknown_gpu() -> None:
    peak, reason = peak_tflops("NVIDIA GeForce GTX 1080", "fp32", False)
    assert peak is None
    assert reason == Finding(
        code="peak.not_in_table", figures={"device": "NVIDIA GeForce GTX 1080"}
    )


def test_peak_tflops_dtype_not_in_table() -> None:
    peak, reason = peak_tflops("Tesla V100-SXM2-32GB", "bf16", False)
    assert peak is None
    assert reason is not None and reason.code == "peak.no_dtype"
    assert reason.figures["dtype"] == "bf16"
    assert say(reason).startswith("no bf16 peak known for Tesla V100-SXM2-32GB (read as ")


@pytest.mark.parametrize(
    ("name", "wrong"),
    [("NVIDIA L40", 121.0), ("NVIDIA RTX A1000 6GB Laptop GPU", 312.0)],
)
def test_peak_tflops_does_not_match_a_different_gpu(name: str, wrong: float) -> None:
    peak, _ = peak_tflops(name, "bf16", False)
    assert peak != wrong
