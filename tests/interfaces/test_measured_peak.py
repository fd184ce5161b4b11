"""MFU against the node's measured peak: the rank finds its host's newest `validate --level
perf` report, the cell's peak is the mean over ranks, an MFU above 100 % of either peak is
never a figure, and a real CPU cell on a node with a saved report carries mfu_measured =
achieved / measured peak."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from torchscale.api import run_benchmark
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.validate_report import ValidateReport
from torchscale.contracts.wording import say
from torchscale.offline.analysis.uncertainty import mfu_estimate
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.documents import read_validate_report
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.rank.worker.measured_peak import (
    MeasuredPeak,
    cell_measured_peak,
    guarded_mfu,
    read_measured_peak,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _report(path: Path, host: str, created: str, peaks: dict[str, float], level: str) -> None:
    """A whole validate report (the rank reads it through the one reader, so it must be one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    report = ValidateReport(
        torchscale_version="0",
        created_at=created,
        hostname=host,
        device="cuda",
        quick=True,
        ok=True,
        counts={},
        verdict_basis=Finding(code="validate.ready", figures={"quick": True, "path": "GPU"}),
        checks=[],
        level=level,  # type: ignore[arg-type]
        measured_peaks=peaks,
    )
    path.write_text(report.model_dump_json())


def test_the_rank_reads_the_peak_the_validate_reports_reader_gives() -> None:
    """One reader: the peak a rank takes from a kept report is the one
    offline/results/documents.py reads from it (never a second parse of the JSON)."""
    folder = FIXTURES / "validate_perf"
    report = read_validate_report(folder / "gpu-node-7.perf.json").doc
    assert report is not None and report.measured_peaks["bf16"] == pytest.approx(736.85)
    peak = read_measured_peak([str(folder)], "gpu-node-7", "bf16")
    assert peak.tflops == report.measured_peaks["bf16"]
    assert peak.basis is not None
    said = say(peak.basis)
    assert said.startswith("measured by `torchscale validate` on ") and ": bf16 (" in said
    assert report.created_at in said


def test_a_file_that_is_no_validate_report_gives_no_peak(tmp_path: Path) -> None:
    """What the reader refuses (another kind, a newer schema) is never taken for a peak."""
    newer = {"kind": "torchscale.validate", "schema_version": 99, "measured_peaks": {"bf16": 9.0}}
    (tmp_path / "gpu1.perf.json").write_text(json.dumps(newer))
    assert read_measured_peak([str(tmp_path)], "gpu1", "bf16").tflops is None


def test_the_newest_report_of_this_host_gives_the_dtypes_peak(tmp_path: Path) -> None:
    own, default = tmp_path / "exp" / "acceptance", tmp_path / "standalone" / "acceptance"
    _report(own / "gpu1.perf.json", "gpu1", "2026-11-01T00:00:00+00:00", {"bf16": 700.0}, "perf")
    _report(
        default / "gpu1.burn.json", "gpu1", "2026-11-20T00:00:00+00:00", {"bf16": 780.0}, "burn"
    )
    _report(own / "gpu2.perf.json", "gpu2", "2026-11-21T00:00:00+00:00", {"bf16": 1.0}, "perf")
    peak = read_measured_peak([str(own), str(default)], "gpu1", "bf16")
    assert peak.tflops == 780.0 and peak.basis is not None
    assert "2026-11-20" in say(peak.basis) and "gpu1.burn.json" in say(peak.basis)
    missing_dtype = read_measured_peak([str(own)], "gpu1", "fp8")
    assert missing_dtype.tflops is None and missing_dtype.why == Finding(
        code="peak.dtype_not_measured",
        figures={"dtype": "fp8", "host": "gpu1", "path": str(own / "gpu1.perf.json")},
    )
    assert "no measured fp8 peak for host gpu1" in say(missing_dtype.why)
    nothing = read_measured_peak([str(own)], "gpu9", "bf16")
    assert nothing.tflops is None and nothing.why == Finding(
        code="peak.not_measured", figures={"host": "gpu9"}
    )
    assert "validate --level perf" in say(nothing.why)
    (own / "gpu3.perf.json").write_text("{torn")
    assert read_measured_peak([str(own)], "gpu3", "bf16").tflops is None  # never a crash


def test_the_cells_peak_is_the_mean_over_ranks_and_needs_every_rank() -> None:
    def node(host: str) -> Finding:
        report = {"host": host, "created_at": "2026-11-20", "dtype": "bf16", "path": host}
        return Finding(code="peak.measured", figures={"reports": [report]})

    a, b = MeasuredPeak(780.0, node("a")), MeasuredPeak(760.0, node("b"))
    both = cell_measured_peak([a, a, b, b])
    assert both.tflops == 770.0 and both.basis is not None
    assert say(both.basis) == (
        "mean over 4 ranks: measured by `torchscale validate` on a at 2026-11-20: bf16 (a); "
        "measured by `torchscale validate` on b at 2026-11-20: bf16 (b)"
    )
    missing = Finding(code="peak.not_measured", figures={"host": "b"})
    gap = cell_measured_peak([a, MeasuredPeak(None, None, missing)])
    assert gap.tflops is None and gap.why == missing


def test_an_mfu_above_100_percent_of_either_peak_is_not_a_figure() -> None:
    assert guarded_mfu(400.0, 800.0, "measured") == (0.5, None)
    assert guarded_mfu(800.0, 800.0, "measured") == (1.0, None)
    mfu, why = guarded_mfu(900.0, 800.0, "spec-sheet")
    assert mfu is None and why == Finding(
        code="peak.mfu_above_peak", figures={"mfu": 1.125, "which": "spec-sheet"}
    )
    assert "above 100 % of the spec-sheet peak (1.12)" in say(why)
    assert guarded_mfu(None, 800.0, "measured") == (None, None)


@pytest.mark.slow  # a real torchrun cell
def test_a_real_cpu_cell_reports_mfu_against_its_nodes_measured_peak(tmp_path: Path) -> None:
    """The CPU has no spec sheet, so no spec MFU; the measured peak makes one."""
    peak = 0.05  # TFLOP/s: a tiny MLP's achieved figure is far below any real matmul peak
    report = ResultLayout(tmp_path / "standalone").acceptance_path(socket.gethostname(), "perf")
    _report(report, socket.gethostname(), "2026-11-23T00:00:00+00:00", {"fp32": peak}, "perf")
    config = BenchConfig.model_validate(
        {
            "experiment_name": "mfu",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [1],
            "device": "cpu",
            "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
        }
    )
    run = run_benchmark(config, tmp_path)
    (result,) = run.sweep.results
    compute = result.compute
    assert compute is not None and compute.achieved_tflops_per_device is not None
    assert compute.mfu is None  # no spec sheet for a CPU
    assert compute.measured_peak_tflops_per_device == peak
    assert compute.mfu_measured is not None and 0 < compute.mfu_measured < 1
    assert abs(compute.mfu_measured - compute.achieved_tflops_per_device / peak) < 1e-12
    assert compute.measured_peak_basis is not None
    assert compute.measured_peak_basis.figures["reports"][0]["path"] == str(report)
    assert mfu_estimate(result, measured=True) is not None
    from torchscale.interfaces.report.build import ReportOptions, build_report
    from torchscale.interfaces.report.model import Table
    from torchscale.interfaces.report.sources import read_sources

    report = build_report(read_sources(tmp_path / "mfu"), ReportOptions())
    tables = [b for s in report.sections for b in s.blocks if isinstance(b, Table)]
    compute_table = next(t for t in tables if t.id == "efficiency-compute")
    assert "mfu_measured" in [c.key for c in compute_table.columns]
    assert compute_table.rows[0]["mfu_measured"] == compute.mfu_measured
