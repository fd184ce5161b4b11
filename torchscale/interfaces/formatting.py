"""Value formatting shared by every surface, so a figure reads the same in HTML, PDF, Markdown
and the terminal. Pure functions: raw value + `ValueFormat` -> text. None, NaN and infinities
render as '-' (the model says why elsewhere). It imports nothing else of interfaces/, so the
report, its renderers and charts, and the console all stand above it."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from torchscale.contracts.wording.spell import format_value


class Referenced(Protocol):
    """What a reference line's legend reads of a chart series (the model's `Series`)."""

    @property
    def name(self) -> str: ...

    @property
    def style(self) -> str: ...

    @property
    def reference_for(self) -> str | None: ...


SeriesT = TypeVar("SeriesT", bound=Referenced)

# the mark of a severity in every format, so a flagged row or figure survives greyscale print
SEVERITY_MARK = {"bad": "\u2716", "warn": "\u25b2", "good": "\u2714", "info": ""}


def severity_prefix(severity: str) -> str:
    """The severity's mark and a space, for text formats ('' for info)."""
    mark = SEVERITY_MARK.get(severity, "")
    return f"{mark} " if mark else ""


def template_environment(folder: str, **globals_: Any) -> Any:
    """A Jinja2 environment over the package folder `torchscale/interfaces/report/<folder>`:
    autoescape on for everything (every user string is escaped), undefined names are errors rather
    than blanks, `format_value` available as the `fmt` filter and global."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("torchscale.interfaces.report", folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = format_value
    env.filters["inline"] = inline_html
    env.globals.update(fmt=format_value, format_value=format_value, **globals_)
    return env


def reference_legend(series: Sequence[SeriesT]) -> SeriesT | None:
    """The series whose legend entry stands for every reference line attached to a series
    (`reference_for`): the first of them; None when there is none. Its label is
    `reference_label`."""
    return next((s for s in series if s.reference_for is not None), None)


def reference_label(reference: Referenced) -> str:
    """ "ideal (dashed, in its series' colour)" for "ideal (b8 fp32 ddp)": what every attached
    reference line shares, for their one legend entry."""
    return f"{reference.name.split(' (')[0]} ({reference.style}, in its series' colour)"


MAX_LOG_TICKS = 8  # beyond this, labels on a log x axis (28 message sizes) run together


def thin_ticks(ticks: list[float]) -> list[float]:
    """Every k-th tick of a sorted list so that at most MAX_LOG_TICKS remain, the last kept."""
    if len(ticks) <= MAX_LOG_TICKS:
        return ticks
    step = -(-len(ticks) // MAX_LOG_TICKS)
    return ticks[::-1][::step][::-1]


# ------------------------------------------------------------------ inline code in prose

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(text: str) -> list[tuple[str, bool]]:
    """`text` cut into (part, is_code) pieces at its `backtick` spans, so that a command named
    in a finding or note (`torchscale benchmark --resume`) is set as code by the HTML and PDF
    renderers and never shows its backticks. An unpaired backtick stays literal text."""
    parts: list[tuple[str, bool]] = []
    at = 0
    for match in _CODE_SPAN.finditer(text):
        if match.start() > at:
            parts.append((text[at : match.start()], False))
        parts.append((match.group(1), True))
        at = match.end()
    if at < len(text) or not parts:
        parts.append((text[at:], False))
    return parts


def inline_html(text: str | None) -> Any:
    """Prose as HTML (a Markup): every part escaped, code spans set as <code>, rate units in a
    no-wrap span (a line may break after a slash: 'tokens/|s'). The templates of the HTML and
    PDF reports pass user prose (findings, notes) through it."""
    from markupsafe import Markup

    if text is None:
        return Markup("")
    unit = Markup('<span class="nb">{}</span>')  # join escapes the other pieces
    return Markup("").join(
        Markup("<code>{}</code>").format(part)
        if code
        else Markup("").join(
            unit.format(p) if i % 2 else p for i, p in enumerate(_UNIT.split(part))
        )
        for part, code in code_spans(text)
    )


_UNIT = re.compile(r"\b([A-Za-z]+/s)\b")  # split: the rate units at odd places


def strip_code(text: str) -> str:
    """`text` without the backticks of its code spans (the terminal shows them as text)."""
    return "".join(part for part, _ in code_spans(text))


# ------------------------------------------------------------------ colours by meaning

# one colour per verdict, the same in the HTML and PDF charts: Okabe-Ito vermillion for a
# problem, bluish green for good, orange for a warning, grey for nothing to see
SEVERITY_COLOUR = {"bad": "#D55E00", "good": "#009E73", "warn": "#E69F00", "info": "#8C8C8C"}
BAND_COLOUR = "#8C8C8C"  # a chart's band (the noise interval), drawn light behind the data


# Heatmap colour scales, shared by plotly and the SVG writer (HTML, PDF) so that a colour means
# the same in every format. Lightness falls monotonically (greyscale print keeps the order) and the
# dark end is where the eye goes: dark red for the high end of a metric where high is worse
# (sync stall), dark blue for one where high is better (bandwidth). Stops evenly spaced 0-1.
def _evenly(*colours: str) -> tuple[tuple[float, str], ...]:
    return tuple((i / (len(colours) - 1), colour) for i, colour in enumerate(colours))


HEATMAP_SCALES = {
    "worse": _evenly("#ffffcc", "#fed976", "#fd8d3c", "#e31a1c", "#800026"),
    "better": _evenly("#f7fbff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"),
}


def heatmap_scale(higher_is: str | None) -> tuple[tuple[float, str], ...]:
    """The colour stops of a heatmap whose high values are `higher_is` ('better', 'worse';
    None: no judgement, drawn as 'better', which raises no alarm)."""
    return HEATMAP_SCALES["worse" if higher_is == "worse" else "better"]


def _rgb(colour: str) -> tuple[float, float, float]:
    return (int(colour[1:3], 16) / 255, int(colour[3:5], 16) / 255, int(colour[5:7], 16) / 255)


def scale_colour(stops: Sequence[tuple[float, str]], position: float) -> tuple[float, float, float]:
    """The RGB (0-1) of a colour scale at `position` (0-1), interpolated linearly as both
    plotly and matplotlib do."""
    position = min(1.0, max(0.0, position))
    for (p0, c0), (p1, c1) in itertools.pairwise(stops):
        if position <= p1:
            t = 0.0 if p1 == p0 else (position - p0) / (p1 - p0)
            a, b = _rgb(c0), _rgb(c1)
            return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)
    return _rgb(stops[-1][1])


def is_dark(rgb: tuple[float, float, float]) -> bool:
    """Whether white text reads better than black on `rgb` (relative luminance below 0.4)."""
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 0.4


# ------------------------------------------------------------------ axis ticks


def log_ticks(low: float, high: float) -> list[float]:
    """Ticks of a log axis from `low` to `high` (both > 0): 1, 2, 5 per decade while the axis
    spans at most three decades, else the decades only; one tick either side of the data so
    that the ends are labelled."""
    if not (low > 0 and high > 0):
        return []
    low, high = min(low, high), max(low, high)
    steps = (1.0, 2.0, 5.0) if math.log10(high / low) <= 3 else (1.0,)
    decades = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
    ticks = [round(step * 10.0**decade, 12) for decade in decades for step in steps]
    below = [t for t in ticks if t <= low]
    above = [t for t in ticks if t >= high]
    start = below[-1] if below else ticks[0]
    end = above[0] if above else ticks[-1]
    return [t for t in ticks if start <= t <= end]


# a figure written as text ('0.3 % ±0.1 %', '10.9 ms [1.43, 29.3]', '<2 %', '≈100 %',
# '-1.2 ms'): never split
_FIG_NUMBER = r"[<>≈~+±\-\u2212]?\d[\d.,]*"
_FIG_UNIT = r"(?:\s?[A-Za-z%µ]+(?:/[A-Za-z]+)?)?"
_FIG_VALUE = rf"{_FIG_NUMBER}{_FIG_UNIT}"
_FIG_SPREAD = rf"(?:\s?±\s?{_FIG_VALUE}|\s?\[{_FIG_VALUE}, {_FIG_VALUE}\])"
_FIGURE = re.compile(rf"^{_FIG_NUMBER}{_FIG_UNIT}{_FIG_SPREAD}?$")
_LONGEST_FIGURE = 32


def is_figure(cell: str) -> bool:
    """A figure written as text ('0.3 % ±0.1 %', '10.9 ms [1.43, 29.3]'): never split."""
    return len(cell) <= _LONGEST_FIGURE and bool(_FIGURE.match(cell))
