"""Reading a chart's values: which are drawable, which categories there are, whether bar series
overlap. Shared by the limits and the plot so both read the data alike."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from torchscale.interfaces.report.model import Series
from torchscale.offline.analysis.numbers import finite


def category_models(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(category, model) pairs as `Chart.category_models`: empty where one model has them all
    (nothing for a cap to balance)."""
    mapping = dict(pairs)
    return mapping if len(set(mapping.values())) >= 2 else {}


def finite_values(values: Iterable[float | int | None]) -> list[float]:
    return [v for v in (finite(x) for x in values) if v is not None]


def category_key(x: float | int | str) -> str:
    """One key per category whether given as 4, 4.0 or "4.0"-like text kept apart."""
    return x if isinstance(x, str) else repr(float(x))


def categories(series: Sequence[Series]) -> list[float | int | str]:
    """The x values of categorical charts, in order of first appearance across series."""
    first: dict[str, float | int | str] = {}
    for s in series:
        for x in s.x:
            first.setdefault(category_key(x), x)
    return list(first.values())


def disjoint(series: Sequence[Series]) -> bool:
    """Whether no category has a drawable value in more than one series (a bar chart coloured
    by verdict: one series per verdict), so each bar can take its category's full width."""
    seen: set[str] = set()
    for s in series:
        own = {category_key(x) for x, y in zip(s.x, s.y, strict=False) if finite(y) is not None}
        if own & seen:
            return False
        seen |= own
    return len(series) > 1
