"""How a spec-sheet peak is written in an MFU's basis: '989 TFLOP/s', as the sheet gives it."""

from __future__ import annotations


def spec_tflops(tflops: float) -> str:
    """A spec-sheet peak as listed: 989.4 -> '989.4 TFLOP/s', 19.5 -> '19.5 TFLOP/s'."""
    return f"{tflops:g} TFLOP/s"
