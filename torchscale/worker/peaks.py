"""Peak dense FLOP/s per GPU model and dtype, for MFU. Unknown GPU or CPU: no MFU, with the
reason: a guessed peak is the classic source of MFU above 100%.

Figures are the vendors' dense (no sparsity) tensor-core peaks for the SXM/PCIe variant named;
fp32 is the non-tensor-core peak, tf32 applies when matmuls are allowed to use TF32.
"""

from __future__ import annotations

# (substring of torch.cuda.get_device_name(), {dtype: TFLOP/s}); first match wins, so more
# specific names come first.
PEAK_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    ("H100", {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),  # SXM
    ("H200", {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),
    ("B200", {"bf16": 2250.0, "fp16": 2250.0, "tf32": 1100.0, "fp32": 80.0}),
    ("A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("L40S", {"bf16": 362.0, "fp16": 362.0, "tf32": 183.0, "fp32": 91.6}),
    ("L4", {"bf16": 121.0, "fp16": 121.0, "tf32": 60.0, "fp32": 30.3}),
    ("A10", {"bf16": 125.0, "fp16": 125.0, "tf32": 62.5, "fp32": 31.2}),
    ("V100", {"fp16": 125.0, "fp32": 15.7}),
)

PRECISION_DTYPE = {"fp32": "fp32", "amp": "fp16", "bf16": "bf16"}


def peak_tflops(device_name: str, precision: str, tf32: bool) -> tuple[float | None, str | None]:
    """(peak TFLOP/s, None) or (None, why not)."""
    dtype = PRECISION_DTYPE[precision]
    if dtype == "fp32" and tf32:
        dtype = "tf32"
    for key, peaks in PEAK_TFLOPS:
        if key in device_name:
            if dtype in peaks:
                return peaks[dtype], None
            return None, f"no {dtype} peak known for {device_name}"
    return None, f"no peak FLOP/s table entry for '{device_name}'"
