"""Tables sized to the terminal: columns are left out or abbreviated, figures are never cut.

A terminal (or a CI log) is often 80 columns wide; rich would fold or crop a table wider than
that, so '109,514,240' prints as '109,514,2…' and every row wraps. `fit_table` keeps each figure
on one line, whole, and makes room in this order, stopping as soon as the table fits:

1. columns empty in every row ('-') are left out (the note says so);
2. columns holding one value in every row move into the title ('batch 4');
3. headers are abbreviated (the note explains each abbreviation);
4. low-value columns are left out, lowest value first (the note names them); a header that
   fits again in the room they left is written out in full.

Text columns (`wrap=True`) may wrap between words, never inside one. What still does not fit
is returned as is: the caller decides (the callers here always keep a few narrow columns).
The decisions are taken over all the rows given, so the tables drawn from parts of them (one per
model) share their columns and headers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

EMPTY = "-"
# rich needs a console to measure; its own width does not matter (the options carry ours)
_MEASURE = Console(width=10_000, file=None, color_system=None, markup=False, emoji=False)


@dataclass(frozen=True)
class FitColumn:
    """One column and what may be done to it when the terminal is narrow."""

    header: str
    short: str | None = None  # its abbreviation (explained in the note when used)
    justify: Literal["left", "right"] = "right"
    drop: int | None = None  # left out in this order (lowest first); None: always shown
    wrap: bool = False  # text that may wrap between words; figures never wrap
    fact: str | None = None  # one value in every row: shown in the title as 'fact value'
    why_dropped: str | None = None  # how to get it back when it is left out


@dataclass
class Fitted:
    """What was done to fit the columns (the same for every table drawn with it, so that the
    tables of one sweep share their headers), and the table of any rows drawn so."""

    columns: Sequence[FitColumn]
    keep: list[int]
    labels: dict[int, str]
    options: dict[str, object]
    abbreviated: list[FitColumn] = field(default_factory=list)
    dropped: list[FitColumn] = field(default_factory=list)
    empty: list[FitColumn] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # 'batch 4': one value in every row

    @property
    def shown(self) -> list[FitColumn]:
        return [self.columns[i] for i in self.keep]

    def table(self, rows: Sequence[Sequence[Text]], title: str | None = None) -> Table:
        """`rows` (every column's cell, as given to `fit_table`) under `title` and the facts."""
        heading = title
        if self.facts:
            facts = ", ".join(self.facts)
            heading = f"{title} ({facts})" if title else facts
        return _table(self.columns, rows, self.keep, self.labels, heading, self.options)

    def label(self, column: FitColumn) -> str:
        """The header as shown: 'eff (scaling)' when abbreviated, for the note."""
        return f"{column.short} ({column.header})" if column in self.abbreviated else column.header

    def notes(self, elsewhere: str = "a wider terminal shows them") -> list[str]:
        """One phrase per kind of column left out: empty ones, then those left out to fit."""
        notes = []
        if self.empty:
            notes.append(
                "left out, not measured in any row: " + ", ".join(c.header for c in self.empty)
            )
        if self.dropped:
            notes.append(
                f"left out to fit the terminal ({elsewhere}): "
                + ", ".join(
                    c.header + (f" = {c.why_dropped}" if c.why_dropped else "")
                    for c in self.dropped
                )
            )
        return notes


def fit_table(
    columns: Sequence[FitColumn],
    rows: Sequence[Sequence[Text]],
    width: int,
    **table_options: object,
) -> Fitted:
    """How to draw `columns` x `rows` within `width` columns (see the module doc). Draw the
    rows with `Fitted.table`, or a part of them (one table per group) under the same headers."""
    indices = list(range(len(columns)))
    fitted = Fitted(columns, indices, {i: c.header for i, c in enumerate(columns)}, table_options)

    def fits(keep: list[int], natural: bool = False) -> bool:
        """Fits with text wrapped between words, or (`natural`) with no text wrapped."""
        fitted.keep = keep
        measured = Measurement.get(_MEASURE, _MEASURE.options, fitted.table(rows))
        return (measured.maximum if natural else measured.minimum) <= width

    keep = indices
    empty = [i for i in keep if rows and all(r[i].plain == EMPTY for r in rows)]
    if not fits(keep) and empty:
        keep = [i for i in keep if i not in empty]
        fitted.empty = [columns[i] for i in empty]
    if not fits(keep):
        hoisted = []
        for i in keep:
            values = {r[i].plain for r in rows}
            fact = columns[i].fact
            if fact is not None and len(values) == 1:
                fitted.facts.append(f"{fact} {values.pop()}".strip())
                hoisted.append(i)
        keep = [i for i in keep if i not in hoisted]
    abbreviated: list[int] = []
    if not fits(keep):
        abbreviated = [i for i in keep if columns[i].short]
        fitted.labels.update({i: columns[i].short or columns[i].header for i in abbreviated})
    droppable = [i for i in keep if columns[i].drop is not None]
    for i in sorted(droppable, key=lambda i: columns[i].drop or 0):
        if fits(keep):
            break
        keep = [k for k in keep if k != i]
        fitted.dropped.append(columns[i])
    for i in list(abbreviated):  # room left over (no text wrapped) takes a header back
        fitted.labels[i] = columns[i].header
        if fits(keep, natural=True):
            abbreviated.remove(i)
        else:
            fitted.labels[i] = columns[i].short or columns[i].header
    fitted.keep = keep
    fitted.abbreviated = [columns[i] for i in abbreviated if i in keep]
    return fitted


def _table(
    columns: Sequence[FitColumn],
    rows: Sequence[Sequence[Text]],
    keep: list[int],
    labels: dict[int, str],
    title: str | None,
    options: dict[str, object],
) -> Table:
    settings: dict[str, object] = {
        "box": box.SIMPLE_HEAD,
        "pad_edge": False,
        "show_edge": False,
        "padding": (0, 1, 0, 0),
        "title_justify": "left",
        **options,
    }
    table = Table(title=Text(title) if title else None, **settings)  # type: ignore[arg-type]
    for i in keep:
        column = columns[i]
        header = labels[i]
        cells = [r[i] for r in rows]
        sizing: dict[str, Any]
        if column.wrap:  # as wide as its longest word
            word = max((longest_word(c.plain) for c in cells), default=0)
            sizing = {"min_width": max(word, longest_word(header)), "overflow": "fold"}
        else:
            widest = max((c.cell_len for c in cells), default=0)
            sizing = {"min_width": max(widest, len(header)), "no_wrap": True}
        table.add_column(header, justify=column.justify, **sizing)
    for r in rows:
        table.add_row(*(r[i] for i in keep))
    return table


def longest_word(text: str) -> int:
    """The widest a column of `text` must be so that no word is cut."""
    return max((len(word) for word in text.split()), default=0)
