"""What a GPU of a given SKU should do, with the source of every figure, and the thresholds
`validate --level perf` judges a measured figure by (docs/validate.md, 'The SKU reference and the
thresholds'). One rule for every SKU: a matmul figure is judged against what a *healthy GPU of
that SKU reaches with this search* (rank/programs/matmul_peak.py), with how many runs it rests on
and where they are kept; where no such run exists, against the *spec sheet* at a stated lower
fraction (nobody reaches a sheet, and a figure well above it is a measurement bug). Another
search's best (MAMF's 792 on an H100) is not this search's healthy figure: judged against it, a
healthy H100 read WARN. An unknown SKU (or a CPU) has no expected value: INFO. Device names are
matched as contracts/gpu_peaks.py matches them (whole tokens, variants before the plain name,
first match wins); where no source could be cited, the figure is left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_peaks import MIG, lookup
from torchscale.orchestration.validate.check_result import CheckStatus

Kind = Literal["spec", "healthy"]


@dataclass(frozen=True)
class Expected:
    """An expected figure: its kind, where it comes from, and (healthy) how many runs it rests
    on."""

    value: float
    kind: Kind
    source: str
    runs: int | None = None


@dataclass(frozen=True)
class Thresholds:
    """PASS at ratio >= pass_at, WARN at >= warn_at, else FAIL; and why these numbers."""

    pass_at: float
    warn_at: float
    why: str


# Above a spec sheet by more than this is impossible (NVIDIA's rounding and boost slack aside)
ABOVE_SPEC = 1.05
# A healthy GPU repeats this search's figure within a few percent: the H100's own probes from
# 6,144 to 16,384 read 686-708 bf16, an H200 (same die and clocks, not used to set the figure)
# 686, 97 %. 10 % below is outside that and 20 % below is broken: the same bars a GPU is
# weighed by against its peers (node_peers reads them from here), so one GPU alone and a GPU
# among peers read alike
HEALTHY = Thresholds(0.90, 0.80, "a healthy GPU repeats this search's figure within a few %")
# by check family, for a spec-sheet expected value
SPEC_THRESHOLDS: dict[str, Thresholds] = {
    "matmul": Thresholds(
        0.60, 0.45, "the best matmuls reach 60-80 % of the sheet (MAMF: H100 SXM bf16 80 %)"
    ),
    "memory": Thresholds(
        0.75, 0.60, "STREAM-like kernels reach ~85-92 % of HBM's sheet rate on H100/A100"
    ),
    "host": Thresholds(
        0.70, 0.50, "pinned copies reach ~80-85 % of PCIe x16's rate after protocol overhead"
    ),
    "p2p": Thresholds(
        0.70, 0.50, "one copy between NVLink peers reaches ~80 % of the per-direction rate"
    ),
    "busbw": Thresholds(
        0.60, 0.40, "NCCL's busbw at 256 MiB reaches ~70-90 % of NVLink's per-direction rate"
    ),
}
# busbw may exceed NVLink's per-direction rate: NVLink SHARP reduces inside the switch
NO_ABOVE_SPEC_GUARD = ("busbw",)

H100_SHEET = "https://www.nvidia.com/en-us/data-center/h100/"
H200_SHEET = "https://www.nvidia.com/en-us/data-center/h200/"
A100_SHEET = (
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
L40S_SHEET = "https://www.nvidia.com/en-us/data-center/l40s/"
L4_SHEET = "https://www.nvidia.com/en-us/data-center/l4/"
MI300X_SHEET = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
# What torchscale's own matmul search (rank/programs/matmul_peak.py) read on healthy GPUs of a
# SKU, per dtype: (TFLOP/s, runs, where the runs are kept). The H100 SXM's: the second H100 run
# (tests/fixtures/h100_second_run/perf.out.txt, 2026-11-26), the one whose output is kept (the
# first run's perf printed nothing and kept nothing). The H200 SXM has the same GH100 die, SM
# count and clocks (the same 989 TFLOP/s sheet): it is judged by the H100 SXM's figures, so its
# own readings test the rule
H100_SEARCH = "torchscale's matmul search on a healthy H100 SXM (tests/fixtures/h100_second_run)"
HOPPER_SXM_HEALTHY: dict[str, tuple[float, int, str]] = {
    "bf16": (708.0, 1, H100_SEARCH + ", 2026-11-26"),
    "fp16": (684.5, 1, H100_SEARCH + ", 2026-11-26"),
    "tf32": (363.3, 1, H100_SEARCH + ", 2026-11-26"),
    "fp32": (51.64, 1, H100_SEARCH + ", 2026-11-26"),
    "fp8": (1289.0, 1, H100_SEARCH + ", 2026-11-26"),
}


@dataclass(frozen=True)
class Sku:
    """One SKU's non-matmul figures (GB/s) and what this search reads on a healthy GPU of it
    (dtype -> TFLOP/s, runs, source); a dtype without: judged against the spec sheet."""

    model: str
    pattern: str  # searched in the device name
    hbm_gbps: float
    pcie_gbps: float  # per direction
    nvlink_gbps: float | None  # per direction, per GPU; None: no NVLink
    source: str
    sheet_text: str
    healthy_tflops: dict[str, tuple[float, int, str]] = field(default_factory=dict)


# PCIe per direction: Gen5 x16 64 GB/s, Gen4 x16 32 GB/s (the sheets print both directions
# together: 128 and 64 GB/s). NVLink per direction: half the sheet's bidirectional total.
SKUS: tuple[Sku, ...] = (
    Sku("H100 PCIe", r"(?i)\bH100\b.*\bPCIe\b", 2000.0, 64.0, None, H100_SHEET,
        "H100 PCIe: 2 TB/s HBM2e, PCIe Gen5 128 GB/s"),
    Sku("H100 NVL", r"\bH100\b.*\bNVL\b", 3900.0, 64.0, 300.0, H100_SHEET,
        "H100 NVL: 3.9 TB/s HBM3, NVLink 600 GB/s, PCIe Gen5 128 GB/s"),
    Sku("H100 SXM", r"\bH100\b", 3350.0, 64.0, 450.0, H100_SHEET,
        "H100 SXM: 3.35 TB/s HBM3, NVLink 900 GB/s, PCIe Gen5 128 GB/s", HOPPER_SXM_HEALTHY),
    Sku("H200 SXM", r"\bH200\b(?!.*\bNVL\b)", 4800.0, 64.0, 450.0, H200_SHEET,
        "H200 SXM: 4.8 TB/s HBM3e, NVLink 900 GB/s, PCIe Gen5 128 GB/s", HOPPER_SXM_HEALTHY),
    Sku("A100 PCIe 80GB", r"(?i)\bA100\b.*\bPCIe\b.*80|\bA100\b.*80GB.*\bPCIe\b", 1935.0,
        32.0, None, A100_SHEET, "A100 80GB PCIe: 1,935 GB/s HBM2e, PCIe Gen4 64 GB/s"),
    Sku("A100 PCIe 40GB", r"(?i)\bA100\b.*\bPCIe\b", 1555.0, 32.0, None, A100_SHEET,
        "A100 40GB PCIe: 1,555 GB/s HBM2, PCIe Gen4 64 GB/s"),
    Sku("A100 SXM4 80GB", r"\bA100\b.*SXM.*80", 2039.0, 32.0, 300.0, A100_SHEET,
        "A100 80GB SXM: 2,039 GB/s HBM2e, NVLink 600 GB/s, PCIe Gen4 64 GB/s"),
    Sku("A100 40GB", r"\bA100\b", 1555.0, 32.0, 300.0, A100_SHEET,
        "A100 40GB: 1,555 GB/s HBM2, NVLink 600 GB/s (SXM), PCIe Gen4 64 GB/s"),
    Sku("L40S", r"\bL40S\b", 864.0, 32.0, None, L40S_SHEET,
        "L40S: 864 GB/s GDDR6, PCIe Gen4 x16 64 GB/s"),
    Sku("L4", r"\bL4\b", 300.0, 32.0, None, L4_SHEET, "L4: 300 GB/s GDDR6, PCIe Gen4 x16 64 GB/s"),
    Sku("MI300X", r"\bMI300X\b", 5300.0, 64.0, None, MI300X_SHEET,
        "MI300X: 5.3 TB/s HBM3, PCIe Gen5 x16 128 GB/s"),
)  # fmt: skip


def _match(device_name: str) -> Sku | None:
    if MIG.search(device_name):
        return None  # a MIG slice has a share of the GPU: no SKU figure applies
    return next((sku for sku in SKUS if re.search(sku.pattern, device_name)), None)


def sku_for(device_name: str) -> str | None:
    """The SKU a device name is judged as (its reference figures), or None."""
    sku = _match(device_name)
    if sku is not None:
        return sku.model
    row = None if MIG.search(device_name) else lookup(device_name)
    return row.model if row is not None else None


def expected_for(device_name: str, check: str) -> Expected | None:
    """The expected value of `check` for this device, with its source; None: no reference."""
    sku = _match(device_name)
    if check.startswith("matmul."):
        dtype = check.removeprefix("matmul.")
        if sku is not None and dtype in sku.healthy_tflops:
            value, runs, source = sku.healthy_tflops[dtype]
            return Expected(value, "healthy", source, runs)
        row = None if MIG.search(device_name) else lookup(device_name)
        if row is None or dtype not in row.tflops:
            return None
        return Expected(row.tflops[dtype], "spec", f"{row.source}: {row.model} dense {dtype} peak")
    if sku is None:
        return None
    cite = f"{sku.source} ({sku.sheet_text})"
    if check in ("memory.copy", "memory.triad"):
        return Expected(sku.hbm_gbps, "spec", cite)
    if check in ("h2d", "d2h"):
        return Expected(sku.pcie_gbps, "spec", cite + "; per direction")
    if check == "p2p.bw" or check.startswith("busbw."):
        if sku.nvlink_gbps is None:
            return None  # PCIe peers: depends on the host's topology, no sheet figure
        return Expected(sku.nvlink_gbps, "spec", cite + "; NVLink per direction")
    return None  # latency: no sourced figure


def _family(check: str) -> str:
    return "host" if check.startswith(("h2d", "d2h")) else check.split(".")[0]


def thresholds_for(check: str, expected: Expected) -> Thresholds:
    if expected.kind == "healthy":
        return HEALTHY
    return SPEC_THRESHOLDS.get(_family(check), SPEC_THRESHOLDS["matmul"])


def judge(
    check: str, value: float | None, expected: Expected | None, *, higher_is_better: bool = True
) -> tuple[CheckStatus, float | None, Finding]:
    """(verdict, value / expected, the finding it rests on). A value and no reference: INFO."""
    if value is None:
        return CheckStatus.SKIP, None, Finding(code="perf.not_measured")
    if expected is None or expected.value <= 0:
        return CheckStatus.INFO, None, Finding(code="perf.no_reference")
    ratio = value / expected.value if higher_is_better else expected.value / value
    figures: dict[str, object] = {"ratio": ratio, "expected": expected.value}
    figures |= {"kind": expected.kind, "runs": expected.runs}
    if expected.kind == "spec" and ratio > ABOVE_SPEC and _family(check) not in NO_ABOVE_SPEC_GUARD:
        return CheckStatus.FAIL, ratio, Finding(code="perf.above_spec", figures=figures)
    limits = thresholds_for(check, expected)
    status = CheckStatus.FAIL
    if ratio >= limits.warn_at:
        status = CheckStatus.PASS if ratio >= limits.pass_at else CheckStatus.WARN
    figures |= {"pass_at": limits.pass_at, "fail_below": limits.warn_at}
    return status, ratio, Finding(code=f"perf.{status.value.lower()}", figures=figures)
