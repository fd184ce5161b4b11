"""A forecast's interval is drawn as a shaded band along its dashed line (`Series.interval ==
"band"`), in both chart back-ends: plotly (the interactive HTML) and the SVG written straight
from the model (the static HTML and the PDF). A measured series keeps a bar per point.
The band is split where an interval end is missing, and a point standing alone in it keeps its
bar (a one-point band has no width). Bars and dots never get a band: their points are not
joined."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from torchscale.interfaces.report.charts.plot import (
    INTERVAL_BAND_ALPHA,
    band_runs,
    bar_intervals,
    plot,
)
from torchscale.interfaces.report.model import Chart, Series
from torchscale.interfaces.report.render import svg_direct
from torchscale.interfaces.report.render.plotly_charts import figure

NS = "{http://www.w3.org/2000/svg}"
LOW = [17.0, 31.0, 50.0]
HIGH = [21.0, 39.0, 70.0]


def _chart(
    low: list[float | None] = LOW, high: list[float | None] = HIGH, kind: str = "line"
) -> Chart:
    """A measured curve with its intervals and its forecast, dashed, with a band."""
    xs = [2, 4, 8, 16, 32][: len(low)]
    return Chart.model_validate(
        {
            "id": "forecast-band",
            "title": "throughput, measured and forecast",
            "kind": kind,
            "x_label": "GPUs",
            "y_label": "samples/s",
            "x_format": "int",
            "y_format": "rate",
            "x_log2": kind == "line",
            "series": [
                Series(name="m", x=[1, 2, 4], y=[10, 19, 36], low=[9, 18, 33], high=[11, 20, 39]),
                Series(
                    name="forecast (m)",
                    x=xs,
                    y=[19.0, 35.0, 60.0, 100.0, 180.0][: len(low)],
                    low=low,
                    high=high,
                    style="dashed",
                    interval="band",
                    reference_for="m",
                ),
            ],
        }
    )


def _fills(fig: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in fig["data"] if t.get("fill")]


def _named(fig: dict[str, Any], name: str) -> tuple[int, dict[str, Any]]:
    (found,) = [(i, t) for i, t in enumerate(fig["data"]) if t["name"] == name]
    return found


def test_the_model_and_its_json_carry_the_band() -> None:
    chart = _chart()
    assert [s.interval for s in chart.series] == ["bars", "band"]
    data = chart.model_dump(mode="json")
    assert [s["interval"] for s in data["series"]] == ["bars", "band"]
    # a document written before the field still reads: its intervals are bars
    del data["series"][1]["interval"]
    assert Chart.model_validate(data).series[1].interval == "bars"


def test_the_plot_bands_only_a_line() -> None:
    measured, forecast = plot(_chart()).series
    assert not measured.band and forecast.band
    assert band_runs(forecast) == [tuple(zip((2.0, 4.0, 8.0), LOW, HIGH, strict=True))]
    assert bar_intervals(forecast).low == (None, None, None)
    assert bar_intervals(measured) is measured
    # bars join no points: a band across categories would claim values between them
    assert not any(s.band for s in plot(_chart(kind="bar")).series)


def test_plotly_draws_the_band_under_the_line_not_error_bars() -> None:
    fig = figure(_chart())
    (band,) = _fills(fig)
    at, forecast = _named(fig, "forecast (m)")
    _, measured = _named(fig, "m")
    assert "error_y" not in forecast
    assert measured["error_y"]["array"] == pytest.approx([1.0, 1.0, 3.0])
    # a closed shape along the highs and back along the lows
    assert band["fill"] == "toself"
    assert band["x"] == [2.0, 4.0, 8.0, 8.0, 4.0, 2.0]
    assert band["y"] == [*HIGH, *reversed(LOW)]
    colour = plot(_chart()).series[1].colour
    assert band["fillcolor"].lower() == (colour + f"{round(INTERVAL_BAND_ALPHA * 255):02x}").lower()
    assert 0.18 <= INTERVAL_BAND_ALPHA <= 0.25
    # drawn first (under the line), hidden with its line, not in the legend nor the hover
    assert fig["data"].index(band) < at
    assert band["legendgroup"] == forecast["legendgroup"]
    assert band["showlegend"] is False and band["hoverinfo"] == "skip"


def test_plotly_hides_a_band_with_a_series_of_its_own() -> None:
    """A band series in no legend group gets one of its own, shared with its band."""
    chart = _chart()
    solid = chart.series[1].model_copy(update={"reference_for": None, "style": "solid"})
    fig = figure(chart.model_copy(update={"series": [chart.series[0], solid]}))
    (band,) = _fills(fig)
    _, forecast = _named(fig, "forecast (m)")
    _, measured = _named(fig, "m")
    assert band["legendgroup"] == forecast["legendgroup"] == "series-1"
    assert "legendgroup" not in measured  # a series without a band is left as it was


def test_a_gap_splits_the_band_and_a_lone_point_keeps_its_bar() -> None:
    low: list[float | None] = [17.0, 31.0, None, 90.0, 150.0]
    high: list[float | None] = [21.0, 39.0, None, 110.0, 200.0]
    gappy = _chart(low, high)
    (band,) = _fills(figure(gappy))
    assert band["x"] == [2.0, 4.0, 4.0, 2.0, None, 16.0, 32.0, 32.0, 16.0]
    lone_low: list[float | None] = [17.0, None, 50.0, 90.0, None]
    lone_high: list[float | None] = [21.0, None, 70.0, 110.0, None]
    lone = _chart(lone_low, lone_high)
    fig = figure(lone)
    (band,) = _fills(fig)
    assert band["x"] == [8.0, 16.0, 16.0, 8.0]
    # the point at 2 GPUs has no neighbour to span to: a bar, and only there
    _, forecast = _named(fig, "forecast (m)")
    assert forecast["error_y"]["array"] == [2.0, None, None, None, None]
    assert forecast["error_y"]["arrayminus"] == [2.0, None, None, None, None]
    root = ET.fromstring(svg_direct.chart_svg(lone))
    (group,) = [g for g in root.iter(f"{NS}g") if g.get("id") == "forecast-band-series-1"]
    bars = [p for p in group.iter(f"{NS}path") if "V" in p.get("d", "")]
    assert len(bars) == 1 and bars[0].get("d", "").count("M") == 1


def test_the_static_svg_fills_the_bands_under_every_series() -> None:
    """Every band lies in one group drawn before any series and deaf to the pointer: a
    forecast's band covers the measured points at its sizes (here 2 and 4 GPUs), whose hover
    must stay theirs, and a later series' band must not cover an earlier series' line."""
    root = ET.fromstring(svg_direct.chart_svg(_chart()))
    groups = [g for g in root.iter(f"{NS}g") if g.get("id")]
    by_id = {g.get("id"): g for g in groups}
    ids = [g.get("id") for g in groups]
    assert ids.index("forecast-band-bands") < ids.index("forecast-band-series-0")
    bands = by_id["forecast-band-bands"]
    assert bands.get("pointer-events") == "none"
    (band,) = list(bands.iter(f"{NS}path"))
    colour = plot(_chart()).series[1].colour
    assert band.get("fill") == colour and band.get("fill-opacity") == str(INTERVAL_BAND_ALPHA)
    assert band.get("d", "").endswith("Z") and band.get("d", "").count("L") == 5
    forecast = list(by_id["forecast-band-series-1"].iter(f"{NS}path"))
    assert forecast[0].get("fill") == "none" and forecast[0].get("stroke-dasharray")
    # no interval bar (a vertical segment) beside the band, and no fill in the series' group
    assert not [p for p in forecast if "V" in p.get("d", "") or p.get("fill-opacity")]
    measured = list(by_id["forecast-band-series-0"].iter(f"{NS}path"))
    assert [p for p in measured if "V" in p.get("d", "")]
    assert not [p for p in measured if p.get("fill-opacity")]


def test_a_cut_forecast_interval_keeps_its_legend_group_in_plotly() -> None:
    """A forecast whose interval is cut at the axis edge (its marks drawn there) stays in the
    group its legend entry ('forecast (dashed ...)') hides, with its band and marks."""
    fig = figure(_chart(high=[21.0, 39.0, 1e6]))  # far past the axis the values set
    _, forecast = _named(fig, "forecast (m)")
    (band,) = _fills(fig)
    marks = [t for t in fig["data"] if t.get("mode") == "markers" and t is not forecast]
    assert marks, "the cut interval's marks"
    assert band["legendgroup"] == forecast["legendgroup"]
    assert all(m["legendgroup"] == forecast["legendgroup"] for m in marks)
    assert not forecast["legendgroup"].startswith("series-")
