"""The record of one nccl-tests run as read, before any check: what the text scanner and the
JSON reader both fill, and the error and message helpers every step of the import shares.

Figures are kept as printed, each with half a unit of its last printed digit (the checks allow
that much), so nothing is rounded or corrected on the way in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from torchscale.contracts.errors import UsageError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import AcrossRanks, Placement
from torchscale.offline.comm.nccl_infer import Command


class NcclTestsFormatError(UsageError):
    """The file is not nccl-tests output torchscale can use. Exit code 2, as for a bad option:
    what is wrong is the input named on the command line, not the machine."""


NO_REDOP = ("", "none")


@dataclass(frozen=True)
class Figures:
    """One placement's printed figures, with half a unit of each one's last printed digit."""

    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: int | None
    time_res: float
    algbw_res: float
    busbw_res: float


@dataclass(frozen=True)
class RawRow:
    """One line of an nccl-tests table as printed; `loc` is "14" (a line) or "results[3]"."""

    loc: str
    size: int
    count: int
    type_name: str
    redop: str | None
    root: int | None
    placements: tuple[tuple[Placement, Figures], ...]


@dataclass(frozen=True)
class RankLine:
    """One rank as the output lists it: a `#  Rank` line, or a JSON `devices` entry."""

    rank: int
    group: int
    pid: int
    host: str
    device_name: str


@dataclass(frozen=True)
class Layout:
    """Where each figure sits in a table row, read from the table's own column header."""

    lead: tuple[str, ...]  # size count type [redop root]
    group: tuple[str, ...]  # time algbw busbw [#wrong ...], once per placement
    timestamp: bool  # a trailing "YYYY-MM-DD HH:MM:SS" (-S 1)


@dataclass
class Run:
    """What one nccl-tests run printed; a text file may hold several, one after another."""

    line: int
    program: str | None = None
    settings: dict[str, int] = field(default_factory=dict)
    ranks: list[RankLine] = field(default_factory=list)
    ranks_are_processes: bool = False  # JSON lists each process's first rank only
    layout: Layout | None = None
    cputime: bool = False
    rows: list[RawRow] = field(default_factory=list)
    footer_busbw: tuple[float, float] | None = None  # value, resolution
    footer_wrong: int | None = None
    ended: bool = False  # the footer was printed: the run finished its table
    failure: str | None = None  # the first line saying the run died, "line N: ..."
    command: Command | None = None  # the command line (or label) printed before the run
    bad_row: NcclTestsFormatError | None = None  # an unreadable table line, pending
    across_ranks: AcrossRanks = "avg"
    notes: list[Finding] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    launch: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    wall_s: float | None = None


def fail(where: str, message: str) -> NcclTestsFormatError:
    return NcclTestsFormatError(f"{where}: {message}")


def location(source: str, loc: str) -> str:
    """'file:14' for a text line, 'file results[3]' for a JSON record."""
    return f"{source}:{loc}" if loc.isdigit() else f"{source} {loc}"


def clip(text: str, width: int = 120) -> str:
    """One line of someone else's output, short enough to quote in a message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def wrong_count(value: float | None) -> int | None:
    """#wrong: printed with %g (so 1e+06 for a million); N/A or negative means unchecked."""
    return None if value is None or not math.isfinite(value) or value < 0 else round(value)


def read_redop(text: str | None) -> str | None:
    return None if text is None or text.strip() in NO_REDOP else text.strip()


def run_location(run: Run, source: str) -> str:
    return location(source, str(run.line)) if not run.ranks_are_processes else source
