"""Charts drawn on several cores (torchscale.interfaces.report.render.svg_worker): the same charts
as drawing them here, a worker that fails or hangs costs only time, and no worker outlives the
call, whatever ends it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from tests.processes import live_children
from tests.report_sample import sample_report
from torchscale.interfaces.report.model import Chart, Series
from torchscale.interfaces.report.render import svg_charts, svg_worker
from torchscale.interfaces.report.render.svg_worker import (
    MIN_WORKER_SHARE,
    STARTUP_CHARTS,
    ChartError,
    draw_in_parallel,
    split,
    worker_count,
)


def _charts(count: int) -> list[Chart]:
    return [
        Chart(
            id=f"chart-{i}",
            title=f"chart {i}",
            kind="line",
            x_label="GPUs",
            y_label="samples/s",
            series=[Series(name="s", x=[1, 2, 4], y=[1.0, 2.0 + i, 3.0])],
        )
        for i in range(count)
    ]


# enough charts for one worker on two cores
PARALLEL = 12


def test_worker_count_needs_spare_cores_and_enough_charts() -> None:
    assert worker_count(charts=100, cores=1) == 0
    # the 11 charts of a 50-cell report get the spare core
    assert worker_count(charts=11, cores=2) == 1
    # a worker would draw fewer than MIN_WORKER_SHARE: not worth its start-up
    smallest = int(2 * MIN_WORKER_SHARE + STARTUP_CHARTS)
    assert worker_count(charts=smallest, cores=2) == 1
    assert worker_count(charts=smallest - 1, cores=8) == 0
    assert worker_count(charts=100, cores=2) == 1
    assert worker_count(charts=100, cores=64) == svg_worker.MAX_WORKERS
    assert worker_count(charts=PARALLEL, cores=2) == 1


def test_split_keeps_every_chart_once_and_gives_workers_less() -> None:
    charts = _charts(24)
    mine, theirs = split(charts, 1)
    assert sorted(c.id for c in [*mine, *theirs]) == sorted(c.id for c in charts)
    # all finish together: the worker starts STARTUP_CHARTS charts late
    assert (len(mine), len(theirs)) == (14, 10)
    # interleaved: each share has charts from the start and the end of the report
    assert {mine[0].id, theirs[0].id} == {"chart-0", "chart-1"}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_parallel_draws_the_same_charts_and_leaves_no_process() -> None:
    before = set(live_children())  # what earlier tests left is not this test's (stop_guard)
    charts = _charts(PARALLEL)
    counted: list[int] = []
    drawn = draw_in_parallel(charts, svg_charts.chart_svg, cores=2, on_drawn=counted.append)
    assert list(drawn) != [] and set(drawn) == {c.id for c in charts}
    # progress: this process' charts one by one, then the worker's share at once
    mine, theirs = split(charts, 1)
    assert counted == [1] * len(mine) + [len(theirs)]
    for chart in charts:
        svg = drawn[chart.id]
        assert isinstance(svg, str) and svg.lstrip().startswith("<?xml")
        # the chart's own data, whichever process drew it: its y tick range differs per chart
        assert "samples/s" in svg
    assert set(live_children()) <= before


def test_a_failing_worker_costs_only_time(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(charts_path: Path, output_path: Path, parent_pid: int) -> list[str]:
        return [sys.executable, "-c", "import sys; print('worker broke'); sys.exit(3)"]

    monkeypatch.setattr(svg_worker, "worker_argv", failing)
    before = set(live_children())
    charts = _charts(PARALLEL)
    with caplog.at_level(logging.WARNING, logger=svg_worker.__name__):
        drawn = draw_in_parallel(charts, lambda chart: f"<svg id='{chart.id}'/>", cores=2)
    assert drawn == {c.id: f"<svg id='{c.id}'/>" for c in charts}
    assert "chart worker failed (exit status 3)" in caplog.text
    assert "worker broke" in caplog.text
    assert set(live_children()) <= before


def test_a_hung_worker_is_killed_and_its_charts_drawn_here(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def hanging(charts_path: Path, output_path: Path, parent_pid: int) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(600)"]

    monkeypatch.setattr(svg_worker, "worker_argv", hanging)
    monkeypatch.setattr(svg_worker, "TIMEOUT_S", 0.5)
    monkeypatch.setattr(svg_worker, "TIMEOUT_PER_CHART_S", 0.0)
    before = set(live_children())
    charts = _charts(PARALLEL)
    with caplog.at_level(logging.WARNING, logger=svg_worker.__name__):
        drawn = draw_in_parallel(charts, lambda chart: "<svg/>", cores=2)
    assert set(drawn) == {c.id for c in charts}
    assert "no answer in 0 s" in caplog.text or "no answer in 1 s" in caplog.text
    assert set(live_children()) <= before


def test_an_interrupt_while_drawing_kills_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    def hanging(charts_path: Path, output_path: Path, parent_pid: int) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(600)"]

    monkeypatch.setattr(svg_worker, "worker_argv", hanging)
    before = set(live_children())

    def interrupted(chart: Chart) -> str:
        assert set(live_children()) - before  # the worker is running meanwhile
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        draw_in_parallel(_charts(PARALLEL), interrupted, cores=2)
    assert set(live_children()) <= before


def test_a_chart_the_worker_cannot_draw_comes_back_as_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(chart: Chart) -> str:
        raise ValueError(f"cannot draw {chart.id}")

    monkeypatch.setattr(svg_charts, "chart_svg", broken)
    charts = _charts(2)
    charts_path, output_path = tmp_path / "in.json", tmp_path / "out.json"
    charts_path.write_text(
        "[" + ",".join(c.model_dump_json() for c in charts) + "]", encoding="utf-8"
    )
    svg_worker._work(charts_path, output_path)
    drawn = svg_worker._read_output(output_path, charts)
    error = drawn["chart-0"]
    assert isinstance(error, ChartError) and str(error) == "ValueError: cannot draw chart-0"


@pytest.mark.slow
def test_the_pdf_charts_come_from_the_workers_unchanged() -> None:
    """chart_uris with the default drawing (workers where cores allow) gives every chart."""
    from torchscale.interfaces.report.render import pdf

    report = sample_report(cells=200)
    uris = pdf.chart_uris(report)
    assert set(uris) == {c.id for c in report.charts()}
    assert all(uri.startswith("data:image/svg+xml;base64,") for uri in uris.values())
