"""Long work says where it stands: a PDF (building the report, drawing its charts,
laying out and writing its pages) and the profiles after a sweep (profile i/N, elapsed, ETA)
report each step to a callback, in order, with position and total; only the CLI prints, on
stderr, never into the report or stdout, and nothing with --quiet."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tests.report_sample import sample_report
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.console import benchmark, report_progress, streams
from torchscale.interfaces.console.progress import StepProgress
from torchscale.interfaces.report.progress import Step
from torchscale.interfaces.report.render import pdf
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.profiling import session
from torchscale.orchestration.profiling.trigger import Selected

SOURCE = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_steps_eta_is_the_mean_item_so_far_times_the_items_left() -> None:
    clock = FakeClock()
    progress = StepProgress(clock=clock)
    assert progress.update(Step("build", 0, 1))
    clock.now += 3.0
    assert progress.update(Step("charts", 0, 10))  # a new step
    assert progress.text() == "drawing charts 0/10 (ETA unknown for this step), 3s elapsed"
    clock.now += 8.0
    assert not progress.update(Step("charts", 4, 10))  # 2 s a chart, 6 left
    assert progress.eta() == pytest.approx(12.0)
    assert progress.text() == "drawing charts 4/10 (ETA 12s for this step), 11s elapsed"
    progress.update(Step("layout", 0, 1))
    assert progress.text() == "laying out the pages, 11s elapsed"  # one item: no position


@pytest.mark.slow  # starts a child process
def test_the_pdf_reports_its_steps_in_order() -> None:
    report = sample_report(cells=2)
    steps: list[Step] = []
    document = pdf.render(report, on_step=steps.append)
    assert document.startswith(b"%PDF")
    charts = len(report.charts())
    assert next(s for s in steps if s.stage == "charts") == Step("charts", 0, charts)
    drawn = [s.done for s in steps if s.stage == "charts"]
    assert drawn == sorted(drawn) and drawn[-1] == charts  # each chart counted once
    assert all(s.total == charts for s in steps if s.stage == "charts")
    stages = [s.stage for s in steps]
    assert stages.index("layout") > max(i for i, s in enumerate(stages) if s == "charts")
    pages = [s for s in steps if s.stage == "pages"]
    assert steps[-1] == pages[-1] and pages[0].done == 0 and pages[-1].done == pages[-1].total > 0
    assert [s for s in steps if s.stage == "layout"] == [Step("layout", 0, 1), Step("layout", 1, 1)]


def _fake_pdf(report: Any, on_step: Any = None, **kwargs: Any) -> bytes:
    """The PDF renderer's steps without WeasyPrint (that path is tested above)."""
    for done in range(5):
        on_step(Step("charts", done, 4))
    on_step(Step("layout", 0, 1))
    on_step(Step("layout", 1, 1))
    on_step(Step("pages", 0, 3))
    on_step(Step("pages", 3, 3))
    return b"%PDF-fake"


def test_the_cli_shows_pdf_progress_on_stderr_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf, "render", _fake_pdf)
    target = tmp_path / "r.pdf"
    result = CliRunner().invoke(app, ["report", "-s", str(SOURCE), "-f", "pdf", "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == b"%PDF-fake"
    assert "[REPORT]" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("> [REPORT]")]
    steps = [re.sub(r",? \d+s elapsed|\(ETA [^)]*\) ?", "", line) for line in lines]
    assert steps == [
        "> [REPORT] building the report",
        "> [REPORT] drawing charts 0/4 ",
        "> [REPORT] drawing charts 1/4 ",  # a log gets each quarter of the charts
        "> [REPORT] drawing charts 2/4 ",
        "> [REPORT] drawing charts 3/4 ",
        "> [REPORT] laying out the pages",
        "> [REPORT] writing the pages 0/3 ",
    ]
    assert "ETA unknown for this step" in lines[1] and "ETA 0s for this step" in lines[2]
    quiet = CliRunner().invoke(
        app, ["report", "-s", str(SOURCE), "-f", "pdf", "-o", str(target), "--quiet"]
    )
    assert quiet.exit_code == 0, quiet.output
    assert "[REPORT]" not in quiet.output


def test_other_formats_print_no_progress_lines(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["report", "-s", str(SOURCE), "-f", "md", "-o", str(tmp_path / "r.md")]
    )
    assert result.exit_code == 0, result.output
    assert "[REPORT]" not in result.output and result.stderr == ""


def _plan(cells: int) -> Any:
    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": ["tiny-mlp"],
            "batch_sizes": [8 * (i + 1) for i in range(cells)],
            "gpu_counts": [1],
            "device": "cpu",
            "profiling": {"enabled": True, "trigger": "always"},
        }
    )
    return build_plan(config, Machine(0, 2))


def _ok(planned: Any) -> CellResult:
    return CellResult.model_validate({"cell": planned.cell.model_dump(), "status": "ok"})


def test_profiles_after_a_sweep_report_position_and_total_in_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plan = _plan(3)
    launched: list[str] = []

    def launch(planned: Any, store: Any, env: Any, request: Any) -> str:
        launched.append(planned.cell.id)
        return f"profiled {planned.cell.id}"

    monkeypatch.setattr(session, "launch_profiled", launch)  # the torchrun: tested elsewhere
    events: list[tuple[Any, ...]] = []
    done = session.profile_after_sweep(
        plan,
        store=None,  # type: ignore[arg-type]
        base_env={},
        results=[_ok(p) for p in plan.cells],
        on_start=lambda selected, note, i, n: events.append(("start", selected.cell_id, i, n)),
        on_done=lambda selected, profiled, i, n: events.append(("done", profiled, i, n)),
    )
    ids = [p.cell.id for p in plan.cells]
    assert launched == ids and len(done) == 3
    assert events == [
        event
        for i, cell in enumerate(ids)
        for event in (("start", cell, i, 3), ("done", f"profiled {cell}", i, 3))
    ]


def test_profile_lines_say_where_the_profiles_stand(monkeypatch: pytest.MonkeyPatch) -> None:
    """On stderr like the sweep's running lines: profile i/N, elapsed, ETA (the mean profiled
    run so far times the runs left); nothing on stdout; nothing with --quiet."""
    plan = _plan(2)
    for quiet in (False, True):
        err, out = io.StringIO(), io.StringIO()
        monkeypatch.setattr(benchmark, "stderr", Console(file=err, width=200))
        monkeypatch.setattr(benchmark, "stdout", Console(file=out, width=200))
        monkeypatch.setattr(streams.Verbosity, "level", -1 if quiet else 0)
        printer = benchmark.BenchmarkPrinter(len(plan.cells), plan)
        clock = FakeClock()
        first, second = (Selected(p.cell.id, "profiling.trigger is 'always'") for p in plan.cells)
        try:
            printer.profile_started(first, None, 0, 2)
            assert printer.profiles is not None
            printer.profiles.clock = clock  # on the fake clock from here
            printer.profiles.started = clock()
            printer.profiles.start(0, will_launch=True)
            clock.now += 10.0
            printer.profile_done(first, None, 0, 2)  # type: ignore[arg-type]
            printer.profile_started(second, None, 1, 2)
            printer.profile_done(second, None, 1, 2)  # type: ignore[arg-type]
        finally:
            printer.progress.stop()
        assert out.getvalue() == ""
        lines = [line for line in err.getvalue().splitlines() if "[PROFILE]" in line]
        if quiet:
            assert lines == []
            continue
        assert len(lines) == 2
        assert lines[0].endswith("trigger is 'always' (profile 1/2, 0s elapsed, ETA unknown)")
        assert lines[1].endswith("trigger is 'always' (profile 2/2, 10s elapsed, ETA 10s)")


def test_the_report_progress_starts_no_bar_off_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A log gets lines, not a bar's leftovers (rich prints a blank line when a bar stops)."""
    err = io.StringIO()
    monkeypatch.setattr(report_progress, "stderr", Console(file=err, width=120))
    monkeypatch.setattr(streams.Verbosity, "level", 0)
    progress = report_progress.ReportProgress(lines=True)
    progress.step(Step("build", 0, 1))
    progress.step(Step("build", 1, 1))
    progress.stop()
    assert err.getvalue().splitlines() == ["> [REPORT] building the report, 0s elapsed"]
