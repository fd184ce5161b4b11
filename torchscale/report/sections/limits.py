"""Limits on what one chart draws, so that a 500-cell sweep gives charts a person can read
(and a PDF that lays out in seconds). Tables keep every row; a chart that had to leave data out
says so in its note and points at the table that has all of it. Pure functions over the model.
"""

from __future__ import annotations

from torchscale.report.model import Chart, Series

MAX_LINES = 8  # measured series per line chart (each with its own ideal line, if any)
MAX_CATEGORIES = 40  # x categories per bar / stacked bar chart
MAX_BOX_SERIES = 8  # series per box chart


def _peak(series: Series) -> float:
    values = [v for v in series.y if v is not None]
    return max(values) if values else float("-inf")


def _cap_lines(chart: Chart) -> Chart:
    measured = [s for s in chart.series if s.style == "solid"]
    if len(measured) <= MAX_LINES:
        return chart
    keep = {id(s) for s in sorted(measured, key=_peak, reverse=True)[:MAX_LINES]}
    names = {s.name for s in measured if id(s) in keep}
    series = [
        s
        for s in chart.series
        if id(s) in keep
        or (s.style != "solid" and (s.reference_for is None or s.reference_for in names))
    ]
    note = (
        f"{MAX_LINES} of {len(measured)} series drawn (highest peaks); every group is in the "
        "table above"
    )
    return chart.model_copy(update={"series": series, "note": _join(chart.note, note)})


def _cap_categories(chart: Chart) -> Chart:
    categories: list[object] = []
    for series in chart.series:
        for x in series.x:
            if x not in categories:
                categories.append(x)
    if len(categories) <= MAX_CATEGORIES:
        return chart
    kept = set(categories[:MAX_CATEGORIES])
    trimmed: list[Series] = []
    for s in chart.series:
        index = [i for i, x in enumerate(s.x) if x in kept]
        if not index:
            continue
        trimmed.append(
            s.model_copy(
                update={
                    "x": [s.x[i] for i in index],
                    "y": [s.y[i] for i in index],
                    "low": [s.low[i] for i in index] if s.low is not None else None,
                    "high": [s.high[i] for i in index] if s.high is not None else None,
                }
            )
        )
    note = f"first {MAX_CATEGORIES} of {len(categories)} shown; all of them are in the tables"
    return chart.model_copy(update={"series": trimmed, "note": _join(chart.note, note)})


def _cap_boxes(chart: Chart) -> Chart:
    if len(chart.series) <= MAX_BOX_SERIES:
        return chart
    note = (
        f"first {MAX_BOX_SERIES} of {len(chart.series)} groups drawn; the percentiles of all "
        "are in the tables"
    )
    return chart.model_copy(
        update={"series": chart.series[:MAX_BOX_SERIES], "note": _join(chart.note, note)}
    )


def _join(note: str | None, extra: str) -> str:
    return f"{note}; {extra}" if note else extra


def cap_chart(chart: Chart) -> Chart:
    """The chart with at most MAX_LINES line series, MAX_CATEGORIES bar categories or
    MAX_BOX_SERIES box groups; unchanged when within the limits."""
    if chart.kind == "line":
        return _cap_lines(chart)
    if chart.kind in ("bar", "stacked_bar"):
        return _cap_categories(chart)
    if chart.kind == "box":
        return _cap_boxes(chart)
    return chart
