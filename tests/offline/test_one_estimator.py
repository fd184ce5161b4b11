"""One cell's throughput, MFU and step times come from the same windows:
MFU is the throughput's estimate scaled (the same share of it, measurable only where the
throughput is), and where the step percentiles keep their own estimator (a bootstrap over this
run's steps) beside the rate's (where a rerun lands), the surface that shows both says why.
Read on the kept GPU outputs in place: tests/fixtures/h100_second_run, h200_zoo_compiled and the
first H100 run in ../shared (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.h100_replay import H100_DIR, read_cell
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.interfaces.console.cells import cell_lines
from torchscale.interfaces.report.parts.context import (
    first_screen_throughput,
    make_context,
)
from torchscale.interfaces.report.parts.gpu_summary import gpu_phrase, gpu_table
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.results.frame import cell_row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200_ZOO = FIXTURES / "h200_zoo_compiled"
KEPT = [FIXTURES / "h100_second_run", H200_ZOO, H100_DIR]
FIRST_H100_COMPILED = (
    H100_DIR / "workload/runs/compiled/cells/gpt2__b8__w1__bf16__ddp__884cfc44.json"
)


def _kept_cells() -> list[Path]:
    return sorted(p for root in KEPT for p in root.glob("**/cells/*.json"))


def _ratio(row: dict, name: str) -> tuple[float, float]:
    return row[f"{name}_low"] / row[name], row[f"{name}_high"] / row[name]


def test_every_kept_gpu_cells_mfu_interval_is_its_throughputs_scaled() -> None:
    """The same relative interval on every kept GPU cell that has an MFU."""
    rows = [cell_row(r) for r in map(read_cell, _kept_cells()) if r.compute and r.compute.mfu]
    with_interval = [r for r in rows if r["samples_per_s_low"] is not None]
    assert len(with_interval) >= 10  # h100_second_run 6, zoo 2, the first H100 run's
    for row in with_interval:
        assert _ratio(row, "mfu") == pytest.approx(_ratio(row, "samples_per_s"), rel=1e-9)


def test_an_mfu_is_measurable_only_where_its_throughput_is() -> None:
    from torchscale.offline.analysis.uncertainty import in_proportion

    throughput = Estimate(value=None, low=0.0, high=500.0, n=3, measurable=False)
    mfu = in_proportion(throughput, 0.1, 400.0)
    assert mfu is not None and not mfu.measurable and mfu.value is None
    assert mfu.high == pytest.approx(0.125)


def test_the_first_screen_says_mfu_not_measurable_beside_a_throughput_not_measurable() -> None:
    """The H200 zoo: 'throughput not measurable (2 repeats)' stood beside 'MFU 10.8 % [4.8,
    24.0]', the same interval scaled; both are now not measurable, and 'MFU under 20 %' is
    said only of an MFU whose whole interval is under it (vit-b16's 16.5 %, not bert's 24 %)."""
    ctx = make_context(read_sources(H200_ZOO), ReportOptions(), None)
    table = gpu_table(ctx, ["bert-large", "vit-b16"])
    assert table is not None and len(table.rows) == 2
    for row in table.rows:
        cell = ctx.measured_pooled[ctx.measured_pooled["model_label"] == row["model"]].iloc[0]
        assert first_screen_throughput(cell) == "not measurable (2 repeats)"
        assert row["mfu_text"] == "not measurable (2 repeats)"
        assert "MFU not measurable (2 repeats)," in gpu_phrase(ctx, row["model"])
    assert "; vit-b16: MFU under 20 %" in (table.note or "")  # bert-large's reaches 24 %


def test_the_console_says_why_the_step_interval_is_narrower_than_the_rates() -> None:
    """The first H100 run's GPT-2 b8 compiled: '400 ±120 samples/sec' beside '19.25 ms [19.13,
    19.56]': two estimators kept on purpose, so the cell's lines say what each is over."""
    lines = [line.text for line in cell_lines(read_cell(FIRST_H100_COMPILED))]
    assert lines[0].startswith("> [INFO] Average Throughput: 400 ±120")
    assert lines[1].startswith("> [INFO] Iteration Latency: 19.25 ms [19.13, 19.56]")
    assert lines[2].startswith("> [INFO] Intervals: samples/s and MFU")
    assert "2 repeats and the drift between runs" in lines[2] and "8 steps" in lines[2]


def test_no_word_on_intervals_that_agree() -> None:
    """A cell whose step interval is as wide as its rate's (relative) gets no such line."""
    cell = read_cell(next(H200_ZOO.glob("cells/bert-large*.json")))
    assert cell.intervals is not None
    rate = cell.intervals.samples_per_s
    assert any(line.text.startswith("> [INFO] Intervals:") for line in cell_lines(cell))
    assert rate.value and rate.low and rate.high
    p50 = cell.intervals.step_p50_s.model_copy(
        update={"low": 0.038 * rate.low / rate.value, "high": 0.038 * rate.high / rate.value}
    )
    agreeing = cell.model_copy(
        update={"intervals": cell.intervals.model_copy(update={"step_p50_s": p50})}
    )
    assert not any(line.text.startswith("> [INFO] Intervals:") for line in cell_lines(agreeing))
