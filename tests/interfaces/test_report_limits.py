"""Chart limits (torchscale.interfaces.report.charts.limits): a chart past its limit keeps the
series that matter, every reference line of a kept series and no orphaned one, never draws more than
MAX_SERIES series, and says in its title what it kept and why."""

from __future__ import annotations

from torchscale.interfaces.report.charts.limits import (
    MAX_BARS,
    MAX_BOX_SERIES,
    MAX_CATEGORIES,
    MAX_SERIES,
    OTHERS,
    cap_chart,
)
from torchscale.interfaces.report.model import Chart, Series


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


# lines of their own, each with its reference, beside one unattached reference
ROOM = (MAX_SERIES - 1) // 2


def test_lines_within_the_limit_are_untouched() -> None:
    chart = _line_chart(ROOM)
    assert cap_chart(chart) is chart


def test_lines_keep_the_highest_peaks_with_their_own_references() -> None:
    capped = cap_chart(_line_chart(ROOM + 3))
    kept = [s.name for s in capped.series if s.style == "solid"]
    assert kept == [f"g{i}" for i in range(3, ROOM + 3)]  # the highest peaks
    references = [s.reference_for for s in capped.series if s.reference_for is not None]
    assert references == kept  # one per kept series, none for a dropped one
    assert any(s.name == "ideal" for s in capped.series)  # unattached reference stays
    assert len(capped.series) <= MAX_SERIES
    assert capped.title == f"t · {ROOM} of {ROOM + 3} series: the widest, highest series"
    assert capped.note == f"all {ROOM + 3} series are in the table above"


def test_lines_without_references_keep_twelve() -> None:
    series = [Series(name=f"g{i}", x=[1, 2], y=[float(i), 1.0]) for i in range(20)]
    chart = Chart(id="c", title="t", kind="line", x_label="x", y_label="y", series=series)
    capped = cap_chart(chart)
    assert [s.name for s in capped.series] == [f"g{i}" for i in range(20 - MAX_SERIES, 20)]


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
            # disjoint from a: one bar per category, so the single-series limit holds
            Series(name="b", x=labels[-3:], y=[None, None, None]),
        ],
    )
    capped = cap_chart(chart)
    assert [s.name for s in capped.series] == ["a"]  # b had only dropped categories
    (a,) = capped.series
    assert a.x == labels[:MAX_CATEGORIES]
    assert a.low is not None and len(a.low) == MAX_CATEGORIES
    assert f"first {MAX_CATEGORIES} of {len(labels)} shown" in capped.title


def test_grouped_bars_keep_at_most_max_bars() -> None:
    """Seen at 500 cells: 250 groups x 2 layouts side by side."""
    groups = [f"group {i}" for i in range(250)]
    series = [Series(name=layout, x=groups, y=[1.0] * 250) for layout in ("ddp", "fsdp")]
    chart = Chart(id="s", title="t", kind="bar", x_label="x", y_label="y", series=series)
    capped = cap_chart(chart)
    assert [len(s.x) for s in capped.series] == [MAX_BARS // 2] * 2
    assert f"first {MAX_BARS // 2} of 250" in capped.title


def test_grouped_bars_keep_the_highest_series() -> None:
    series = [Series(name=f"g{i}", x=["a", "b"], y=[float(i), 0.0]) for i in range(30)]
    chart = Chart(id="s", title="t", kind="bar", x_label="x", y_label="y", series=series)
    capped = cap_chart(chart)
    assert [s.name for s in capped.series] == [f"g{i}" for i in range(30 - MAX_SERIES, 30)]
    assert capped.title == f"t · {MAX_SERIES} of 30 series: the widest, highest series"


def test_a_stack_keeps_its_largest_parts_and_sums_the_rest() -> None:
    parts = [Series(name=f"p{i}", x=["r0", "r1"], y=[float(i), 2.0 * i]) for i in range(15)]
    chart = Chart(id="s", title="t", kind="stacked_bar", x_label="x", y_label="y", series=parts)
    capped = cap_chart(chart)
    assert len(capped.series) == MAX_SERIES
    others = capped.series[-1]
    assert others.name == OTHERS
    assert others.y == [0.0 + 1 + 2 + 3, 0.0 + 2 + 4 + 6]  # p0-p3, the four smallest
    # the stack's total is unchanged
    assert sum(s.y[1] or 0.0 for s in capped.series) == sum(2.0 * i for i in range(15))
    assert capped.note is not None and "p0, p1, p2, p3" in capped.note


def test_boxes_keep_the_first_groups() -> None:
    series = [Series(name=f"g{i}", x=[1], values=[[1.0, 2.0]]) for i in range(MAX_BOX_SERIES + 2)]
    chart = Chart(id="x", title="t", kind="box", x_label="x", y_label="y", series=series)
    capped = cap_chart(chart)
    assert [s.name for s in capped.series] == [f"g{i}" for i in range(MAX_BOX_SERIES)]
    assert f"first {MAX_BOX_SERIES} of {MAX_BOX_SERIES + 2} groups shown" in capped.title


def test_capping_twice_changes_nothing() -> None:
    chart = _line_chart(ROOM + 3)
    once = cap_chart(chart)
    assert cap_chart(once) is once
