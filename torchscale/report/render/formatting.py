"""Value formatting shared by every renderer, so a figure reads the same in HTML, PDF, Markdown
and the terminal. Pure functions: raw value + `ValueFormat` -> text. None, NaN and infinities
render as '-' (the model says why elsewhere)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from torchscale.report.model import Series, ValueFormat

MISSING = "-"
# the mark of a severity in every format, so a flagged row or figure survives greyscale print
SEVERITY_MARK = {"bad": "\u2716", "warn": "\u25b2", "good": "\u2714", "info": ""}
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def significant(value: float, digits: int = 3) -> str:
    """`digits` significant figures without scientific notation for everyday magnitudes."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    return text


def seconds(value: float) -> str:
    """Seconds as us / ms / s, three significant figures."""
    size = abs(value)
    if size == 0:
        return "0 s"
    if size < 1e-3:
        return f"{significant(value * 1e6)} us"
    if size < 1.0:
        return f"{significant(value * 1e3)} ms"
    return f"{significant(value)} s"


def size_bytes(value: float) -> str:
    size, unit = float(value), 0
    while abs(size) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        size /= 1024
        unit += 1
    return f"{size:.0f} {_BYTE_UNITS[unit]}" if unit == 0 else f"{size:.1f} {_BYTE_UNITS[unit]}"


def format_value(value: Any, fmt: ValueFormat) -> str:
    """The text of one value in one format."""
    if fmt == "text":
        return MISSING if value is None else str(value)
    number = _number(value)
    if number is None:
        return MISSING if value is None or isinstance(value, (int, float)) else str(value)
    if fmt == "int":
        return f"{round(number):,}"
    if fmt == "float":
        return significant(number)
    if fmt == "ratio_pct":
        return f"{number * 100:.1f} %"
    if fmt == "pct":
        return f"{number:.1f} %"
    if fmt == "seconds":
        return seconds(number)
    if fmt == "us":
        return seconds(number / 1e6)
    if fmt == "bytes":
        return size_bytes(number)
    if fmt == "rate":
        return f"{number:,.1f}" if abs(number) < 1e5 else f"{number:,.0f}"
    if fmt == "change_pct":
        return f"{number * 100:+.1f} %"
    if fmt == "money":
        return f"${number:,.2f}" if abs(number) >= 0.01 else f"${number:.4f}"
    raise ValueError(f"unknown value format {fmt!r}")


def severity_prefix(severity: str) -> str:
    """The severity's mark and a space, for text formats ('' for info)."""
    mark = SEVERITY_MARK.get(severity, "")
    return f"{mark} " if mark else ""


def template_environment(folder: str, **globals_: Any) -> Any:
    """A Jinja2 environment over the package folder `torchscale/report/<folder>`: autoescape on
    for everything (every user string is escaped), undefined names are errors rather than
    blanks, `format_value` available as the `fmt` filter and global."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("torchscale.report", folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = format_value
    env.globals.update(fmt=format_value, format_value=format_value, **globals_)
    return env


def reference_legend(series: Sequence[Series]) -> Series | None:
    """The series whose legend entry stands for every reference line attached to a series
    (`reference_for`): the first of them; None when there is none. Its label is
    `reference_label`."""
    return next((s for s in series if s.reference_for is not None), None)


def reference_label(reference: Series) -> str:
    """ "ideal (dashed, in its series' colour)" for "ideal (b8 fp32 ddp)": what every attached
    reference line shares, for their one legend entry."""
    return f"{reference.name.split(' (')[0]} ({reference.style}, in its series' colour)"


MAX_LOG_TICKS = 8  # beyond this, labels on a log x axis (28 message sizes) run together


def thin_ticks(ticks: list[float]) -> list[float]:
    """Every k-th tick of a sorted list so that at most MAX_LOG_TICKS remain, the last kept."""
    if len(ticks) <= MAX_LOG_TICKS:
        return ticks
    step = -(-len(ticks) // MAX_LOG_TICKS)
    kept = ticks[::-1][::step][::-1]
    return kept
