"""Words for the rank side of `validate --level perf` (rank/programs/matmul_peak.py,
bandwidth.py): why a dtype or a bandwidth was not measured, why a figure has no spec-sheet
bar, why a figure is impossible, and how the matmul search ended."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

F = Mapping[str, Any]


def timer_read(seconds: float) -> str:
    """A probe's error when its timer read no time (quoted in the probe as its error)."""
    return f"timer read {seconds!r} s for the loop"


def _capability(f: F) -> str:
    return str(tuple(f["capability"]))


def _unchecked(f: F) -> str:
    note = f.get("note")
    return "not checked against a spec sheet: " + (
        PHRASES[note["code"]](note["figures"]) if note else ""
    )


PHRASES: dict[str, Callable[[F], str]] = {
    "matmul.unknown_dtype": lambda f: (
        f"unknown dtype '{f['dtype']}' (known: {', '.join(f['known'])})"
    ),
    "matmul.cpu_no_tf32": lambda f: (
        "TF32 is a tensor-core mode of NVIDIA GPUs (Ampere and later); CPUs have none"
    ),
    "matmul.cpu_no_fp8": lambda f: (
        "fp8 matmuls are measured only on GPUs with fp8 tensor cores (compute capability "
        ">= 8.9); a CPU has no fp8 matmul units to measure"
    ),
    "matmul.device_type": lambda f: f"device type '{f['type']}' is not supported (cpu or cuda)",
    "matmul.rocm_tf32": lambda f: "TF32 (AMD: XF32) is not measured on ROCm yet",
    "matmul.no_tf32": lambda f: (
        f"compute capability {_capability(f)} has no TF32 tensor cores (needs 8.0)"
    ),
    "matmul.no_bf16": lambda f: f"{f['device']} does not support bf16 matmuls",
    "matmul.rocm_fp8": lambda f: "fp8 (e4m3fnuz on MI300) is not measured on ROCm yet",
    "matmul.torch_no_fp8": lambda f: f"torch {f['torch']} has no torch._scaled_mm / float8_e4m3fn",
    "matmul.no_fp8": lambda f: (
        f"compute capability {_capability(f)} has no fp8 tensor cores (needs 8.9)"
    ),
    "matmul.fp8_failed": lambda f: f"torch._scaled_mm failed on {f['device']}: {f['error']}",
    "matmul.cpu_no_spec": lambda f: (
        "no spec-sheet peak for CPUs (contracts/gpu_peaks.py lists GPUs)"
    ),
    "matmul.mig_no_spec": lambda f: (
        f"'{f['name']}' is a MIG slice: its share of the GPU's peak is unknown"
    ),
    "matmul.no_table_entry": lambda f: f"no peak FLOP/s table entry for '{f['name']}'",
    "matmul.no_dtype_peak": lambda f: (
        f"no {f['dtype']} peak known for {f['name']} (read as {f['model']})"
    ),
    "matmul.not_spec_checked": _unchecked,
    "matmul.suspect": lambda f: (
        f"{f['best']:.1f} TFLOP/s at {tuple(f['shape'])} exceeds the {f['dtype']} spec-sheet "
        f"peak {f['spec']:g} TFLOP/s by {f['ratio']:.2f}x (allowed {f['allowed']}x): "
        "physically impossible, so the timing is wrong; no headline"
    ),
    "matmul.cpu_threads": lambda f: f"CPU, {f['threads']} torch threads",
    "matmul.cpu_half_slow": lambda f: (
        f"{f['dtype']} on CPU is slow unless the CPU has native units (AMX, AVX512-BF16/FP16):"
        " often below fp32"
    ),
    "matmul.converged": lambda f: (
        f"converged: the last {f['last']} probes added < {f['gain'] * 100:.0f} % "
        f"to the best ({f['probes']} probes)"
    ),
    "matmul.budget_reached": lambda f: (
        f"budget {f['budget_s']:g} s reached after {f['probes']} probes"
    ),
    "matmul.no_probe": lambda f: "the budget did not allow a single probe",
    "bandwidth.timer_zero": lambda f: "the timer read 0 s",
    "bandwidth.cpu_only_torch": lambda f: (
        f"needs a CUDA GPU: torch {f['torch']} is a CPU-only build"
    ),
    "bandwidth.too_few_gpus": lambda f: (
        "needs a CUDA GPU: torch sees no CUDA device"
        if f["needed"] == 1
        else f"needs {f['needed']} or more GPUs: this node has {f['count']}"
    ),
}
