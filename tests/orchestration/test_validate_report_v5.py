"""Validate report schema 5: the stored report holds codes and figures, not sentences, and a
version-4 report reads by the same words it stored (a sentence its findings say is turned into
those findings; one with no finding is shown as stored, never edited)."""

from __future__ import annotations

import json
from pathlib import Path

from torchscale.contracts.schema.perf import BandwidthResult, PeakResult, PerfRun, RankPerf
from torchscale.contracts.wording import validate as shown
from torchscale.offline.results.documents import read_validate_report
from torchscale.orchestration.validate.perf import judge_perf, perf_checks

V4 = Path(__file__).parents[1] / "fixtures" / "validate_perf" / "gpu-node-7.perf.json"
H100 = "NVIDIA H100 80GB HBM3"


def test_a_version_4_report_reads_by_the_words_it_stored() -> None:
    stored = json.loads(V4.read_text())
    read = read_validate_report(V4)
    assert read.version == 4 and read.doc is not None and read.doc.schema_version == 5
    report = read.doc
    for before, check in zip(stored["checks"], report.checks, strict=True):
        assert (shown.detail(check), shown.hint(check)) == (before["detail"], before["hint"])
        # a sentence its findings say is gone from the document; the others are kept as stored
        assert check.said == ("" if check.findings else before["detail"])
    for before, row in zip(stored["measurements"], report.measurements, strict=True):
        assert shown.detail(row) == before["detail"]
        assert shown.unavailable(row) == before["unavailable"]
        assert row.said == ("" if row.finding else before["detail"])
    assert [c.findings[0].code for c in report.checks if c.findings] == ["nvlink.links_full"]


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
    assert all("detail" not in s and "hint" not in s and not s["said"] for s in stored)
    assert all(m.finding is not None for m in rows) and all(c.findings for c in checks)
    triad = next(c for c in checks if c.id == "perf_memory_triad")
    assert shown.detail(triad).startswith("2 GPUs, 2,990 GB/s to 2,991 GB/s (median 2,990 GB/s)")
