"""Peak dense FLOP/s per GPU model and dtype, for MFU. Unknown GPU or CPU: no MFU, with the
reason: a guessed peak is the classic source of MFU above 100%.

Figures are the vendors' dense (no sparsity) tensor-core peaks for the SXM/PCIe variant named;
fp32 is the non-tensor-core peak, tf32 applies when matmuls are allowed to use TF32.
"""

from __future__ import annotations

import re

# (pattern matched against torch.cuda.get_device_name(), {dtype: TFLOP/s}); whole model tokens
# only ("L4" must not match "L40", "A100" not "RTX A1000"); first match wins, so variants come
# before the plain name.
_PEAKS: tuple[tuple[str, dict[str, float]], ...] = (
    (r"\bH100\b.*\bPCIe\b", {"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    (r"\bH100\b.*\bNVL\b", {"bf16": 835.0, "fp16": 835.0, "tf32": 418.0, "fp32": 60.0}),
    (r"\bH100\b", {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),  # SXM
    (r"\bH200\b", {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),
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

PRECISION_DTYPE = {"fp32": "fp32", "amp": "fp16", "bf16": "bf16"}


def peak_tflops(device_name: str, precision: str, tf32: bool) -> tuple[float | None, str | None]:
    """(peak TFLOP/s, None) or (None, why not)."""
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
