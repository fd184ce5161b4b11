"""Peak dense FLOP/s per GPU model and dtype, for MFU. Unknown GPU, MIG slice or CPU: no MFU,
with the reason: a guessed peak is the classic source of MFU above 100%.

Figures are the vendors' dense (no sparsity) tensor-core peaks for the SXM/PCIe/NVL variant
named (half the datasheets' "with sparsity" figures); fp32 is the non-tensor-core peak, tf32
applies when the kernels doing the model's FLOPs may use TF32 (see `cell_peak`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

# (pattern matched against torch.cuda.get_device_name(), {dtype: TFLOP/s}); whole model tokens
# only ("L4" must not match "L40", "A100" not "RTX A1000"); first match wins, so variants come
# before the plain name.
_PEAKS: tuple[tuple[str, dict[str, float]], ...] = (
    (r"\bH100\b.*\bPCIe\b", {"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    # H100 NVL and H200 NVL datasheets: BF16/FP16 1,671, TF32 835 (with sparsity), FP32 60
    (r"\bH100\b.*\bNVL\b", {"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0}),
    (r"\bH100\b", {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),  # SXM
    (r"\bH200\b.*\bNVL\b", {"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0}),
    (r"\bH200\b", {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),  # SXM
    (r"\bB200\b", {"bf16": 2250.0, "fp16": 2250.0, "tf32": 1100.0, "fp32": 80.0}),
    (r"\bA100\b", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    (r"\bL40S\b", {"bf16": 362.0, "fp16": 362.0, "tf32": 183.0, "fp32": 91.6}),
    (r"\bL4\b", {"bf16": 121.0, "fp16": 121.0, "tf32": 60.0, "fp32": 30.3}),
    (r"\bA10\b", {"bf16": 125.0, "fp16": 125.0, "tf32": 62.5, "fp32": 31.2}),
    (r"\bV100\b", {"fp16": 125.0, "fp32": 15.7}),  # no TF32 or bf16 units
)
PEAK_TFLOPS: tuple[tuple[re.Pattern[str], dict[str, float]], ...] = tuple(
    (re.compile(pattern), peaks) for pattern, peaks in _PEAKS
)
# A MIG instance has a fraction of the GPU's SMs; its name still carries the full GPU's model
# ("NVIDIA A100-SXM4-40GB MIG 1g.5gb"), so the table would give the whole GPU's peak.
MIG = re.compile(r"\bMIG\b")

PRECISION_DTYPE = {"fp32": "fp32", "amp": "fp16", "bf16": "bf16"}


def peak_tflops(device_name: str, precision: str, tf32: bool) -> tuple[float | None, str | None]:
    """(peak TFLOP/s, None) or (None, why not); `tf32`: fp32 FLOPs may run on TF32 units."""
    if MIG.search(device_name):
        return None, (
            f"'{device_name}' is a MIG slice: its share of the GPU's peak FLOP/s is not in "
            "the table, so no MFU"
        )
    dtype = PRECISION_DTYPE[precision]
    if dtype == "fp32" and tf32:
        dtype = "tf32"
    for pattern, peaks in PEAK_TFLOPS:
        if pattern.search(device_name):
            if dtype == "tf32" and "tf32" not in peaks:
                dtype = "fp32"  # no TF32 units: matmuls run in fp32
            if dtype in peaks:
                return peaks[dtype], None
            return None, f"no {dtype} peak known for {device_name}"
    return None, f"no peak FLOP/s table entry for '{device_name}'"


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
    note: str | None  # why tflops is None
    basis: str | None  # which peak was used and why


def _fp32_precision(read: Callable[[], object]) -> str | None:
    """A `fp32_precision` setting of torch >= 2.9 ('ieee', 'tf32', 'none'); None if absent."""
    try:
        value = read()
    except (AttributeError, RuntimeError):
        return None
    return value if isinstance(value, str) else None


def _legacy_flag(read: Callable[[], object]) -> bool | None:
    """A legacy `allow_tf32` flag; torch >= 2.9 raises when the new API set TF32 instead."""
    try:
        return bool(read())
    except RuntimeError:
        return None


def _value(flag: bool | None) -> str:
    return "" if flag is None else f"={flag}"


def read_tf32_settings() -> Tf32Settings:
    """Read torch's TF32 settings in this process, new API first.

    In torch 2.13 the new per-op setting (`torch.backends.cuda.matmul.fp32_precision`,
    `torch.backends.cudnn.conv.fp32_precision`) says 'tf32' or 'ieee' once anything set it;
    'none' means unset, and the legacy flag (`allow_tf32`, also moved by
    `torch.set_float32_matmul_precision`) then decides. Reading the legacy flag after the new
    API was used raises, hence this order. TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32 for
    cuBLAS whatever the flags say.
    """
    matmul: bool | None
    new = _fp32_precision(lambda: torch.backends.cuda.matmul.fp32_precision)
    if os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":
        matmul, matmul_source = True, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"
    elif new in ("tf32", "ieee"):
        matmul = new == "tf32"
        matmul_source = f"torch.backends.cuda.matmul.fp32_precision='{new}'"
    else:
        matmul = _legacy_flag(lambda: torch.backends.cuda.matmul.allow_tf32)
        matmul_source = "torch.backends.cuda.matmul.allow_tf32" + _value(matmul)
    conv: bool | None
    conv_module = getattr(torch.backends.cudnn, "conv", None)
    new = _fp32_precision(lambda: conv_module.fp32_precision) if conv_module else None
    if new in ("tf32", "ieee"):
        conv = new == "tf32"
        conv_source = f"torch.backends.cudnn.conv.fp32_precision='{new}'"
    else:
        conv = _legacy_flag(lambda: torch.backends.cudnn.allow_tf32)
        conv_source = "torch.backends.cudnn.allow_tf32" + _value(conv)
    return Tf32Settings(matmul, conv, matmul_source, conv_source)


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
    why = ""
    if precision == "fp32":
        deciding = [(tf32.matmul, tf32.matmul_source, "cuBLAS matmuls")]
        if conv_net:
            deciding.insert(0, (tf32.conv, tf32.conv_source, "cuDNN convolutions"))
        unknown = [source for value, source, _ in deciding if value is None]
        if unknown:
            return Peak(
                None,
                f"cannot tell whether fp32 kernels may use TF32 ({', '.join(unknown)} "
                "unreadable), so which peak applies is unknown",
                None,
            )
        allowed = [(source, what) for value, source, what in deciding if value]
        tf32_on = bool(allowed)
        if allowed:
            why = "; ".join(f"{what} may use TF32: {source}" for source, what in allowed)
        else:
            why = "no TF32: " + ", ".join(source for _, source, _ in deciding)
    tflops, note = peak_tflops(device_name, precision, tf32_on)
    if tflops is None:
        return Peak(None, note, None)
    dtype = PRECISION_DTYPE[precision]
    if dtype == "fp32" and tf32_on:
        dtype = "tf32" if _has_tf32(device_name) else "fp32"
        if dtype == "fp32":
            why += "; no TF32 units on this GPU"
    basis = f"{device_name}: {dtype} dense peak {tflops:g} TFLOP/s"
    if why:
        basis += f" ({why})"
    return Peak(tflops, None, basis)


def _has_tf32(device_name: str) -> bool:
    for pattern, peaks in PEAK_TFLOPS:
        if pattern.search(device_name):
            return "tf32" in peaks
    return False
