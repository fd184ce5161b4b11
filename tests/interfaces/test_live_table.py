"""The sweep's live table: a row per cell, at most two short notes, nothing wider than the
terminal, no figure cut, the busy machine said once."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.interfaces.console import benchmark, streams
from torchscale.interfaces.console.live_table import (
    COLUMNS,
    NOTE_PREFIX,
    LiveTable,
    live_layout,
    throughput_text,
)
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.frame import cells_table
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine

FIXTURE = Path(__file__).parents[1] / "fixtures" / "cpu_default_sweep" / "default_scaling" / "cells"


def sweep() -> list[CellResult]:
    """The real 8-cell sweep, in the order it ran (world 1 before world 2 in each group)."""
    results = []
    for path in sorted(FIXTURE.glob("*.json")):
        read = read_cell(path)
        result = read.doc
        problem = read.problem
        assert result is not None, problem
        results.append(result)
    assert len(results) == 8
    return sorted(
        results,
        key=lambda r: (r.cell.label != "tiny-mlp", r.cell.batch_size, r.cell.world_size),
    )


def named_and_injected(results: list[CellResult]) -> tuple[CellResult, CellResult]:
    """The fixture's cell with a named straggler, and the same cell as if --inject-delay had
    made it (`StragglerVerdict.injected`)."""
    named = next(
        r
        for r in results
        if r.diagnosis is not None and r.diagnosis.straggler and r.diagnosis.straggler.named
    )
    assert named.diagnosis is not None and named.diagnosis.straggler is not None
    verdict = named.diagnosis.straggler.model_copy(update={"injected": True})
    injected = named.model_copy(
        update={"diagnosis": named.diagnosis.model_copy(update={"straggler": verdict})}
    )
    return named, injected


def rows_of(results: list[CellResult], width: int) -> list[list[str]]:
    """Each cell's printed rows (its row, then its notes), header first."""
    live = LiveTable(live_layout([r.cell for r in results], width))
    printed: list[list[str]] = []
    for i, result in enumerate(results):
        table = cells_table(results[: i + 1])
        lines = [line.text for line in live.row(result, table)]
        if i == 0:
            assert lines[0].split()[:3] == ["model", "batch", "ranks"]
            lines = lines[2:]  # the header and its rule
        printed.append(lines)
    return printed


@pytest.mark.parametrize("width", [80, 120])
def test_at_most_three_lines_a_cell_none_wider_than_the_terminal(width: int) -> None:
    results = sweep()
    printed = rows_of(results, width)
    for lines in printed:
        assert 1 <= len(lines) <= 3
        assert all(len(line) <= width for line in lines), lines
        # a note belongs to the row above it; a long one wraps, indented under itself
        assert lines[1:] == [] or lines[1].startswith(NOTE_PREFIX)
        assert all(line.startswith((NOTE_PREFIX, " " * len(NOTE_PREFIX))) for line in lines[1:])
    # a figure is whole in its row, as the cells table gives it
    table = cells_table(results)
    for result, lines in zip(results, printed, strict=True):
        row = table[table["cell_id"] == result.cell.id].iloc[0]
        assert throughput_text(row) in lines[0]


def test_the_busy_machine_is_said_once() -> None:
    printed = rows_of(sweep(), 80)
    busy_rows = [lines for lines in printed if lines[0].rstrip().endswith("busy")]
    assert len(busy_rows) >= 2  # the fixture has two busy cells
    said = [line for lines in printed for line in lines[1:] if "busy machine" in line]
    assert len(said) == 1


def test_a_figure_wider_than_its_interval_is_not_measurable() -> None:
    table = cells_table(sweep())
    for _, row in table.iterrows():
        value, low, high = row["samples_per_s"], row["samples_per_s_low"], row["samples_per_s_high"]
        text = throughput_text(row)
        if high - low > value:
            assert text == "not measurable"
        else:
            assert any(ch.isdigit() for ch in text)


def test_narrow_terminals_leave_columns_out_by_priority_and_say_so() -> None:
    cells = [r.cell for r in sweep()]
    wide = live_layout(cells, 120)
    narrow = live_layout(cells, 60)
    assert not wide.dropped
    dropped = [c.key for c in narrow.dropped]
    expected = [c.key for c in sorted((c for c in COLUMNS if c.drop), key=lambda c: c.drop or 0)]
    assert dropped == expected[: len(dropped)] and dropped
    legend = " ".join(line.text for line in narrow.legend())
    assert "left out to fit the terminal: " in " ".join(legend.split())
    assert all(len(line.text) <= 60 for line in narrow.legend())


def test_the_printer_shows_the_table_not_the_cell_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default sweep output: header, then a row per cell; -v keeps every cell's lines."""
    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": ["tiny-mlp"],
            "batch_sizes": [16],
            "gpu_counts": [1, 2],
            "device": "cpu",
        }
    )
    plan = build_plan(config, Machine(0, 2))
    results = [r for r in sweep() if r.cell.label == "tiny-mlp" and r.cell.batch_size == 16]
    out = io.StringIO()
    console = Console(file=out, highlight=False, width=80, soft_wrap=True)
    monkeypatch.setattr(benchmark, "stdout", console)
    monkeypatch.setattr(streams.Verbosity, "level", 0)
    monkeypatch.setenv("COLUMNS", "80")
    printer = benchmark.BenchmarkPrinter(len(plan.cells), plan)
    try:
        for i, (planned, result) in enumerate(zip(plan.cells, results, strict=True)):
            printer.cell_start(planned, i, 2, True)
            printer.cell_done(result, False)
    finally:
        printer.progress.stop()
    text = out.getvalue().splitlines()
    assert text[0].startswith("model")
    assert sum(line.startswith("tiny-mlp") for line in text) == 2
    assert not any("Average Throughput" in line or "Running" in line for line in text)
    assert all(len(line) <= 80 for line in text)


def test_a_row_printed_before_its_base_is_shown_again_at_the_end() -> None:
    """A world-2 cell measured before its world-1 base reads '-' live; the final table is
    printed again so its scaling is seen; a base cell never counts as changed."""
    results = sweep()[:2]  # tiny-mlp b16: world 1, world 2
    late_base = [results[1], results[0]]
    live = LiveTable(live_layout([r.cell for r in late_base], 80))
    for i, result in enumerate(late_base):
        live.row(result, cells_table(late_base[: i + 1]))
    assert live.printed_scaling[results[1].cell.id] == "-"
    assert live.changed_rows(cells_table(late_base)) == [results[1].cell.id]
    in_order = LiveTable(live_layout([r.cell for r in results], 80))
    for i, result in enumerate(results):
        in_order.row(result, cells_table(results[: i + 1]))
    assert in_order.changed_rows(cells_table(results)) == []


def test_an_injected_straggler_is_called_injected() -> None:
    """The run's own --inject-delay made the straggler (`StragglerVerdict.injected`): the live
    table and the -v cell lines say so; a straggler nobody injected is not called injected."""
    from torchscale.interfaces.console.cells import cell_lines

    results = sweep()
    named, injected = named_and_injected(results)
    for result, said in ((named, False), (injected, True)):
        live = LiveTable(live_layout([result.cell], 120))
        lines = [line.text for line in live.row(result, cells_table([result]))]
        straggler = [line for line in lines if "Straggler" in line]
        assert straggler and ("injected" in straggler[0]) is said
        verbose = [line.text for line in cell_lines(result, verbose=True)]
        assert any(
            "Straggler" in t and ": rank" in t and ("injected" in t) is said for t in verbose
        )


@pytest.mark.parametrize("width", [40, 60, 80])
def test_the_notes_keep_what_matters_at_any_width(width: int) -> None:
    """However narrow: rows and notes within the width, at most two rows of notes, the
    'injected' of an artificial straggler kept (it leads its note), a failure reason whose
    first word is longer than the room cut hard rather than lost."""
    from torchscale.contracts.cell import Status
    from torchscale.contracts.finding import Finding
    from torchscale.contracts.schema.cell_result import CellError

    results = sweep()
    _, injected = named_and_injected(results)
    reason = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: rank 1 died"
    failed = results[0].model_copy(
        update={
            "status": Status.FAILED,
            "error": CellError(why=Finding(code="failure.raised"), exception=reason),
            "throughput": None,
            "step_time": None,
            "intervals": None,
        }
    )
    skipped = results[0].model_copy(
        update={"status": Status.SKIPPED, "error": CellError(why=Finding(code="plan.no_gpu"))}
    )
    for result in (injected, failed, skipped):
        live = LiveTable(live_layout([r.cell for r in results], width))
        lines = [line.text for line in live.row(result, cells_table([result]))][2:]
        assert 1 <= len(lines) <= 3, lines
        assert all(len(line) <= width for line in lines), lines
        if result is injected:
            assert any("injected" in line for line in lines), lines
        if result is failed:
            assert lines[1].startswith(NOTE_PREFIX + "a rank raised"), lines


def test_a_lopsided_throughput_fits_80_columns() -> None:
    """'11,100 [9,000, 17,500]' beside a 14-character name: the row still fits 80 columns."""
    results = sweep()
    layout = live_layout([r.cell for r in results], 80)
    values = {
        "model": "x" * layout.widths["model"],
        "batch": "32",
        "ranks": "2",
        "throughput": "11,100 [9,000, 17,500]",
        "step": "1.93 ms",
        "scaling": "≈100 %",
        "stall": "9.5 %",
        "status": "noisy",
    }
    assert len(layout.line(values).text) <= 80
    assert [c.key for c in layout.columns][-1] == "status"


def test_a_plug_in_name_is_printed_as_written() -> None:
    """A user's model name is never read as markup or an emoji code in the live table."""
    result = sweep()[0]
    hostile = "[bold red]x[/] mod:factory:"
    renamed = result.model_copy(update={"cell": result.cell.model_copy(update={"label": hostile})})
    table = cells_table([renamed])
    live = LiveTable(live_layout([renamed.cell], 120))
    out = io.StringIO()
    console = Console(file=out, width=120, emoji=False, highlight=False)
    for line in live.row(renamed, table):
        console.print(line.markup(), soft_wrap=True)
    assert hostile in out.getvalue()


@pytest.mark.slow  # over 2 s on 2 cores
def test_the_stall_fits_its_column_at_every_share() -> None:
    """'9.9 %', '10 %', '<1 %': never six characters in a five-wide column (a share that
    rounds to 10.0 % takes the whole-number form)."""
    from torchscale.interfaces.console.live_table import COLUMNS, stall_text

    [width] = [c.width for c in COLUMNS if c.key == "stall"]
    shares = [i / 10_000 for i in range(10_001)]
    texts = {stall_text(pd.Series({"world_size": 2, "wait_for_peers_share": s})) for s in shares}
    assert "9.9 %" in texts and "10 %" in texts and "100 %" in texts
    assert max(len(t) for t in texts) <= width
