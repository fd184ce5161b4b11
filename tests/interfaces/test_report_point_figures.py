"""A result that kept only point figures (schema 7 and older), as the report shows it: hand-
made cells from the schema-7 fixture with the edge cases its figures can hold. The report
reads them through today's shape only (the diagnosis an upgrade built at load), so these
check what reaches the reader: a finding not lost, a chart that never draws more than the
step, and a straggler's reason for not being named that fits its case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Chart, Findings, Report, Table, Unavailable
from torchscale.interfaces.report.sources import read_sources

V7 = Path(__file__).parents[1] / "fixtures" / "results_v7" / "cpu_tiny_mlp_ddp_w2.json"


def _cells(root: Path, changes: dict[str, dict[str, Any]]) -> Path:
    """An experiment of schema-7 cells, one per entry: {suffix: {dotted.field: value, or a
    function of the stored value}}."""
    cells = root / "exp" / "cells"
    cells.mkdir(parents=True)
    base = json.loads(V7.read_text())
    for batch, (suffix, change) in enumerate(changes.items(), start=1):
        data = json.loads(json.dumps(base))
        data["cell"]["id"] = f"{data['cell']['id']}_{suffix}"
        data["cell"]["batch_size"] = batch
        for dotted, value in change.items():
            *path, key = dotted.split(".")
            target = data
            for part in path:
                target = target[part]
            target[key] = value(target[key]) if callable(value) else value
        (cells / f"{data['cell']['id']}.json").write_text(json.dumps(data))
    return root


def _report(root: Path) -> Report:
    options = ReportOptions(generated_at="2026-11-22T12:00:00Z")
    return build_report(read_sources(root), options, None)


def _block(report: Report, kind: type[Any], block_id: str) -> Any:
    found = [b for s in report.sections for b in s.blocks if isinstance(b, kind)]
    return next((b for b in found if b.id == block_id), None)


def _unavailable(report: Report) -> dict[str, str]:
    return {
        k: v
        for s in report.sections
        for b in s.blocks
        if isinstance(b, Unavailable)
        for k, v in b.items.items()
    }


def _finding_titles(report: Report) -> list[str]:
    return [
        f.title
        for s in report.sections
        for b in s.blocks
        if isinstance(b, Findings)
        for f in b.findings
    ]


def test_a_data_wait_is_found_without_a_step_split(tmp_path: Path) -> None:
    """One rank, or no no_sync shares (tensor parallel): nothing to split, yet the input
    pipeline waiting 25 % of the step is a finding, as its point figures' rule says."""
    disk = {"data.source": "disk", "data.wait_s": 0.01, "data.share": 0.25}
    root = _cells(
        tmp_path,
        {
            "one": {**disk, "cell.world_size": 1, "ranks": lambda ranks: ranks[:1]},
            "tp": {**disk, "communication": None},
        },
    )
    report = _report(root)
    waits = [t for t in _finding_titles(report) if "input pipeline waits 25.0 %" in t]
    assert len(waits) == 2, _finding_titles(report)
    chart = _block(report, Chart, "efficiency-step-split")
    assert chart is None or not chart.series, "nothing measured to draw"


def test_shares_over_the_step_are_not_drawn(tmp_path: Path) -> None:
    """Exposed 70 % and waiting 50 %: both not measurable with why, and the chart leaves the
    cell out (named in its note) instead of a bar at 120 %; a cell whose shares add up to the
    step is drawn, every bar at most 100 %."""
    root = _cells(
        tmp_path,
        {
            "over": {"communication.comm_overhead": 0.7, "communication.load_imbalance": 0.5},
            "ok": {},
            "half": {"communication.comm_overhead": None},
        },
    )
    report = _report(root)
    rows = {r["cell"]: r for r in _block(report, Table, "efficiency-step-model").rows}
    (over,) = [r for c, r in rows.items() if " b1 " in f" {c} "]
    for name in ("wait_for_peers", "exposed_transfer", "compute"):
        assert over[f"{name}_text"].startswith("not measurable ("), over[f"{name}_text"]
    (why,) = [v for k, v in _unavailable(report).items() if k.endswith(f"({over['cell']})")]
    assert "over 100 %" in why and "0-100" not in why, why
    chart = _block(report, Chart, "efficiency-step-split")
    assert chart is not None
    drawn = chart.series[0].x
    assert [c for c in drawn if " b2 " in f" {c} "] and not [c for c in drawn if " b1 " in f" {c} "]
    assert not [c for c in drawn if " b3 " in f" {c} "], "waiting alone cannot fill the step"
    for i in range(len(drawn)):
        total = sum(s.y[i] or 0.0 for s in chart.series)
        assert total == pytest.approx(1.0)
    assert chart.note is not None and "Left out" in chart.note


@pytest.mark.parametrize(
    ("imbalance", "words", "not_words"),
    [
        (None, "not recorded", "less than"),
        (1.3, "outside 0-100 %", "less than"),
        (0.01, "less than 5 %", "outside"),
    ],
)
def test_an_unnamed_straggler_says_why_in_its_own_case(
    tmp_path: Path, imbalance: float | None, words: str, not_words: str
) -> None:
    """The straggler table gives the reason of the case: the wait not recorded, outside
    0-100 % or below the threshold; never 'less than 5 %' for a wait nobody recorded."""
    root = _cells(tmp_path, {"x": {"communication.load_imbalance": imbalance}})
    table = _block(_report(root), Table, "bottlenecks-straggler-tests")
    assert table is not None
    (row,) = table.rows
    assert words in row["verdict"] and not_words not in row["verdict"], row["verdict"]


def test_the_step_of_point_figures_says_what_it_is(tmp_path: Path) -> None:
    """The split's step is the median synchronised step, without an interval, and says so
    under the column of the diagnoses' mean step."""
    report = _report(_cells(tmp_path, {"x": {}}))
    (row,) = _block(report, Table, "efficiency-step-model").rows
    assert "median synchronised step, no interval" in row["step_text"]
