"""One warning of a cell's run (`CellWarning`), part of its result (cell_result.py) and of its
plan: in a module of its own, so planning (a dry run) builds this model and not the result's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record

# what a warning is about: the kind tables group warnings by, set where the warning is made
WarningKind = Literal[
    "high variance", "throttling", "injected delay", "busy machine", "contention", "other"
]


class CellWarning(Record):
    """One warning of a run: its kind, set by the code that writes it (so its words may change
    without moving it in a table), and what it is as a finding, worded when shown
    (contracts/wording/cell_warnings.py)."""

    kind: WarningKind
    finding: Finding = Field(description="the warning's code and figures")

    @classmethod
    def of(cls, kind: WarningKind, code: str, figures: dict[str, Any]) -> CellWarning:
        return cls(kind=kind, finding=Finding(code=code, figures=figures))
