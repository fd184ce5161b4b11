"""Chart limits (torchscale.report.sections.limits): a chart past its limit keeps the series
that matter, every reference line of a kept series and no orphaned one, and says what it left
out."""

from __future__ import annotations

from torchscale.report.model import Chart, Series
from torchscale.report.sections.limits import (
    MAX_BOX_SERIES,
    MAX_CATEGORIES,
    MAX_LINES,
    cap_chart,
)


def _line_chart(groups: int) -> Chart:
    series = []
    for i in range(groups):
        series.append(Series(name=f"g{i}", x=[1, 2], y=[float(i), float(i) * 1.5]))
        series.append(
            Series(
                name=f"ideal (g{i})",
                x=[1, 2],
                y=[float(i), 2.0 * i],
                style="dashed",
                reference_for=f"g{i}",
            )
        )
    series.append(Series(name="ideal", x=[1, 2], y=[1.0, 1.0], style="dashed"))
    return Chart(id="c", title="t", kind="line", x_label="x", y_label="y", series=series)


def test_lines_within_the_limit_are_untouched() -> None:
    chart = _line_chart(MAX_LINES)
    assert cap_chart(chart) == chart


def test_lines_keep_the_highest_peaks_with_their_own_references() -> None:
    capped = cap_chart(_line_chart(MAX_LINES + 3))
    kept = [s.name for s in capped.series if s.style == "solid"]
    assert kept == [f"g{i}" for i in range(3, MAX_LINES + 3)]  # the highest peaks
    references = [s.reference_for for s in capped.series if s.reference_for is not None]
    assert references == kept  # one per kept series, none for a dropped one
    assert any(s.name == "ideal" for s in capped.series)  # unattached reference stays
    assert capped.note == (
        f"{MAX_LINES} of {MAX_LINES + 3} series drawn (highest peaks); every group is in the "
        "table above"
    )


def test_bars_keep_the_first_categories_in_every_series() -> None:
    labels = [f"cell {i}" for i in range(MAX_CATEGORIES + 5)]
    chart = Chart(
        id="b",
        title="t",
        kind="bar",
        x_label="x",
        y_label="y",
        series=[
            Series(
                name="a",
                x=labels,
                y=[1.0] * len(labels),
                low=[0.5] * len(labels),
                high=[2.0] * len(labels),
            ),
            Series(name="b", x=labels[-3:], y=[3.0, 3.0, 3.0]),
        ],
    )
    capped = cap_chart(chart)
    assert [s.name for s in capped.series] == ["a"]  # b had only dropped categories
    (a,) = capped.series
    assert a.x == labels[:MAX_CATEGORIES]
    assert a.low is not None and len(a.low) == MAX_CATEGORIES
    assert capped.note is not None and f"first {MAX_CATEGORIES} of {len(labels)}" in capped.note


def test_boxes_keep_the_first_groups() -> None:
    series = [Series(name=f"g{i}", x=[1], values=[[1.0, 2.0]]) for i in range(MAX_BOX_SERIES + 2)]
    chart = Chart(id="x", title="t", kind="box", x_label="x", y_label="y", series=series)
    capped = cap_chart(chart)
    assert [s.name for s in capped.series] == [f"g{i}" for i in range(MAX_BOX_SERIES)]
    assert capped.note is not None and "groups drawn" in capped.note
