"""The kind of a warning written as plain words (results of schema 16 or older), classified
once, when the result is upgraded: since schema 17 each warning carries the kind its writer
gave it (`CellWarning`), and no table reads a warning's words."""

from __future__ import annotations

import re
from typing import Any

from torchscale.contracts.schema.cell_result import WarningKind

# first match wins: the words each kind of warning was written with up to schema 16
WORDS: tuple[tuple[WarningKind, re.Pattern[str]], ...] = (
    ("high variance", re.compile(r"variance|\bCV\b", re.IGNORECASE)),
    ("throttling", re.compile(r"throttl|thermal|power (cap|limit)|clocks?\b", re.IGNORECASE)),
    ("injected delay", re.compile(r"inject", re.IGNORECASE)),
    ("busy machine", re.compile(r"busy machine", re.IGNORECASE)),
    ("contention", re.compile(r"oversubscri|contention", re.IGNORECASE)),
)


def kind_of(text: str) -> WarningKind:
    """The kind an older warning's words say."""
    return next((kind for kind, words in WORDS if words.search(text)), "other")


def typed(warnings: Any) -> Any:
    """A result's `warnings` as schema 17 stores them: plain words get their kind; anything
    else is left for validation to judge."""
    if not isinstance(warnings, list):
        return warnings
    return [{"kind": kind_of(w), "text": w} if isinstance(w, str) else w for w in warnings]
