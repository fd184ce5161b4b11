"""The sweep as one live table: a row per cell as it finishes, with at most two short notes,
only where they change the reading (what the reader sees: docs/cli.md, `benchmark`).

A live table cannot be re-fitted once rows are printed, so its layout is decided before the
first row from what the plan knows (model names, batch sizes, world sizes) and the terminal's
width. Each row's figures come from the cells table of the results so far
(`torchscale.offline.results.frame.cells_table`), so scaling and reliability are judged exactly
as `report` and summary.csv judge them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from torchscale.contracts.cell import Status
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_warnings import level_word
from torchscale.contracts.wording.diagnosis_straggler import straggler_text
from torchscale.contracts.wording.figures import too_wide
from torchscale.contracts.wording.report import words
from torchscale.contracts.wording.spell import (
    format_value,
    pct_below_glued,
    pct_narrow,
    pct_whole,
    readable,
)
from torchscale.interfaces.console.cells import REUSED, host_bound_finding
from torchscale.interfaces.console.lines import Level, Line, fit_lines, glued, unglued
from torchscale.interfaces.console.sweep_tables import missing, ranks_of
from torchscale.interfaces.report.estimates import compact, withheld
from torchscale.offline.analysis.reliability import UNSETTLED, repeat_count

if TYPE_CHECKING:
    import pandas as pd

    from torchscale.contracts.cell import CellIdentity
    from torchscale.contracts.schema.cell_result import CellResult

NOTE_PREFIX = "  · "  # a note belongs to the row above it
MAX_NOTE_ROWS = 2  # a row and at most two rows of notes: three lines a cell
SEPARATOR = " "


@dataclass(frozen=True)
class LiveColumn:
    key: str
    header: str
    width: int  # the room a figure of this column usually needs (a wider one is never cut)
    justify: Literal["left", "right"] = "right"
    drop: int | None = None  # left out in this order (lowest first) when the row is too wide
    legend: bool = False  # said in the legend (its words: the catalogue's `live.legend.<key>`)


COLUMNS: tuple[LiveColumn, ...] = (
    LiveColumn("model", "model", 5, "left"),
    LiveColumn("batch", "batch", 5, drop=4),
    LiveColumn("ranks", "ranks", 5, drop=5),
    LiveColumn(
        "throughput",
        "samples/s",
        # '11,100 [9,000, 17,500]': a lopsided interval (one whose interval is wider than the
        # figure reads 'not measurable', so its ends stay within twice the figure)
        22,
        legend=True,
    ),
    LiveColumn("step", "step", 8, drop=3, legend=True),
    LiveColumn("scaling", "scaling", 7, drop=2, legend=True),
    LiveColumn("stall", "stall", 5, drop=1, legend=True),
    LiveColumn("status", "status", 7, "left"),
)
# a name longer than its column is shortened from the left ('…models:healthy': plug-ins differ
# at the end); the column takes MODEL_WIDTH_MIN before any figure column is left out
MODEL_WIDTH_MIN = 14
MODEL_WIDTH_MAX = 28


@dataclass(frozen=True)
class LiveLayout:
    """Which columns a sweep's rows show and how wide each is."""

    columns: tuple[LiveColumn, ...]
    widths: dict[str, int]
    width: int  # the terminal's: nothing printed is wider
    dropped: tuple[LiveColumn, ...] = ()

    def line(self, values: dict[str, str], level: Level = "info") -> Line:
        cells = []
        for column in self.columns:
            text = values.get(column.key, "-")
            width = self.widths[column.key]
            cells.append(text.ljust(width) if column.justify == "left" else text.rjust(width))
        return Line(level, SEPARATOR.join(cells).rstrip())

    def header(self) -> list[Line]:
        head = self.line({c.key: c.header for c in self.columns}, "head")
        return [head, Line("info", "-" * len(head.text))]

    def legend(self) -> list[Line]:
        """What the figure columns mean and which columns were left out, in rows of the
        table's width (a log has no COLUMNS to cut them by)."""
        meanings = [
            f"{c.header}: {words('live.legend.' + c.key)}" for c in self.columns if c.legend
        ]
        meanings.append(words("live.legend.not_measurable"))
        if self.dropped:
            meanings.append(words("live.legend.left_out", columns=[c.header for c in self.dropped]))
        return fit_lines([Line("skip", "; ".join(meanings))], self.width)


def live_layout(cells: Sequence[CellIdentity], width: int) -> LiveLayout:
    """The layout of a sweep over `cells` within `width` columns: the model column as wide as
    the longest name (at most MODEL_WIDTH_MAX), then columns left out by priority until a row
    fits."""
    longest = max((len(c.label) for c in cells), default=5)
    widths = {c.key: max(c.width, len(c.header)) for c in COLUMNS}
    widths["model"] = max(5, min(longest, MODEL_WIDTH_MIN))
    widths["ranks"] = max(widths["ranks"], max((len(ranks_text(c)) for c in cells), default=0))
    kept = list(COLUMNS)
    dropped: list[LiveColumn] = []
    for column in sorted((c for c in COLUMNS if c.drop is not None), key=lambda c: c.drop or 0):
        if _row_width(kept, widths) <= width:
            break
        kept.remove(column)
        dropped.append(column)
    spare = width - _row_width(kept, widths)  # room left gives the names back their length
    widths["model"] = max(5, min(longest, MODEL_WIDTH_MAX, widths["model"] + spare))
    return LiveLayout(tuple(kept), widths, width, tuple(dropped))


def _row_width(columns: Sequence[LiveColumn], widths: dict[str, int]) -> int:
    return sum(widths[c.key] for c in columns) + len(SEPARATOR) * (len(columns) - 1)


def ranks_text(cell: CellIdentity) -> str:
    return f"{cell.world_size}" + (f" ({cell.nodes}n)" if cell.nodes > 1 else "")


def _number(row: pd.Series, column: str) -> float | None:
    value = row.get(column)
    return None if missing(value) else float(value)


def throughput_text(row: pd.Series) -> str:
    value = _number(row, "samples_per_s")
    low, high = _number(row, "samples_per_s_low"), _number(row, "samples_per_s_high")
    if value is None:
        return "-"
    if (words := withheld(value, low, high, None)) is not None:
        return words  # the report's rule; the note says over how many repeats
    if low is None or high is None:  # one repeat: no spread (the status says so)
        return readable(value)
    return compact(value, low, high, "rate") or "-"


def step_text(row: pd.Series) -> str:
    """Three significant digits: the row's interval is the throughput's to show (-v and
    summary.csv carry the step's own)."""
    value = _number(row, "step_p50_s")
    return "-" if value is None else format_value(value, "seconds")


def scaling_text(row: pd.Series) -> str:
    value = _number(row, "scaling_efficiency")
    low, high = _number(row, "scaling_efficiency_low"), _number(row, "scaling_efficiency_high")
    reason = str(row.get("scaling_efficiency_reason") or "")
    if reason.startswith("base") or (value is None and int(row.get("world_size") or 0) == 1):
        return words("live.scaling.base")  # a base, or with one rank the base to be
    if value is None:  # no smaller world size measured (yet)
        return "-"
    if too_wide(value, low, high):  # the first screen's rule: no number
        return words("live.scaling.noise")
    if value > 1 and (low is None or low <= 1):
        return words("live.scaling.linear")
    return pct_whole(value)


def stall_text(row: pd.Series) -> str:
    if int(row.get("world_size") or 1) == 1:
        return "-"
    value = _number(row, "wait_for_peers_share")
    high = _number(row, "wait_for_peers_share_high")
    if value is None:
        return pct_below_glued(high) if high is not None else "-"
    return pct_narrow(value)  # 5 wide


def status_text(row: pd.Series) -> tuple[str, Level]:
    """'ok', 'noisy', 'busy', or the failure: the state that decides how to read the row (its
    words: the catalogue's `live.status.*`)."""
    status = Status(row["status"])
    if status is Status.SKIPPED:
        return words("live.status.skipped"), "skip"
    if status is not Status.OK:
        return words(f"live.status.{status}"), "fail"
    if bool(row.get("busy_machine")):
        return words("live.status.busy"), "warn"
    host = row.get("host_bound")
    if not missing(host) and bool(host):  # before noisy: a host-bound step is noisier
        return words("live.status.host"), "warn"
    if row.get("reliability") == "varies":
        return level_word("varies"), "warn"
    if row.get("reliability") == "too_few_repeats":  # repeats agree; their count is too few
        return words("live.status.reps", n=repeat_count(row.get("samples_per_s_repeats"))), "warn"
    if row.get("reliability") == "spread_unknown":
        return words("live.status.one_rep"), "warn"  # one repeat: no spread to judge it by
    return words("live.status.ok"), "info"


@dataclass
class LiveTable:
    """The running state of a sweep's live table: its layout, whether the header and the
    machine caveat were shown, and what each row said of scaling (a base measured after its
    cell changes the figure; `changed_rows` tells the caller to print the table again)."""

    layout: LiveLayout
    header_shown: bool = False
    busy_said: bool = False
    busy_text: str | None = None  # the busy machine's note, once it is made
    printed_scaling: dict[str, str] = field(default_factory=dict)

    def row(self, result: CellResult, table: pd.DataFrame, *, reused: bool = False) -> list[Line]:
        """The header (first time), the cell's row and its notes, from the cells table of
        every result so far (`table`); a cell `reused` by --resume says so first."""
        lines: list[Line] = []
        if not self.header_shown:
            lines += self.layout.header()
            self.header_shown = True
        match = table[table["cell_id"] == result.cell.id]
        if match.empty:
            return lines
        row = match.iloc[-1]
        values = row_values(row, self.layout.widths["model"])
        status, level = status_text(row)
        values["status"] = status
        self.printed_scaling[result.cell.id] = values["scaling"]
        lines.append(self.layout.line(values, level))
        notes = self.notes(result, row)
        if reused:
            notes.insert(0, ("info", REUSED))
        return lines + self.note_lines(notes)

    def note_lines(self, notes: list[tuple[Level, str]]) -> list[Line]:
        """The notes, most decisive first, in at most MAX_NOTE_ROWS rows: a note wraps (its
        later rows indented) while rows are left, the last one that fits is shortened at a
        word with '…' (its whole text is in the cell's JSON and -v). The busy machine counts
        as said only when its note is printed."""
        room = max(20, self.layout.width - len(NOTE_PREFIX))
        lines: list[Line] = []
        for level, text in notes:
            left = MAX_NOTE_ROWS - len(lines)
            if left <= 0:
                break
            rows = _note_rows(text, room, left)
            lines += [
                Line(level, (NOTE_PREFIX if i == 0 else " " * len(NOTE_PREFIX)) + part)
                for i, part in enumerate(rows)
            ]
            if text == self.busy_text:
                self.busy_said = True
        return lines

    def notes(self, result: CellResult, row: pd.Series) -> list[tuple[Level, str]]:
        """The cell's notes, most decisive first (`note_lines` prints what fits): a failure's
        cause, a host-bound GPU, a named straggler, the busy machine (said once per sweep),
        why a cell is noisy."""
        notes: list[tuple[Level, str]] = []
        reason = say(result.error.finding).strip() if result.error else ""
        first = reason.splitlines()[0] if reason else words(f"live.status.{result.status}")
        if result.status not in (Status.OK, Status.SKIPPED):
            notes.append(("fail", first))
        elif result.status is Status.SKIPPED and reason:
            notes.append(("skip", first))
        if (host := host_bound_finding(result)) is not None:  # its fix: -v and the report
            notes.append(("warn", host.title))
        if (straggler := straggler_note(result, row)) is not None:
            notes.append(("warn", straggler))
        if bool(row.get("busy_machine")) and not self.busy_said:
            self.busy_text = busy_note(row)
            notes.append(("warn", self.busy_text))
        if row.get("reliability") in UNSETTLED:
            notes.append(("warn", noisy_note(row)))
        return notes

    def changed_rows(self, table: pd.DataFrame) -> list[str]:
        """Cells whose scaling reads differently now than when their row was printed."""
        changed = []
        for _, row in table.iterrows():
            shown = self.printed_scaling.get(str(row["cell_id"]))
            now = scaling_text(row)
            if shown is not None and shown != now and now not in (words("live.scaling.base"), "-"):
                changed.append(str(row["cell_id"]))
        return changed


def row_values(row: pd.Series, model_width: int) -> dict[str, str]:
    label = str(row.get("model_label") or row.get("model"))
    if len(label) > model_width:
        label = "…" + label[len(label) - model_width + 1 :]
    return {
        "model": label,
        "batch": str(row["batch_size"]),
        "ranks": ranks_of(row),
        "throughput": throughput_text(row),
        "step": step_text(row),
        "scaling": scaling_text(row),
        "stall": stall_text(row),
    }


def straggler_note(result: CellResult, row: pd.Series) -> str | None:
    """The diagnosis' one straggler line (`straggler_text`, as every surface prints it) where a
    rank is named."""
    diagnosis = result.diagnosis
    verdict = diagnosis.straggler if diagnosis is not None else None
    if verdict is None or not verdict.named:
        return None
    return straggler_text(verdict, result.cell.world_size)


def _note_rows(text: str, room: int, rows: int) -> list[str]:
    """`text` in at most `rows` rows of `room` columns, never cut inside a figure (a word
    longer than the room, such as an exception's dotted name, is cut hard); what does not fit
    ends the last row with '…'."""
    wrapped = [
        unglued(part)
        for part in textwrap.wrap(glued(text), room, break_long_words=True, break_on_hyphens=False)
    ]
    if len(wrapped) <= rows:
        return wrapped
    rest = " ".join(wrapped[rows - 1 :])
    last = textwrap.shorten(rest, room, placeholder=" …")
    if last == "…":  # nothing but the placeholder: cut the first word instead
        last = rest[: room - 1] + "…"
    return [*wrapped[: rows - 1], last]


def busy_note(row: pd.Series) -> str:
    """Said once per sweep: every later row marked 'busy' reads the same."""
    cores = _number(row, "other_cpu_cores")
    return words("live.busy" if cores is not None else "live.busy_unmeasured", cores=cores)


def noisy_note(row: pd.Series) -> str:
    """Why a cell is noisy or of too few repeats, in the words of its reliability finding
    (offline/analysis/reliability.py, worded by contracts/wording/cell_warnings.py): 'varies more
    than ±10 %: step-time CV 28.1 %', 'too few repeats to judge: 2 repeats within ±2.2 % ...'."""
    return str(row.get("reliability_reason"))
