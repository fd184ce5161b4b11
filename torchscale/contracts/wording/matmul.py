"""Words for the rank side of `validate --level perf` (rank/programs/matmul_peak.py,
bandwidth.py): why a dtype or a bandwidth was not measured, why a figure has no spec-sheet
bar, why a figure is impossible, and how the matmul search ended."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases, render, say

F = Mapping[str, Any]


def timer_read(seconds: float) -> str:
    """A probe's error when its timer read no time (quoted in the probe as its error)."""
    return render("timer read {seconds!r} s for the loop", {"seconds": seconds})


def _capability(f: F) -> str:
    return str(tuple(f["capability"]))


def _unchecked(f: F) -> str:
    note = f.get("note")
    return "not checked against a spec sheet: " + (
        say(Finding.model_validate(note)) if note else ""
    )


PHRASES: Phrases = {
    "matmul.unknown_dtype": "unknown dtype '{dtype}' (known: {known:list})",
    "matmul.cpu_no_tf32": (
        "TF32 is a tensor-core mode of NVIDIA GPUs (Ampere and later); CPUs have none"
    ),
    "matmul.cpu_no_fp8": (
        "fp8 matmuls are measured only on GPUs with fp8 tensor cores (compute capability >= "
        "8.9); a CPU has no fp8 matmul units to measure"
    ),
    "matmul.device_type": "device type '{type}' is not supported (cpu or cuda)",
    "matmul.rocm_tf32": "TF32 (AMD: XF32) is not measured on ROCm yet",
    "matmul.no_tf32": lambda f: (
        f"compute capability {_capability(f)} has no TF32 tensor cores (needs 8.0)"
    ),
    "matmul.no_bf16": "{device} does not support bf16 matmuls",
    "matmul.rocm_fp8": "fp8 (e4m3fnuz on MI300) is not measured on ROCm yet",
    "matmul.torch_no_fp8": "torch {torch} has no torch._scaled_mm / float8_e4m3fn",
    "matmul.no_fp8": lambda f: (
        f"compute capability {_capability(f)} has no fp8 tensor cores (needs 8.9)"
    ),
    "matmul.fp8_failed": "torch._scaled_mm failed on {device}: {error}",
    "matmul.cpu_no_spec": "no spec-sheet peak for CPUs (contracts/gpu_peaks.py lists GPUs)",
    "matmul.mig_no_spec": "'{name}' is a MIG slice: its share of the GPU's peak is unknown",
    "matmul.no_table_entry": "no peak FLOP/s table entry for '{name}'",
    "matmul.no_dtype_peak": "no {dtype} peak known for {name} (read as {model})",
    "matmul.not_spec_checked": _unchecked,
    "matmul.suspect": lambda f: (
        f"{f['best']:.1f} TFLOP/s at {tuple(f['shape'])} exceeds the {f['dtype']} spec-sheet "
        f"peak {f['spec']:g} TFLOP/s by {f['ratio']:.2f}x (allowed {f['allowed']}x): "
        "physically impossible, so the timing is wrong; no headline"
    ),
    "matmul.cpu_threads": "CPU, {threads} torch threads",
    "matmul.cpu_half_slow": (
        "{dtype} on CPU is slow unless the CPU has native units (AMX, AVX512-BF16/FP16): often "
        "below fp32"
    ),
    "matmul.converged": (
        "converged: the last {last} probes added < {gain:share0} to the best ({probes} probes)"
    ),
    "matmul.budget_reached": "budget {budget_s:g} s reached after {probes} probes",
    "matmul.no_probe": "the budget did not allow a single probe",
    "bandwidth.timer_zero": "the timer read 0 s",
    "bandwidth.cpu_only_torch": "needs a CUDA GPU: torch {torch} is a CPU-only build",
    "bandwidth.too_few_gpus": lambda f: (
        "needs a CUDA GPU: torch sees no CUDA device"
        if f["needed"] == 1
        else f"needs {f['needed']} or more GPUs: this node has {f['count']}"
    ),
}
