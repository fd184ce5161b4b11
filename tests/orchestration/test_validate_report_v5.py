"""A validate report holds codes and figures, not sentences: they are worded when shown."""

from __future__ import annotations

from torchscale.contracts.schema.perf import BandwidthResult, PeakResult, PerfRun, RankPerf
from torchscale.contracts.wording import validate_measured as shown
from torchscale.orchestration.validate.perf import judge_perf, perf_checks

H100 = "NVIDIA H100 80GB HBM3"


def _rank(rank: int, bf16: float) -> RankPerf:
    peaks = [PeakResult(dtype="bf16", device=f"cuda:{rank}", device_name=H100, best_tflops=bf16)]
    triad = BandwidthResult(check="memory.triad", device=f"cuda:{rank}", gbps=2990.0 + rank)
    return RankPerf(
        rank=rank, device=f"cuda:{rank}", device_name=H100, matmul=peaks, bandwidth=[triad]
    )


def test_a_perf_report_stores_no_sentence() -> None:
    rows = judge_perf(PerfRun(world_size=2, ranks=[_rank(0, 771.0), _rank(1, 702.0)]), "cuda")
    checks = perf_checks(rows, "GPU")
    stored = [c.model_dump(mode="json") for c in checks] + [m.model_dump(mode="json") for m in rows]
    assert all(not {"detail", "hint", "said", "said_fix"} & set(s) for s in stored)
    assert all(m.finding is not None for m in rows) and all(c.findings for c in checks)
    triad = next(c for c in checks if c.id == "perf_memory_triad")
    assert shown.detail(triad).startswith("2 GPUs, 2,990 GB/s to 2,991 GB/s (median 2,990 GB/s)")
