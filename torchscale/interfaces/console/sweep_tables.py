"""The sweep's table per model, sized to the terminal, and the note that explains its columns.

The tables are built from the flat cells table that `torchscale.offline.results.load` returns, so
`report` renders the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from torchscale.contracts.cell import Status
from torchscale.contracts.flop_convention import MFU_CONVENTION_SHORT
from torchscale.contracts.wording.figures import glued_figure, value_format
from torchscale.contracts.wording.spell import (
    mib,
    ms_glued,
    pct,
    pct_below,
    pct_whole,
    readable,
)
from torchscale.interfaces.console.cells import STATUS_LEVEL
from torchscale.interfaces.console.fit import FitColumn, fit_table
from torchscale.interfaces.console.lines import LEVEL_STYLE
from torchscale.interfaces.report.estimates import withheld

if TYPE_CHECKING:
    import pandas as pd


def missing(value: Any) -> bool:
    """None or NaN (pandas fills missing figures with NaN)."""
    return value is None or value != value


def ranks_of(row: pd.Series) -> str:
    """A row's rank count: '4', or '8 (2n)' across nodes."""
    nodes = row.get("nodes", 1)
    spread = f" ({int(nodes)}n)" if not missing(nodes) and int(nodes) > 1 else ""
    return f"{row['world_size']}{spread}"


def _fmt(value: Any, spell: Callable[[float], str]) -> str:
    return "-" if missing(value) else spell(float(value))


def _ms(seconds: float) -> str:
    return ms_glued(seconds, unit="")  # the unit is the column's header


def _mib(size: float) -> str:
    return mib(size, unit="")  # the unit is the column's header


# the per-model table: what may be abbreviated or left out when the terminal is narrow
# (torchscale.interfaces.console.fit), lowest value first; what each column means goes in
# the note
TABLE_COLUMNS = (
    FitColumn("world", fact="world"),
    FitColumn("batch", fact="batch"),
    FitColumn("prec/strat", justify="left", fact=""),
    FitColumn("samples/s"),
    FitColumn("/device", short="/dev", drop=1, why_dropped="samples/s / world"),
    FitColumn("p50|p95 ms", short="p50|p95", drop=6),
    FitColumn("scaling", short="eff", drop=5),
    FitColumn("comm", drop=4),
    FitColumn("MFU", drop=3),
    FitColumn("peak MiB", short="MiB", drop=2),
    FitColumn("status", justify="left"),
)
COLUMN_NOTES = {
    "/device": "samples/s per device (GPU or CPU rank)",
    "samples/s": "median of repeats ± half its 95 % interval ([low, high] where lopsided)",
    "p50|p95 ms": "step time, milliseconds",
    "scaling": "scaling efficiency, '≈100 %' linear within noise, 'no base' where no smaller "
    "world size was measured in its group",
    "comm": "exposed transfer share of the step (step model), '<x %' when not measurable "
    "above noise",
    "MFU": f"from the timed windows, {MFU_CONVENTION_SHORT}",
    "peak MiB": "CUDA peak allocated on GPUs, largest process peak RSS of any rank on CPU",
}
TABLE_NOTE_END = "'-': not measured here (reasons in cells/*.json 'unavailable')"


@dataclass(frozen=True)
class SweepTables:
    """One table per model, sized to the terminal, and the note that explains them."""

    tables: list[Table]
    note: str


def _throughput(r: pd.Series) -> str:
    value, low, high = r["samples_per_s"], r.get("samples_per_s_low"), r.get("samples_per_s_high")
    if missing(value) or missing(low) or missing(high):
        return "-" if missing(value) else readable(float(value))
    if (words := withheld(float(value), float(low), float(high), None)) is not None:
        return words  # the report's and the live table's rule
    # glued: a table cell is one figure
    return glued_figure(float(value), float(low), float(high), value_format("readable"))


def _scaling(r: pd.Series) -> str:
    """Efficiency; above 1 only when its whole interval is (else linear within noise); 'no
    base' where the cell's group has no smaller world size to scale from."""
    value, low = r["scaling_efficiency"], r.get("scaling_efficiency_low")
    if missing(value) and str(r.get("scaling_efficiency_reason") or "").startswith("no base"):
        return "no base"
    if not missing(value) and float(value) > 1 and (missing(low) or float(low) <= 1):
        return "≈100 %"
    return _fmt(value, pct_whole)


def _comm(r: pd.Series) -> str:
    """The diagnosis' exposed transfer share; '<x %' when not measurable above noise; '-'
    where the diagnosis has none."""
    value, high = r.get("exposed_transfer_share"), r.get("exposed_transfer_share_high")
    if missing(value) and not missing(high):
        return pct_below(float(high), places=0)
    return _fmt(value, pct_whole)


def _row_cells(r: pd.Series) -> list[str]:
    gpu_mem = r["peak_allocated_bytes"]
    mem = r["peak_rss_bytes"] if missing(gpu_mem) else gpu_mem
    status = Status(r["status"])
    style = LEVEL_STYLE[STATUS_LEVEL[status]] or "green"
    return [
        ranks_of(r),
        str(r["batch_size"]),
        escape(f"{r['precision']}/{r.get('layout') or r['strategy']}"),
        _throughput(r),
        "-" if missing(per := r["samples_per_s_per_device"]) else readable(float(per)),
        f"{_fmt(r['step_p50_s'], _ms)}|{_fmt(r['step_p95_s'], _ms)}",
        _scaling(r),
        _comm(r),
        _fmt(r["mfu"], pct),
        _fmt(mem, _mib),
        f"[{style}]{status}[/]",
    ]


def model_tables(table: pd.DataFrame, width: int) -> SweepTables:
    """One rich table per model from the flat cells table (results.frame.cells_table), each
    at most `width` columns wide (torchscale.interfaces.console.fit: figures are never cut;
    columns are abbreviated or left out, and the note says which)."""
    models = [
        (str(model), [[Text.from_markup(c) for c in _row_cells(r)] for _, r in rows.iterrows()])
        for model, rows in table.groupby("model_label", sort=False)
    ]
    fitted = fit_table(TABLE_COLUMNS, [row for _, rows in models for row in rows], width)
    tables = [fitted.table(rows, title=model) for model, rows in models]
    shown = {c.header: fitted.label(c) for c in fitted.shown}
    explained = [f"{shown[c]}: {note}" for c, note in COLUMN_NOTES.items() if c in shown]
    note = "; ".join([*explained, TABLE_NOTE_END, *fitted.notes("summary.csv has every column")])
    return SweepTables(tables, note)
