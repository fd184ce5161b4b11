"""The matmul peak finder's own overhead: the shape search (CPU fp32), then its measurement of
the winning shape against a bare `torch.mm` loop of the same shape timed with
time.perf_counter, the two taking turns in the same run (median of the per-round ratios
harness/bare; 1.0 means the harness adds nothing; the search's best alone is the highest of
many noisy probes, so it is no fair side of a ratio). Quick: under 30 s on 2 cores.

    python benchmarks/matmul_peak.py
"""

from __future__ import annotations

import statistics
import time

import torch

from torchscale.rank.programs.matmul_peak import find_peak, matmul_flops, measure_matmul

ROUNDS = 7


def bare_tflops(shape: tuple[int, int, int], seconds: float = 0.3, repeats: int = 3) -> float:
    m, n, k = shape
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.empty(m, n)
    for _ in range(3):
        torch.mm(a, b, out=out)
    rates = []
    for _ in range(repeats):
        iters, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            torch.mm(a, b, out=out)
            iters += 1
        rates.append(matmul_flops(shape) * iters / elapsed / 1e12)
    return statistics.median(rates)


def main() -> None:
    started = time.perf_counter()
    result = find_peak("fp32", "cpu", budget_s=15.0)
    search_s = time.perf_counter() - started
    assert result.best_tflops is not None and result.best_shape is not None
    shape = result.best_shape
    ratios, harness, bare = [], [], []
    for _ in range(ROUNDS):  # taking turns: the machine's load hits both sides alike
        (probe,) = measure_matmul("fp32", [shape], "cpu", min_time_s=0.3)
        assert probe.tflops is not None
        harness.append(probe.tflops)
        bare.append(bare_tflops(shape))
        ratios.append(harness[-1] / bare[-1])
    print(f"device: {result.device_name} ({', '.join(result.notes)})")
    print(f"search: {len(result.probes)} probes in {search_s:.1f} s (budget 15 s)")
    print(f"search best: {result.best_tflops * 1e3:.1f} GFLOP/s at {shape}")
    print(
        f"winning shape, {ROUNDS} rounds in turn: harness median "
        f"{statistics.median(harness) * 1e3:.1f} GFLOP/s, bare torch.mm loop median "
        f"{statistics.median(bare) * 1e3:.1f} GFLOP/s"
    )
    print(
        f"ratio harness/bare: median {statistics.median(ratios):.3f} "
        f"(rounds {min(ratios):.3f} to {max(ratios):.3f})"
    )
    print(f"spec: {result.spec_tflops} ({result.spec_note})")


if __name__ == "__main__":
    main()
