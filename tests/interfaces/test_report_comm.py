"""The report's collective-bandwidth section over comm results: a torchscale run and an
nccl-tests import side by side, a one-rank run kept out of the bandwidth chart with the reason,
the pair matrix, and a corrupt comm file left out with its reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import COMM_SCHEMA_VERSION, CommPair, CommResult
from torchscale.contracts.wording.comm import ONE_RANK
from torchscale.interfaces.formatting import MAX_LOG_TICKS, thin_ticks
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Chart, Table, Text
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.comm.nccl_footer import average_busbw, summarize, wrong_total
from torchscale.offline.comm.nccl_tests import read_nccl_tests
from torchscale.offline.comm.rows import RankTiming, measured_row
from torchscale.orchestration.comm.sweep_launch import store_result

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nccl_tests"


def _run(ranks: int, run_id: str, pairs: bool = False) -> CommResult:
    rows = [
        measured_row(
            "all_reduce",
            size,
            size // 4,
            "float32",
            [RankTiming(r, "h", 1e-5 * size**0.5 * (1 + r), [1e-6] * 4, 0) for r in range(ranks)],
            4,
            ranks,
        )
        for size in (1024, 65536, 4194304)
    ]
    run = CommResult(
        id=run_id,
        world_size=ranks,
        device="cpu",
        backend="gloo",
        dtype="float32",
        check=True,
        rows=rows,
    )
    run.summaries = summarize(rows, ranks)
    run.avg_busbw_gbps = average_busbw(rows)
    run.wrong_total = wrong_total(rows)
    if ranks == 1:
        run.warnings.append(Finding(code="comm.one_rank"))
    if pairs:
        run.pairs = [CommPair(a=0, b=1, size_bytes=1024, time_us=10.0, bandwidth_gbps=0.1)]
    return run


def _section(tmp_path: Path) -> tuple[list[Chart], list[Table], list[Text]]:
    report = build_report(
        read_sources(tmp_path), ReportOptions(generated_at="2026-01-01T00:00:00Z")
    )
    (section,) = [s for s in report.sections if s.id == "collectives"]
    charts = [b for b in section.blocks if isinstance(b, Chart)]
    tables = [b for b in section.blocks if isinstance(b, Table)]
    texts = [b for b in section.blocks if isinstance(b, Text)]
    return charts, tables, texts


def test_torchscale_and_nccl_tests_side_by_side(tmp_path: Path) -> None:
    experiment = tmp_path / "net"
    store_result(_run(2, "ours", pairs=True), experiment / "comm" / "ours.json")
    imported = read_nccl_tests(FIXTURES / "all_reduce_2gpu.txt")
    store_result(imported, experiment / "comm" / f"{imported.id}.json")
    store_result(_run(1, "single"), experiment / "comm" / "single.json")
    charts, tables, texts = _section(tmp_path)
    busbw = next(c for c in charts if c.id == "collectives-busbw")
    names = [s.name for s in busbw.series]
    assert any("torchscale 2x gloo" in n for n in names)
    assert any("nccl-tests all_reduce_2gpu.txt" in n for n in names)
    assert not any("torchscale 1x" in n for n in names)  # one rank: no bus bandwidth
    assert busbw.y_log and busbw.x_log2 and busbw.x_format == "bytes"
    time_chart = next(c for c in charts if c.id == "collectives-time")
    assert any("torchscale 1x" in s.name for s in time_chart.series)
    (table,) = tables
    single = next(r for r in table.rows if r["ranks"] == 1)
    assert single["avg_busbw"] is None
    ours = next(r for r in table.rows if r["run"] == "torchscale 2x gloo float32")
    assert ours["avg_busbw"] is not None and ours["wrong"] == 0
    heatmap = next(c for c in charts if c.kind == "heatmap")
    assert heatmap.heatmap is not None and heatmap.heatmap.z[0][1] == 0.1
    assert any(t.text.endswith(f": {ONE_RANK}") for t in texts)  # worded when shown


def test_a_corrupt_comm_file_is_left_out_with_its_reason(tmp_path: Path) -> None:
    experiment = tmp_path / "net"
    store_result(_run(2, "ours"), experiment / "comm" / "ours.json")
    broken = {"kind": "torchscale.comm", "schema_version": COMM_SCHEMA_VERSION, "rows": 3}
    (experiment / "comm" / "broken.json").write_text(json.dumps(broken))
    shutil.copy(FIXTURES / "not_nccl.txt", experiment / "comm" / "notes.txt")
    sources = read_sources(tmp_path)
    assert [s.path.endswith("broken.json") for s in sources.skipped] == [True]
    assert "invalid comm result" in sources.skipped[0].reason
    assert len(sources.experiments[0].comm) == 1


def test_log_ticks_are_thinned_keeping_the_largest() -> None:
    ticks = [float(2**k) for k in range(3, 31)]
    kept = thin_ticks(ticks)
    assert len(kept) <= MAX_LOG_TICKS and kept[-1] == ticks[-1]
    assert thin_ticks(ticks[:4]) == ticks[:4]
