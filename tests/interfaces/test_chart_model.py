"""The chart model (torchscale.interfaces.report.charts): axes decided once (ticks round in the unit
shown, which axes start at zero), one colour per series, references in their series' colour,
and a legend bounded by its columns."""

from __future__ import annotations

import re

import pytest

from torchscale.interfaces.formatting import SEVERITY_COLOUR
from torchscale.interfaces.report.charts import palette
from torchscale.interfaces.report.charts.axes import (
    LABEL_MAX,
    linear_axis,
    log_axis,
    measured_log_axis,
    nice_step,
    zero_based,
)
from torchscale.interfaces.report.charts.limits import MAX_SERIES
from torchscale.interfaces.report.charts.plot import legend_columns, plot
from torchscale.interfaces.report.model import Chart, Series

ROUND = re.compile(r"^-?[\d,]+(\.\d{1,2})?( [A-Za-z%µ]+)?$")


@pytest.mark.parametrize(
    ("fmt", "values", "unit"),
    [
        ("bytes", [3_000_000.0], "MiB"),  # was "2.861023 MiB": ticks round in bytes
        ("bytes", [800_000.0, 200.0], "KiB"),
        ("bytes", [3e9], "GiB"),
        ("seconds", [0.075, 0.092], "ms"),
        ("us", [150.0, 900.0], "µs"),  # was "us"
        ("ratio_pct", [0.31, 0.93], "%"),
    ],
)
def test_ticks_are_round_in_the_unit_they_show(fmt: str, values: list[float], unit: str) -> None:
    axis = linear_axis("y", fmt, values, zero=zero_based("bar", fmt))  # type: ignore[arg-type]
    assert 3 <= len(axis.ticks) <= 7
    assert all(ROUND.match(text) for text in axis.tick_text), axis.tick_text
    assert all(text.endswith(unit) for text in axis.tick_text), axis.tick_text
    assert axis.low is not None and axis.high is not None
    assert axis.low <= min(values) and axis.high >= max(values)


def test_nice_steps() -> None:
    assert nice_step(2.93) == 0.5
    assert nice_step(100.0) == 20.0
    assert nice_step(0.7, integer=True) == 1.0
    assert nice_step(0.0) == 1.0


def test_zero_based_is_one_rule() -> None:
    # bars, stacks and boxes measure from zero; so do lines of times, sizes and shares
    for kind in ("bar", "stacked_bar", "box"):
        assert zero_based(kind, "rate")
    assert zero_based("line", "seconds") and zero_based("line", "ratio_pct")
    # a line of rates is fitted to its data
    assert not zero_based("line", "rate")
    fitted = linear_axis("y", "rate", [900.0, 1000.0], zero=False)
    assert fitted.low is not None and fitted.low > 800


def test_log_axes_span_their_ticks() -> None:
    axis = log_axis("y", "rate", [150.0, 4000.0, -1.0])  # <= 0 cannot be drawn on it
    assert axis.ticks == (100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0)
    assert (axis.low, axis.high) == (100.0, 5000.0)
    gpus = measured_log_axis("GPUs", "int", [1, 2, 4, 8, 16])
    assert gpus.tick_text == ("1", "2", "4", "8", "16")
    assert gpus.low is not None and gpus.low < 1 and gpus.high is not None and gpus.high > 16


def _bars(count: int, name_length: int = 4) -> Chart:
    return Chart(
        id="bars",
        title="bars",
        kind="bar",
        x_label="x",
        y_label="y",
        series=[
            Series(name=f"s{i}".ljust(name_length, "x"), x=["a", "b"], y=[1.0 + i, 2.0])
            for i in range(count)
        ],
    )


def test_every_series_has_a_colour_of_its_own() -> None:
    p = plot(_bars(MAX_SERIES))
    colours = [s.colour for s in p.series]
    assert len(set(colours)) == MAX_SERIES
    assert colours == list(palette.PALETTE)
    # and a hatch besides, for greyscale print
    assert p.series[1].hatch and p.series[0].hatch == ""


def test_references_take_their_series_colour_and_one_legend_entry() -> None:
    series = []
    for name in ("b8", "b16"):
        series += [
            Series(name=name, x=[1, 2], y=[1.0, 1.9]),
            Series(
                name=f"ideal ({name})", x=[1, 2], y=[1.0, 2.0], style="dashed", reference_for=name
            ),
        ]
    p = plot(
        Chart(id="c", title="t", kind="line", x_label="x", y_label="y", x_log2=True, series=series)
    )
    b8, ideal8, b16, ideal16 = p.series
    assert ideal8.colour == b8.colour and ideal16.colour == b16.colour != b8.colour
    assert ideal8.marker is None and ideal8.reference
    assert [e.label for e in p.legend] == ["b8", "b16", "ideal (dashed, in its series' colour)"]


def test_verdict_series_keep_their_verdict_colour() -> None:
    series = [
        Series(name="regression", x=["a"], y=[-0.2], severity="bad"),
        Series(name="improvement", x=["b"], y=[0.1], severity="good"),
    ]
    p = plot(Chart(id="c", title="t", kind="bar", x_label="x", y_label="y", series=series))
    assert [s.colour for s in p.series] == [SEVERITY_COLOUR["bad"], SEVERITY_COLOUR["good"]]
    assert p.bar_mode == "overlay"  # one full-width bar per category


def test_the_legend_stays_shorter_than_the_plot() -> None:
    """At 500 cells a legend had 250 entries: 1,000 px over a 100 px plot."""
    p = plot(_bars(40, name_length=90))
    assert len(p.series) <= MAX_SERIES
    assert all(len(e.label) <= LABEL_MAX for e in p.legend)
    assert p.legend_columns >= 2 and p.legend_rows <= 7
    short = plot(_bars(8))
    assert short.legend_columns == 4 and short.legend_rows == 2


def test_legend_columns() -> None:
    entries = plot(_bars(3, name_length=20)).legend
    assert legend_columns(entries) == 3  # fewer entries than would fit
    assert legend_columns(()) == 1


def test_a_single_series_has_no_legend() -> None:
    assert plot(_bars(1)).legend == ()
