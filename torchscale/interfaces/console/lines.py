"""A terminal line with its level: the CLI colours by level, never by searching the text."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

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
# "[0.0157, 0.65]", "[590, 644]", "[900 us, 1.20]": a figure's interval, kept on one row
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
        out += [Line(line.level, row) for row in _wrap(line.text, width, indent)]
    return out


# rich wraps at any Unicode whitespace, a no-break space too: its cells are glued with a
# private-use character instead (one column wide, never whitespace), a space again once printed
RICH_JOIN = "\ue000"


def glued(text: str, join: str = NO_BREAK) -> str:
    """`text` with `join` where a break would cut a figure: inside its interval ('[1.97,
    4.37]') and between a number and its unit ('+3.13 ms'). textwrap breaks only at ASCII
    whitespace (NO_BREAK holds); rich needs RICH_JOIN. `unglued` turns both back into
    spaces."""
    return _GLUED.sub(join, _INTERVAL.sub(lambda m: m.group(0).replace(" ", join), text))


def unglued(text: str) -> str:
    return text.replace(NO_BREAK, " ").replace(RICH_JOIN, " ")


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """`text` cut at word boundaries to `width`, rows after the first starting `indent`; never
    inside a figure, its interval or between a number and its unit."""
    rows = textwrap.wrap(
        glued(text),
        width=width,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [row.replace(NO_BREAK, " ") for row in rows] or [text]


# what a paragraph's later rows line up under: its leading spaces, a list marker ('-', '1.',
# 'What to do: 1.') and a severity mark ('▲ ')
_HANG = re.compile(r"^\s*(?:(?:What to do: )?\d+\.\s|[-•·]\s)?(?:[✖▲✔]\s)?")


def hanging_prose(item: Any, width: int) -> Any:
    """A rich renderable as printed at `width`: a plain paragraph (a `rich.text.Text` with no
    styled spans) with `hanging` rows, anything else (a table, a rule) as it is."""
    from rich.text import Text

    if isinstance(item, Text) and not item.spans and "\n" not in item.plain:
        return Text(hanging(item.plain, width), style=item.style)
    return item


def hanging(text: str, width: int) -> str:
    """A paragraph (a report's headline, a list item) cut to `width` with its later rows
    indented under its first word, never inside a figure: a list item stays readable as one,
    where a plain wrap puts its continuation at column 0."""
    if len(text) <= width or width < 20:
        return text
    lead = _HANG.match(text)
    indent = " " * min(len(lead.group(0)) if lead else 0, width // 3)
    return "\n".join(_wrap(text, width, indent or "  "))
