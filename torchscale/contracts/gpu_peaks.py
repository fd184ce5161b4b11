"""Peak dense FLOP/s per GPU model and dtype, for MFU. Unknown GPU, MIG slice or CPU: no MFU,
with the reason: a guessed peak is the classic source of MFU above 100%. A datasheet, read by the
ranks (MFU), `validate --level perf` and the matmul program alike, so it needs no torch.

Figures are the vendors' dense (no sparsity) peaks for the variant named: NVIDIA's sheets print
"with sparsity" tensor figures, so the dense figure is half of those. fp32 is the peak fp32
matmuls can reach without TF32 (NVIDIA: the non-tensor-core peak; AMD CDNA: the FP32 matrix
peak, which is what rocBLAS SGEMM runs on), tf32 applies when the kernels doing the model's
FLOPs may use TF32 (AMD: XF32; see `cell_peak`). fp8 is recorded for reference: no precision
setting runs the model in fp8 yet. Where a name cannot tell two variants apart, the higher
peak is used, so MFU may read low, never high (beyond NVIDIA's own rounding, under 0.1%).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchscale.contracts.finding import Finding


@dataclass(frozen=True)
class GpuPeaks:
    """One table row: the product it is for, the device names it matches, its dense
    TFLOP/s per dtype and the vendor page the figures come from."""

    model: str
    pattern: re.Pattern[str]
    tflops: dict[str, float]
    source: str


def _row(model: str, pattern: str, source: str, **tflops: float) -> GpuPeaks:
    return GpuPeaks(model, re.compile(pattern), tflops, source)


def _dense(tensor16: float, fp32: float, tf32: float = 0, fp8: float = 0) -> dict[str, float]:
    """A row's peaks: bf16 and fp16 share the 16-bit tensor peak; no tf32 or fp8 units: 0."""
    peaks = {"bf16": tensor16, "fp16": tensor16, "tf32": tf32, "fp32": fp32, "fp8": fp8}
    return {dtype: value for dtype, value in peaks.items() if value}


_NVIDIA = "https://www.nvidia.com/en-us/data-center/"
_AMD = "https://www.amd.com/en/products/accelerators/instinct/"
H100_SHEET = _NVIDIA + "h100/"
H200_SHEET = _NVIDIA + "h200/"
# H100 SXM5 and H200 SXM: the sheets list FP32 67, TF32 989*, BF16/FP16 1,979*, FP8 3,958*
# (* with sparsity; the Hopper whitepaper's dense SXM5 figures are BF16 989.4, TF32 494.7,
# FP32 66.9, https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper). The
# GH200 sheet prints its GPU's dense figures: TF32 494, BF16 990, FP8 1,979, FP32 67, the
# same Hopper GPU and clocks, so the same figures
_HOPPER_SXM = _dense(tensor16=989.0, tf32=494.0, fp32=67.0, fp8=1979.0)
# H100 NVL and H200 NVL: FP32 60, TF32 835*, BF16/FP16 1,671*, FP8 3,341*
_HOPPER_NVL = _dense(tensor16=835.5, tf32=417.5, fp32=60.0, fp8=1670.5)
# MI300X and MI325X (same CDNA 3 compute die, 304 CUs at 2,100 MHz): FP32 vector and matrix
# 163.4, TF32 653.7, FP16/BF16 1,307.4, FP8 2,614.9 (sparsity doubles all but FP32)
_CDNA3_OAM = _dense(tensor16=1307.4, tf32=653.7, fp32=163.4, fp8=2614.9)

# Matched against torch.cuda.get_device_name() (NVML reports the same strings on NVIDIA; ROCm's
# torch reports the HIP marketing name). Whole model tokens only ("L4" must not match "L40",
# "A100" not "RTX A1000", "H200" not "GH200", "B200" not "GB200"); the first match wins, so
# variants come before the plain name. tests/contracts/test_gpu_peaks.py holds real device
# names.
GPU_PEAKS: tuple[GpuPeaks, ...] = (
    # H100 PCIe product brief PB-11133: FP32 51, TF32 756*, BF16/FP16 1,513*, FP8 3,026*
    _row(
        "H100 PCIe",
        r"\bH100\b.*\bPCIe\b",
        "https://www.nvidia.com/content/dam/en-zz/Solutions/gtcs22/data-center/h100/"
        "PB-11133-001_v01.pdf",
        **_dense(tensor16=756.0, tf32=378.0, fp32=51.0, fp8=1513.0),
    ),
    _row("H100 NVL", r"\bH100\b.*\bNVL\b", H100_SHEET, **_HOPPER_NVL),
    _row("H100 SXM", r"\bH100\b", H100_SHEET, **_HOPPER_SXM),
    _row("H200 NVL", r"\bH200\b.*\bNVL\b", H200_SHEET, **_HOPPER_NVL),
    _row("H200 SXM", r"\bH200\b", H200_SHEET, **_HOPPER_SXM),
    _row(
        "GH200 (its Hopper GPU)", r"\bGH200\b", _NVIDIA + "grace-hopper-superchip/", **_HOPPER_SXM
    ),
    # GB200 NVL72 sheet, "HGX B200" per-GPU column: FP32 75, TF32 2.2 PF*, BF16/FP16 4.5 PF*,
    # FP8 9 PF*; the HGX sheet's 8-GPU totals (FP32 600 TF, TF32 18 PF*) give TF32 2.25 PF*
    # per GPU exactly, so dense TF32 1,125
    _row(
        "B200 (HGX)",
        r"\bB200\b",
        _NVIDIA + "hgx/",
        **_dense(tensor16=2250.0, tf32=1125.0, fp32=75.0, fp8=4500.0),
    ),
    # GB200 NVL72 sheet, per Blackwell GPU of a GB200 (a superchip holds two): FP32 80,
    # TF32 2.5 PF*, BF16/FP16 5 PF*, FP8 10 PF*. Clocked above HGX B200, so its own row
    _row(
        "GB200 (per GPU)",
        r"\bGB200\b",
        _NVIDIA + "gb200-nvl72/",
        **_dense(tensor16=2500.0, tf32=1250.0, fp32=80.0, fp8=5000.0),
    ),
    # A100 sheet (SXM and PCIe, 40 and 80 GB alike): FP32 19.5, TF32 156, BF16/FP16 312 dense
    _row("A100", r"\bA100\b", _NVIDIA + "a100/", **_dense(tensor16=312.0, tf32=156.0, fp32=19.5)),
    # L40S sheet: FP32 91.6, TF32 183, BF16/FP16 362.05, FP8 733 dense (362.05 kept as 362)
    _row(
        "L40S",
        r"\bL40S\b",
        _NVIDIA + "l40s/",
        **_dense(tensor16=362.0, tf32=183.0, fp32=91.6, fp8=733.0),
    ),
    # L4 sheet: FP32 30.3, TF32 120*, BF16/FP16 242*, FP8 485*
    _row(
        "L4", r"\bL4\b", _NVIDIA + "l4/", **_dense(tensor16=121.0, tf32=60.0, fp32=30.3, fp8=242.5)
    ),
    # A10 sheet: FP32 31.2, TF32 62.5, BF16/FP16 125 dense
    _row(
        "A10",
        r"\bA10\b",
        _NVIDIA + "products/a10-gpu/",
        **_dense(tensor16=125.0, tf32=62.5, fp32=31.2),
    ),
    # V100 sheet: SXM2 FP32 15.7, tensor 125; PCIe FP32 14, tensor 112 (no TF32 or bf16 units)
    _row("V100 PCIe", r"\bV100\b.*\b(?i:pcie)\b", _NVIDIA + "v100/", fp16=112.0, fp32=14.0),
    _row("V100 SXM2", r"\bV100\b", _NVIDIA + "v100/", fp16=125.0, fp32=15.7),
    # ROCm shows each of an MI250X's two GCDs as its own device, named "AMD Instinct
    # MI250X/MI250" (an MI250 has the same name and ~5% lower peaks: its MFU reads low). The
    # sheet's per-OAM FP32 matrix 95.7, FP16/BF16 383 are halved per GCD; no TF32 or FP8 units
    _row(
        "MI250X (per GCD)",
        r"\bMI250X\b",
        _AMD + "mi200/mi250x.html",
        **_dense(tensor16=191.5, fp32=47.85),
    ),
    _row("MI300X", r"\bMI300X\b", _AMD + "mi300/mi300x.html", **_CDNA3_OAM),
    _row("MI325X", r"\bMI325X\b", _AMD + "mi300/mi325x.html", **_CDNA3_OAM),
)
# A MIG instance has a fraction of the GPU's SMs; its name still carries the full GPU's model
# ("NVIDIA A100-SXM4-40GB MIG 1g.5gb"), so the table would give the whole GPU's peak.
MIG = re.compile(r"\bMIG\b")


def lookup(device_name: str) -> GpuPeaks | None:
    """The table row a device name reads as (first match), or None."""
    return next((row for row in GPU_PEAKS if row.pattern.search(device_name)), None)


PRECISION_DTYPE = {"fp32": "fp32", "amp": "fp16", "bf16": "bf16"}


def peak_tflops(
    device_name: str, precision: str, tf32: bool
) -> tuple[float | None, Finding | None]:
    """(peak TFLOP/s, None) or (None, why not); `tf32`: fp32 FLOPs may run on TF32 units."""
    if MIG.search(device_name):
        return None, Finding(code="peak.mig_slice", figures={"device": device_name})
    dtype = PRECISION_DTYPE[precision]
    if dtype == "fp32" and tf32:
        dtype = "tf32"
    row = lookup(device_name)
    if row is None:
        return None, Finding(code="peak.not_in_table", figures={"device": device_name})
    peaks = row.tflops
    if dtype == "tf32" and "tf32" not in peaks:
        dtype = "fp32"  # no TF32 units: matmuls run in fp32
    if dtype in peaks:
        return peaks[dtype], None
    figures = {"dtype": dtype, "device": device_name, "model": row.model}
    return None, Finding(code="peak.no_dtype", figures=figures)


@dataclass(frozen=True)
class Tf32Settings:
    """Whether fp32 matmuls (cuBLAS) and convolutions (cuDNN) may use TF32; None = unreadable.

    `matmul_source`/`conv_source` name the setting that decided, for the result's peak_basis.
    """

    matmul: bool | None
    conv: bool | None
    matmul_source: str
    conv_source: str


@dataclass(frozen=True)
class Peak:
    """What CellFacts needs: the peak (or None), why there is none, and which one was used."""

    tflops: float | None
    note: Finding | None  # why tflops is None
    basis: Finding | None  # which peak was used and why (peak.spec)


def cell_peak(device_name: str, precision: str, conv_net: bool, tf32: Tf32Settings) -> Peak:
    """The peak MFU divides by, chosen from what actually runs the model's FLOPs.

    fp32 conv nets spend their FLOPs in cuDNN convolutions, which may use TF32 by default
    (torch.backends.cudnn.allow_tf32 is True) even while TF32 matmuls are off: dividing by the
    fp32 peak there inflated MFU up to ~7x. So a conv net gets the TF32 peak when its
    convolutions may use TF32 (or its matmuls may: the head), any other model when its matmuls
    may. Where a setting that decides cannot be read, there is no peak: a guess could inflate
    MFU. bf16/amp use the 16-bit tensor-core peak whatever TF32 says.
    """
    tf32_on = False
    settings: list[dict[str, object]] = []  # each TF32 setting that decided: unit, source, on
    if precision == "fp32":
        deciding = [("matmul", tf32.matmul, tf32.matmul_source)]
        if conv_net:
            deciding.insert(0, ("conv", tf32.conv, tf32.conv_source))
        unknown = [source for _, value, source in deciding if value is None]
        if unknown:
            return Peak(
                None, Finding(code="peak.tf32_unknown", figures={"unreadable": unknown}), None
            )
        settings = [{"unit": u, "source": source, "on": on} for u, on, source in deciding]
        tf32_on = any(value for _, value, _ in deciding)
    tflops, note = peak_tflops(device_name, precision, tf32_on)
    if tflops is None:
        return Peak(None, note, None)
    row = lookup(device_name)
    dtype = PRECISION_DTYPE[precision]
    if dtype == "fp32" and tf32_on:
        dtype = "tf32" if row is not None and "tf32" in row.tflops else "fp32"
    figures = {"device": device_name, "row": row.model if row else None, "dtype": dtype}
    return Peak(tflops, None, Finding(code="peak.spec", figures={**figures, "tf32": settings}))


def tf32_off_warning(
    device_name: str, precision: str, conv_net: bool, tf32: Tf32Settings
) -> dict[str, float] | None:
    """The figures of the cell's warning (`warning.tf32_off`) when its model's FLOPs ran as
    plain fp32 on a GPU with TF32 units (torch leaves TF32 matmuls off by default, which an
    fp32 cell then measures at the far lower fp32 peak); None otherwise, and where a deciding
    setting is unreadable (MFU says so). A conv net whose convolutions may use TF32 (cuDNN's
    default) is not warned."""
    if precision != "fp32" or tf32.matmul is not False or (conv_net and tf32.conv):
        return None
    if MIG.search(device_name):
        return None
    row = lookup(device_name)
    if row is None or "tf32" not in row.tflops or "fp32" not in row.tflops:
        return None
    return {"fp32_tflops": row.tflops["fp32"], "tf32_tflops": row.tflops["tf32"]}
