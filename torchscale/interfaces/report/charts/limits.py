"""Limits on what one chart draws, so that a 500-cell sweep gives charts a person can read (what
each kind keeps: docs/reporting.md, "Formats": "Readable at any size"). Tables keep every row; a
chart that left data out says in its title what it kept and why ("11 of 100 series: the highest
peak of each model"). Applied when the report is built, so every format (JSON and terminal
included) holds the chart that is drawn. At most MAX_SERIES series, so each has a colour of its
own (`palette.PALETTE`); the highest of each model first (`pick`), so every model stays on."""

from __future__ import annotations

import math

from torchscale.interfaces.report.charts.data import categories, disjoint, finite_values
from torchscale.interfaces.report.model import Chart, Findings, Series, Table

MAX_SERIES = 12  # series drawn on one chart (reference lines included)
MAX_CATEGORIES = 40  # x categories per bar / stacked bar chart
MAX_BARS = 60  # bars on one grouped bar chart (categories x series)
MAX_BOX_SERIES = 8  # series per box chart
OTHERS = "others"


def _rank(series: Series) -> tuple[int, float, float]:
    """The widest series first (a kept set of lines that all end at 2 ranks on an axis to 16
    reads as if nothing ran further), then the highest peak, then (every efficiency line starts
    at 100 %) the higher mean."""
    values = finite_values(series.y)
    if not values:
        return 0, float("-inf"), float("-inf")
    return len(values), max(values), sum(values) / len(values)


def _distinct_first(ranked: list[Series]) -> list[Series]:
    """`ranked` with a series that repeats an earlier one point for point moved to the end:
    eleven kept lines drawn on top of each other read as one."""
    seen: set[tuple[tuple[object, ...], tuple[object, ...]]] = set()
    first: list[Series] = []
    again: list[Series] = []
    for series in ranked:
        shape = (tuple(series.x), tuple(series.y))
        (again if shape in seen else first).append(series)
        seen.add(shape)
    return first + again


def _total(series: Series) -> float:
    return sum(abs(v) for v in finite_values(series.y))


def join_notes(note: str | None, extra: str) -> str:
    """`extra` after a chart's or table's note, or alone."""
    return f"{note}; {extra}" if note else extra


def cut(block: Table | Findings, field: str, keep: int, note: str) -> Table | Findings:
    """`block` with its first `keep` rows or findings (`field`), `note` after its own note."""
    kept = getattr(block, field)[:keep]
    return block.model_copy(update={field: kept, "note": join_notes(block.note, note)})


def _capped(chart: Chart, series: list[Series], kept: str, note: str, **more: object) -> Chart:
    """The chart cut to `series`: its title says what it kept (where it is read first), its
    note where the rest is."""
    title = f"{chart.title} · {kept}"
    update = {"series": series, "title": title, "note": join_notes(chart.note, note), **more}
    return chart.model_copy(update=update)


def pick(series: list[Series], room: int) -> tuple[list[Series], str]:
    """The `room` series to draw and why: the widest, highest series of each model first (so
    a chart of many models shows every one of them, not the one whose series happen to rank
    highest), then the rest by the same rank, a repeat of a kept line last. The reason reads
    after 'n of m series: '."""
    ranked = _distinct_first(sorted(series, key=_rank, reverse=True))
    models = list(dict.fromkeys(s.model for s in ranked if s.model is not None))
    if len(models) < 2:
        return ranked[:room], "the widest, highest series"
    firsts = [next(s for s in ranked if s.model == m) for m in models][:room]
    chosen = {id(s) for s in firsts}
    rest = _distinct_first([s for s in ranked if id(s) not in chosen])[: room - len(firsts)]
    if len(firsts) < len(models):
        reason = f"the widest, highest series of {len(firsts)} of {len(models)} models"
    elif rest:
        reason = "the widest, highest series of each model, then the others"
    else:
        reason = "the widest, highest series of each model"
    return [*firsts, *rest], reason


def _cap_lines(chart: Chart) -> Chart:
    measured = [s for s in chart.series if s.style == "solid" and s.reference_for is None]
    references = {s.reference_for for s in chart.series if s.reference_for is not None}
    unattached = [s for s in chart.series if s.style != "solid" and s.reference_for is None]
    per_series = 2 if references else 1
    room = max(1, (MAX_SERIES - len(unattached)) // per_series)
    if len(measured) <= room:
        return chart
    picked, reason = pick(measured, room)
    keep = {id(s) for s in picked}
    names = {s.name for s in picked}
    series = [
        s
        for s in chart.series
        if id(s) in keep
        or (s.style != "solid" and s.reference_for is None)
        or (s.reference_for is not None and s.reference_for in names)
    ]
    kept = f"{room} of {len(measured)} series: {reason}"
    return _capped(chart, series, kept, f"all {len(measured)} series are in the table above")


def _keep_categories(series: Series, kept: set[float | int | str]) -> Series:
    index = [i for i, x in enumerate(series.x) if x in kept]
    return series.model_copy(
        update={
            "x": [series.x[i] for i in index],
            "y": [series.y[i] for i in index if i < len(series.y)],
            "low": [series.low[i] for i in index] if series.low is not None else None,
            "high": [series.high[i] for i in index] if series.high is not None else None,
        }
    )


def by_model(
    every: list[float | int | str], models: dict[str, str], limit: int
) -> tuple[set[float | int | str], str]:
    """`limit` of the categories `every` (in the table's order) and what they are: the first of
    each model in turn, so that every model of the sweep appears (the first `limit` alone
    were one model's at 500 cells); the first `limit` where the categories are one model's."""
    groups: dict[str, list[float | int | str]] = {}
    for x in every:
        groups.setdefault(models.get(str(x), ""), []).append(x)
    if len(groups) < 2:
        return set(every[:limit]), f"first {limit} of {len(every)} shown, in the table's order"
    kept: list[float | int | str] = []
    for turn in range(max(len(g) for g in groups.values())):
        kept += [g[turn] for g in groups.values() if turn < len(g)][: limit - len(kept)]
        if len(kept) >= limit:
            break
    counts = sorted({sum(1 for x in kept if x in g) for g in groups.values()} - {0})
    shown = sum(1 for g in groups.values() if any(x in g for x in kept))
    each = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    whom = "each model" if shown == len(groups) else f"{shown} of {len(groups)} models"
    return set(kept), f"{limit} of {len(every)} shown: the first {each} of {whom}"


def _cap_categories(chart: Chart) -> Chart:
    every = categories(chart.series)
    limit = MAX_CATEGORIES
    if chart.kind == "bar" and len(chart.series) > 1 and not disjoint(chart.series):
        limit = max(1, min(limit, MAX_BARS // len(chart.series)))  # side by side: bars add up
    if len(every) <= limit:
        return chart
    kept, said = by_model(every, chart.category_models, limit)
    trimmed = [s for s in (_keep_categories(s, kept) for s in chart.series) if s.x]
    models = {k: v for k, v in chart.category_models.items() if k in kept}
    return _capped(
        chart, trimmed, said, f"all {len(every)} are in the tables", category_models=models
    )


def _cap_bar_series(chart: Chart) -> Chart:
    """Grouped bars: the series with the highest peaks."""
    if len(chart.series) <= MAX_SERIES:
        return chart
    picked, reason = pick(chart.series, MAX_SERIES)
    keep = {id(s) for s in picked}
    series = [s for s in chart.series if id(s) in keep]
    kept = f"{MAX_SERIES} of {len(chart.series)} series: {reason}"
    return _capped(chart, series, kept, f"all {len(chart.series)} series are in the tables")


def _cap_stack(chart: Chart) -> Chart:
    """Stacked bars: the largest MAX_SERIES - 1 parts, the rest summed into "others" (the
    total stays)."""
    if len(chart.series) <= MAX_SERIES:
        return chart
    largest = {id(s) for s in sorted(chart.series, key=_total, reverse=True)[: MAX_SERIES - 1]}
    kept = [s for s in chart.series if id(s) in largest]
    rest = [s for s in chart.series if id(s) not in largest]
    sums: dict[object, float] = {}
    for s in rest:
        for x, y in zip(s.x, s.y, strict=False):
            if y is not None and math.isfinite(y):
                sums[x] = sums.get(x, 0.0) + y
    where = [x for x in categories(chart.series) if x in sums]
    others = Series(name=OTHERS, x=where, y=[sums[x] for x in where])
    note = (
        f"{OTHERS}: the sum of the {len(rest)} smallest parts ({', '.join(s.name for s in rest)})"
    )
    kept_text = f"the {len(kept)} largest of {len(chart.series)} parts, the rest as '{OTHERS}'"
    return _capped(chart, [*kept, others], kept_text, note)


def _cap_boxes(chart: Chart) -> Chart:
    if len(chart.series) <= MAX_BOX_SERIES:
        return chart
    note = f"the percentiles of all {len(chart.series)} groups are in the tables"
    kept = f"first {MAX_BOX_SERIES} of {len(chart.series)} groups shown, in the table's order"
    return _capped(chart, chart.series[:MAX_BOX_SERIES], kept, note)


def cap_chart(chart: Chart) -> Chart:
    """The chart within the limits of this module (see its docstring); unchanged, the same
    object, when already within them, so capping twice changes nothing."""
    if chart.kind == "line":
        return _cap_lines(chart)
    if chart.kind == "bar":
        return _cap_categories(_cap_bar_series(chart))
    if chart.kind == "stacked_bar":
        return _cap_categories(_cap_stack(chart))
    if chart.kind == "box":
        return _cap_boxes(chart)
    return chart
