"""The report's "Memory and input pipeline" section: the max-batch searches stored beside the
cells, the data wait of cells fed from disk, and the input-bound finding; absent for a sweep of
synthetic data without a search."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.max_batch import MaxBatchProbe, MaxBatchResult
from torchscale.interfaces.api.report_generate import renderer
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Report, Table
from torchscale.interfaces.report.sources import read_sources

V3_SWEEP = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture"
GENERATED_AT = "2026-01-01T00:00:00Z"
HOSTILE = "<script>alert(1)</script>"


def build(root: Path) -> Report:
    return build_report(read_sources(root), ReportOptions(generated_at=GENERATED_AT))


def table(report: Report, table_id: str) -> Table:
    section = report.section("memory")
    assert section is not None, "no memory section"
    return next(b for b in section.blocks if isinstance(b, Table) and b.id == table_id)


def search_result(max_batch: int | None, limit_reached: bool = False) -> MaxBatchResult:
    probes = [
        MaxBatchProbe(batch=b, phase="double", outcome=o, seconds=2.0)
        for b, o in ((1, "fits"), (2, "fits"), (4, "oom"), (3, "oom"))
    ]
    return MaxBatchResult(
        group=f"tiny-mlp__w1__fp32__ddp__cpu__{max_batch}",
        definition_sha256="0" * 64,
        model="tiny-mlp",
        label="tiny-mlp",
        world_size=1,
        precision="fp32",
        strategy="ddp",
        device="cpu",
        backend="gloo",
        status="ok",
        max_batch=max_batch,
        limit=16,
        limit_reached=limit_reached,
        largest_fit=max_batch,
        start=1,
        probe_steps=2,
        probes=probes,
        peak_bytes=123_456_789,
        peak_basis="rss",
        peak_allocated_bytes=None,
        peak_reserved_bytes=None,
        peak_rss_bytes=123_456_789,
        device_total_bytes=None,
        memory_utilisation=None,
        warnings=[  # a figure that would be markup, to prove the renderer escapes it
            Finding(
                code="max_batch.not_monotonic",
                figures={"batch": 4, "where": HOSTILE, "oom_batch": 2},
            )
        ],
        wall_s=8.0,
    )


def with_disk_data(root: Path, share: float) -> None:
    """Every ok cell as if fed from disk with this data-wait share."""
    for cell in (root / "cells").glob("*.json"):
        data = json.loads(cell.read_text(encoding="utf-8"))
        if data.get("status") != "ok":
            continue
        step = data["step_time"]["p50"]
        data["cost"] = None
        data["data"] = {
            "source": "disk",
            "wait_s": share * step,
            "share": share,
            "wait_s_per_rank": [share * step],
            "num_workers": 1,
            "pin_memory": False,
            "prefetch_factor": 2,
            "dir": "/data",
            "dataset_bytes": 2_000_000,
            "samples": 1000,
            "read_bytes_per_s": 5e6,
            "notes": [],
        }
        cell.write_text(json.dumps(data), encoding="utf-8")


def test_no_section_without_a_search_or_a_data_pipeline() -> None:
    assert build(V3_SWEEP).section("memory") is None


def test_max_batch_searches_are_tabled(tmp_path: Path) -> None:
    root = tmp_path / "exp"
    shutil.copytree(V3_SWEEP, root)
    (root / "max_batch").mkdir()
    for result in (search_result(2), search_result(16, limit_reached=True)):
        (root / "max_batch" / f"{result.group}.json").write_text(result.model_dump_json())
    (root / "max_batch" / "torn.json").write_text("{", encoding="utf-8")
    report = build(root)
    rows = table(report, "memory-max-batch").rows
    assert sorted(str(r["max_batch"]) for r in rows) == ["2", ">= 16"]
    assert all(r["probes"] == 4 and r["utilisation"] is None for r in rows)
    assert any("torn.json" in s.path for s in report.skipped)  # a bad file: skipped, said so
    html = renderer("html")(report).decode("utf-8")
    assert HOSTILE not in html and "&lt;script&gt;" in html


@pytest.mark.parametrize("share", [0.4, 0.01])
def test_an_input_pipeline_is_tabled(tmp_path: Path, share: float) -> None:
    """Its wait is tabled whatever its size (a finding of it is the diagnosis' own: cells
    without one, as these, get none)."""
    root = tmp_path / "exp"
    shutil.copytree(V3_SWEEP, root)
    with_disk_data(root, share=share)
    report = build(root)
    rows = table(report, "memory-data-wait").rows
    assert rows and all(r["source"] == "disk" and r["share"] == share for r in rows)
    assert all(r["read"] == 5.0 for r in rows)
