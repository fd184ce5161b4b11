"""Row checks: each row of a run, and its footer, against nccl-tests' own definitions.

algbw = S / t and busbw = algbw x factor(op, n) (analysis/nccl_bandwidth.py), the size from the
count, the type and the ranks, the redop and root columns from the op: each within the rounding
of the printed digits. A row that disagrees is named in a warning; a run where most rows
disagree is refused, since its op or its rank count must then be wrong.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import replace

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.offline.analysis.nccl_bandwidth import busbw_factor, size_bytes
from torchscale.offline.comm.nccl_infer import RELATIVE_SLACK  # beyond the printed rounding
from torchscale.offline.comm.nccl_tests.names import (
    NON_REDUCING_OPS,
    REDUCING_OPS,
    ROOTED_OPS,
    TYPES,
)
from torchscale.offline.comm.nccl_tests.records import (
    Figures,
    RawRow,
    Run,
    fail,
    location,
)

ROW_WARNINGS = 5  # mismatching rows named one by one; the rest are counted


def legacy_rows(rows: Sequence[RawRow], world: int) -> list[RawRow]:
    """Rows of the oldest all_gather/reduce_scatter, whose printed algbw is S (n-1)/n / t (and
    busbw the same), with algbw rescaled to nccl-tests' S / t."""
    scale = world / (world - 1)

    def rescaled(fig: Figures) -> Figures:
        if fig.algbw is None:
            return fig
        return replace(fig, algbw=fig.algbw * scale, algbw_res=fig.algbw_res * scale)

    return [
        replace(raw, placements=tuple((p, rescaled(fig)) for p, fig in raw.placements))
        for raw in rows
    ]


def check_columns(run: Run, op: str, source: str) -> None:
    """The redop and root columns are a quick test of the op: reductions print a redop (sum...),
    all_gather, broadcast and alltoall none (send_recv prints whatever -o says); broadcast and
    reduce print their root, the other ops -1."""
    for raw in run.rows:
        problem = column_problem(op, raw, strict=False)
        if problem:
            raise fail(location(source, raw.loc), f"the table shows {problem}: is the op right?")


def column_problem(op: str, raw: RawRow, *, strict: bool) -> str | None:
    """How a row's redop and root contradict `op`. `strict` (inferring the op): a table
    without a root column is not a rooted op's, as older versions print it for those only."""
    if op in REDUCING_OPS and raw.redop is None:
        return f"no redop, which {op} needs"
    if op in NON_REDUCING_OPS and raw.redop is not None:
        return f"redop {raw.redop!r}, which {op} does not have"
    if op in ROOTED_OPS and raw.root is not None and raw.root < 0:
        return f"root {raw.root}, but {op} has a root rank"
    if op in ROOTED_OPS and raw.root is None and strict:
        return f"no root column, which {op} prints"
    if op not in ROOTED_OPS and raw.root is not None and raw.root >= 0:
        return f"root {raw.root}, which {op} does not have"
    return None


def dtype_of(raw: RawRow, source: str) -> tuple[str, int]:
    if raw.type_name not in TYPES:
        raise fail(location(source, raw.loc), f"an unknown nccl-tests type {raw.type_name!r}")
    return TYPES[raw.type_name]


def _within(value: float, low: float, high: float) -> bool:
    slack = RELATIVE_SLACK * max(abs(low), abs(high))
    return low - slack <= value <= high + slack


def _algbw_problem(size: int, fig: Figures) -> Finding | None:
    """algbw = S / t, t printed to a few digits: the bounds S / (t +- half a digit)."""
    if fig.time_us is None or fig.algbw is None or fig.time_us <= 0:
        return None
    slow = size / (fig.time_us + fig.time_res) / 1e3
    fast_time = fig.time_us - fig.time_res
    fast = size / fast_time / 1e3 if fast_time > 0 else math.inf
    if _within(fig.algbw, slow - fig.algbw_res, fast + fig.algbw_res):
        return None
    figures = {"algbw": fig.algbw, "time_us": fig.time_us}
    return Finding(code="comm.import.row_algbw", figures=figures)


def _busbw_problem(op: str, world: int, fig: Figures) -> Finding | None:
    if fig.algbw is None or fig.busbw is None:
        return None
    factor = busbw_factor(op, world)
    low = (fig.algbw - fig.algbw_res) * factor - fig.busbw_res
    high = (fig.algbw + fig.algbw_res) * factor + fig.busbw_res
    if _within(fig.busbw, low, high):
        return None
    figures = {"busbw": fig.busbw, "algbw": fig.algbw, "factor": factor, "op": op}
    return Finding(code="comm.import.row_busbw", figures={**figures, "ranks": world})


def row_problem(op: str, world: int, raw: RawRow, itemsize: int, cputime: bool) -> Finding | None:
    """The first way a row disagrees with nccl-tests' own definitions, or None; its figures
    name the row (loc, size) and the placement whose figures disagree."""
    row = {"loc": raw.loc, "size": raw.size}
    expected = size_bytes(op, raw.count, itemsize, world)
    if raw.size != expected:
        shape = {"op": op, "count": raw.count, "itemsize": itemsize, "ranks": world}
        figures = {**row, **shape, "expected": expected}
        return Finding(code="comm.import.row_size", figures=figures)
    for placement, fig in raw.placements:
        # with -C 1 the time column is the CPU's launch time, not the one algbw comes from
        problem = (None if cputime else _algbw_problem(raw.size, fig)) or _busbw_problem(
            op, world, fig
        )
        if problem:
            figures = {**row, "placement": placement, **problem.figures}
            return Finding(code=problem.code, figures=figures)
    return None


def consistency(
    run: Run, rows: Sequence[RawRow], op: str, world: int, source: str
) -> list[Finding]:
    """A warning per disagreeing row; refused when most disagree (the op or n is wrong)."""
    problems = [
        (raw, p)
        for raw in rows
        if (p := row_problem(op, world, raw, dtype_of(raw, source)[1], run.cputime))
    ]
    if problems and 2 * len(problems) > len(rows):
        raw, problem = problems[0]
        raise fail(
            location(source, raw.loc),
            f"{len(problems)} of {len(rows)} rows disagree with nccl-tests' formulas for "
            f"{op} on {world} ranks ({say(problem)}): is the op or the rank count wrong?",
        )
    notes = [problem for _, problem in problems]
    if len(notes) > ROW_WARNINGS:
        more = Finding(code="comm.import.more_rows", figures={"rows": len(notes) - ROW_WARNINGS})
        notes = [*notes[:ROW_WARNINGS], more]
    return notes


def footer_notes(run: Run) -> list[Finding]:
    """The footer against the rows: Avg bus bandwidth is the mean busbw of every row."""
    notes = []
    figures = [fig for raw in run.rows for _, fig in raw.placements if fig.busbw is not None]
    if run.footer_busbw is not None and figures:
        footer, footer_res = run.footer_busbw
        mean = statistics.fmean(f.busbw for f in figures if f.busbw is not None)
        tolerance = max(f.busbw_res for f in figures) + footer_res + RELATIVE_SLACK * abs(footer)
        if abs(mean - footer) > tolerance:
            busbw = {"footer": footer, "mean": mean}
            notes.append(Finding(code="comm.import.footer_busbw", figures=busbw))
    wrong_rows = any(fig.wrong for raw in run.rows for _, fig in raw.placements)
    if run.footer_wrong and error_column(run):
        wrong = {"wrong": run.footer_wrong}
        notes.append(Finding(code="comm.import.footer_error_column", figures=wrong))
    elif run.footer_wrong and not wrong_rows:
        notes.append(Finding(code="comm.import.footer_wrong", figures={"wrong": run.footer_wrong}))
    return notes


def error_column(run: Run) -> bool:
    return run.layout is not None and "error" in run.layout.group
