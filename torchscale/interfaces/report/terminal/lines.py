"""A terminal line with its level: the CLI colours by level, never by searching the text.

Layer 4 (presentation) of docs/architecture.md: imports only rich.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich.markup import escape

Level = Literal["info", "warn", "fail", "skip", "head"]
LEVEL_STYLE: dict[Level, str] = {
    "info": "",
    "warn": "yellow",
    "fail": "bold red",
    "skip": "dim",
    "head": "bold",
}


@dataclass(frozen=True)
class Line:
    level: Level
    text: str

    def markup(self) -> str:
        """Rich markup with every piece of text escaped."""
        style = LEVEL_STYLE[self.level]
        return f"[{style}]{escape(self.text)}[/]" if style else escape(self.text)


__all__ = ["LEVEL_STYLE", "Level", "Line"]
