"""A terminal line with its level: the CLI colours by level, never by searching the text.

Layer 4 (presentation) of docs/architecture.md: imports only rich.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
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


# a unit never leaves its number at a line break ("4.5 %", "12 ms"): the space becomes a
# no-break space (not whitespace to textwrap) while the line is cut, then a space again
_GLUED = re.compile(
    r"(?<=\d) (?=%|±|(?:ms|us|µs|s|x|B|KB|MB|GB|KiB|MiB|GiB|cores?|W|MHz)\b|"
    r"(?:samples|img|tokens)/s(?:ec)?\b|[KMG]?B/s\b)"
)
NO_BREAK = "\u00a0"
# "[0.0157, 0.65]", "[590 us, 644 us]": a figure's interval, numbers only, kept on one row
_INTERVAL = re.compile(r"\[[-+]?\d[^\]\s]*(?: [-+]?[\d.,]*[^\]\s]*){1,3}\]")
CONTINUATION = ">   "  # a wrapped line's next rows: grep '^>' still finds them


def fit_lines(lines: Iterable[Line], width: int) -> list[Line]:
    """`lines` cut at word boundaries to at most `width` columns, never inside a figure, its
    interval ('[0.0157, 0.65]') or between a number and its unit; a row after the first
    starts with CONTINUATION (a line that did not start with '> ' continues with two spaces).
    A word longer than the width (a path) keeps its row, wider than `width`, rather than be
    cut."""
    out: list[Line] = []
    for line in lines:
        if len(line.text) <= width or width < 20:
            out.append(line)
            continue
        indent = CONTINUATION if line.text.startswith("> ") else "  "
        glued = _INTERVAL.sub(lambda m: m.group(0).replace(" ", NO_BREAK), line.text)
        glued = _GLUED.sub(NO_BREAK, glued)
        rows = textwrap.wrap(
            glued,
            width=width,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        out += [Line(line.level, row.replace(NO_BREAK, " ")) for row in rows]
    return out


__all__ = ["CONTINUATION", "LEVEL_STYLE", "Level", "Line", "fit_lines"]
