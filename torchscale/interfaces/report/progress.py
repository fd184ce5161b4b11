"""How far a report's long work has come, as events the library sends (`on_step`): building
the model, drawing a PDF's charts, laying out and writing its pages. The terminal's text of
them is `console/progress.py`'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """Where one step of long report work stands: `done` of its `total` items ('charts': 12
    of 27). A step is announced with done=0 and ends with done=total; its items arrive in
    order, several at once where they were done in parallel."""

    stage: str  # build, charts, layout or pages (`console/progress.py` words them)
    done: int
    total: int


OnStep = Callable[[Step], None]


def ignore(step: Step) -> None:
    """The `OnStep` of a caller that follows nothing."""
