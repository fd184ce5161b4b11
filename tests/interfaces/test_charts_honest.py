"""Charts that cannot mislead, checked on the chart model (`report.charts.plot`) that both
back-ends draw, and on what each back-end makes of it:
- an interval never stretches the value axis past CLIP_SPAN times the range of the values: it
  is cut at the axis' edge, marked there, and its hover keeps the full interval (one 2-repeat
  interval once stretched an efficiency axis to 1,050 % and flattened eight lines);
- bars start at zero on a linear axis, and a bar chart that needs a log axis is drawn as dots
  (on a log axis from 100 an 11.6x gap between two bars looked like 2x);
- a series with nothing to draw is named in the chart ("fsdp: not split");
- lines drawn on top of each other are named in the chart ("3 series coincide: a, b, c"): at
  500 cells ten efficiency lines read as one;
- a capped chart says in its title what it kept and why, and keeps every model: at 500 cells
  the efficiency chart kept 11 of 100 series, all of one model."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tests.interfaces.test_svg_direct import NS, groups, parse, plot_box, rect, title_of
from tests.scale_sample import scale_report
from torchscale.interfaces.report.charts.axes import CLIP_SPAN
from torchscale.interfaces.report.charts.limits import cap_chart
from torchscale.interfaces.report.charts.plot import CLIP_DOWN, CLIP_UP, plot
from torchscale.interfaces.report.model import Chart, Series
from torchscale.interfaces.report.render.plotly_charts import figure
from torchscale.interfaces.report.render.svg_direct import chart_svg, series_id
from torchscale.interfaces.report.sections import strategies

WILD_HIGH = 10.5  # a 2-repeat interval's top: 1,050 %


def _efficiency(wild: bool = True) -> Chart:
    """Eight efficiency lines of 60-100 %, the first with a 35-1,050 % interval when `wild`."""
    series = []
    for i in range(8):
        last = 0.95 - 0.05 * i
        high = WILD_HIGH if wild and i == 0 else last + 0.04
        series.append(
            Series(
                name=f"model-{i} b16",
                x=[1, 2, 4],
                y=[1.0, last + 0.02, last],
                low=[None, last - 0.03, 0.35 if wild and i == 0 else last - 0.04],
                high=[None, last + 0.05, high],
            )
        )
    return Chart(
        id="efficiency",
        title="Scaling efficiency",
        kind="line",
        x_label="GPUs",
        y_label="efficiency",
        x_format="int",
        y_format="ratio_pct",
        x_log2=True,
        series=series,
    )


def _values(chart: Chart) -> list[float]:
    return [v for s in chart.series for v in s.y if v is not None]


def _span_allowed(chart: Chart, zero: bool) -> float:
    values = _values(chart) + ([0.0] if zero else [])
    return CLIP_SPAN * (max(values) - min(values))


def test_a_wild_interval_does_not_stretch_the_axis() -> None:
    chart = _efficiency()
    p = plot(chart)
    assert p.y.low is not None and p.y.high is not None
    assert p.y.high - p.y.low <= _span_allowed(chart, zero=True) + 1e-9
    assert p.y.high < WILD_HIGH
    # the cut interval reaches the edge, and is marked there pointing up
    first = p.series[0]
    assert first.high is not None and first.high[-1] == p.y.high
    (clip,) = first.clips
    assert (clip.x, clip.y, clip.up) == (4.0, p.y.high, True)
    # its hover keeps the full interval, and the chart says why the mark is there
    assert "1,050" in clip.text or "1050" in clip.text
    assert first.text[-1] == clip.text
    assert any(line.startswith(CLIP_UP) for line in p.subtitle)
    # no other series was cut
    assert all(not s.clips for s in p.series[1:])


def test_intervals_within_the_limit_are_drawn_whole() -> None:
    chart = _efficiency(wild=False)
    p = plot(chart)
    assert not any(s.clips for s in p.series) and not p.subtitle
    assert p.y.low is not None and p.y.high is not None
    tops = [h for s in chart.series for h in s.high or [] if h is not None]
    assert p.y.high >= max(tops)
    assert [s.high for s in p.series] == [tuple(s.high or ()) for s in chart.series]


def test_both_back_ends_draw_the_cut_and_its_mark() -> None:
    chart = _efficiency()
    p = plot(chart)
    fig = figure(chart)
    marks = [t for t in fig["data"] if t.get("marker", {}).get("symbol") == ["triangle-up"]]
    (mark,) = marks
    assert mark["y"] == [p.y.high] and mark["cliponaxis"] is False
    assert mark["showlegend"] is False
    assert "1050" in html.unescape(mark["text"][0]) or "1,050" in mark["text"][0]
    assert fig["layout"]["yaxis"]["range"] == [p.y.low, p.y.high]
    assert f">{CLIP_UP} interval cut" in fig["layout"]["title"]["text"]
    svg = chart_svg(chart)
    up = groups(parse(svg))[series_id(chart.id, 0, "clip-up")]
    assert "1050" in title_of(up) or "1,050" in title_of(up)
    # the mark sits on the plot's top edge (the axis' high end), over the frame
    top = plot_box(parse(svg))[1]
    ys = [float(v) for v in re.findall(r",([-\d.]+)", up[1].attrib["d"])]
    assert min(ys) < top < max(ys)
    assert CLIP_UP in svg  # the subtitle is text in the picture


def test_a_log_axis_cuts_a_low_end_it_cannot_draw() -> None:
    chart = Chart(
        id="bw",
        title="bandwidth",
        kind="line",
        x_label="size",
        y_label="GB/s",
        x_log2=True,
        y_log=True,
        series=[
            Series(
                name="a", x=[1, 2, 4], y=[10.0, 20.0, 40.0], low=[-5.0, 18, 38], high=[12, 22, 44]
            )
        ],
    )
    p = plot(chart)
    assert p.y.low is not None and p.y.low > 0
    (clip,) = p.series[0].clips
    assert not clip.up and clip.y == p.y.low
    assert any(line.startswith(CLIP_DOWN) for line in p.subtitle)


def _layout_bars(y_log: bool) -> Chart:
    groups: list[float | int | str] = ["tiny b16 x2", "big b16 x64"]
    return Chart(
        id="throughput",
        title="Throughput by layout",
        kind="bar",
        x_label="group",
        y_label="samples/s",
        y_format="rate",
        y_log=y_log,
        series=[
            Series(name="ddp", x=groups, y=[120.0, 9000.0]),
            Series(name="fsdp", x=groups, y=[110.0, 776.0]),  # 11.6x below ddp
        ],
    )


def test_bars_stand_on_zero_of_a_linear_axis() -> None:
    p = plot(_layout_bars(y_log=False))
    assert p.kind == "bar" and p.y.scale == "linear" and p.y.low == 0.0
    fig = figure(_layout_bars(y_log=False))
    assert fig["layout"]["yaxis"]["range"][0] == 0.0
    root = parse(chart_svg(_layout_bars(y_log=False)))
    bars = groups(root)[series_id("throughput", 0)][1].attrib["d"]
    assert {rect(part)[3] for part in bars.split("Z")[:-1]} == {plot_box(root)[3]}


def test_no_bars_on_a_log_axis_dots_instead() -> None:
    chart = _layout_bars(y_log=True)
    p = plot(chart)
    assert p.kind == "dot" and p.y.scale == "log"
    assert all(s.marker is not None for s in p.series)
    # side by side in their category, as grouped bars stood
    assert p.series[0].x[0] < 0 < p.series[1].x[0]
    traces = figure(chart)["data"][: len(p.series)]
    assert {t["type"] for t in traces} == {"scatter"}
    assert {t["mode"] for t in traces} == {"markers"}
    drawn = groups(parse(chart_svg(chart)))[series_id(chart.id, 0)]
    paths = [e for e in drawn if e.tag == f"{NS}path"]
    assert not [e for e in paths if e.get("stroke") == "white"]  # no bar
    assert not [e for e in paths if e.get("fill") == "none" and "V" not in e.attrib["d"]]
    assert [e for e in paths if e.get("fill", "").startswith("#")]  # the dots


def test_an_absent_series_is_named_in_the_chart() -> None:
    rows = [
        {"group": "m b8 x2", "layout": "ddp", "exposed": 0.2, "exposed_share": 0.2},
        {"group": "m b8 x2", "layout": "fsdp", "exposed": None, "exposed_share": None},
        {"group": "m b8 x2", "layout": "tp", "exposed": "not measurable", "exposed_share": None},
    ]
    chart = strategies._chart("comm", "Communication", "share", "ratio_pct", rows, "exposed_share")
    assert chart is not None
    assert [s.name for s in chart.series] == ["ddp"]
    assert chart.absent == ["fsdp: not split", "tp: not measurable"]
    p = plot(chart)
    assert p.subtitle[0] == "fsdp: not split; tp: not measurable"
    assert "fsdp: not split" in figure(chart)["layout"]["title"]["text"]
    assert "fsdp: not split" in chart_svg(chart)


def test_lines_drawn_on_top_of_each_other_are_named_in_the_chart() -> None:
    same = {"x": [1, 2, 4], "y": [1.0, 0.9, 0.8]}
    series = [
        Series(name="a", **same),
        Series(name="b", x=[1, 2, 4], y=[1.0, 0.9, 0.7]),
        Series(name="c", **same),
        Series(name="d", **same),
    ]
    chart = Chart(id="e", title="E", kind="line", x_label="x", y_label="y", series=series)
    assert plot(chart).subtitle == ("3 series coincide: a, c, d",)
    assert "3 series coincide: a, c, d" in chart_svg(chart)
    assert "3 series coincide: a, c, d" in figure(chart)["layout"]["title"]["text"]
    apart = chart.model_copy(update={"series": series[:2]})
    assert plot(apart).subtitle == ()


def _many_models(models: int = 5, per_model: int = 20) -> Chart:
    """Model 0's series peak highest: ranked by peak alone, all the kept ones are its."""
    series = [
        Series(
            name=f"model-{m} b{b}",
            x=[1, 2],
            y=[1.0 + (models - m) + b / 100, 0.9],
            model=f"model-{m}",
        )
        for m in range(models)
        for b in range(per_model)
    ]
    series.append(Series(name="ideal", x=[1, 2], y=[1.0, 1.0], style="dashed"))
    return Chart(id="eff", title="Efficiency", kind="line", x_label="x", y_label="y", series=series)


def test_a_capped_chart_keeps_every_model_and_says_so() -> None:
    capped = cap_chart(_many_models())
    kept = [s for s in capped.series if s.style == "solid"]
    assert {s.model for s in kept} == {f"model-{m}" for m in range(5)}
    assert capped.title == (
        f"Efficiency · {len(kept)} of 100 series: the widest, highest series of each model, then "
        "the others"
    )
    # each model's own highest is among the kept ones
    for m in range(5):
        assert f"model-{m} b19" in {s.name for s in kept}


def test_fewer_slots_than_models_says_how_many_models() -> None:
    capped = cap_chart(_many_models(models=15, per_model=2))
    kept = [s for s in capped.series if s.style == "solid"]
    assert len({s.model for s in kept}) == len(kept)  # one each, the highest models
    assert f"{len(kept)} of 30 series: the widest, highest series of {len(kept)} of 15 models" in (
        capped.title
    )


@pytest.mark.slow
def test_at_500_cells_every_model_is_on_the_efficiency_charts(tmp_path: Path) -> None:
    report = scale_report(tmp_path)
    efficiency = [c for c in report.charts() if c.id.endswith("-efficiency")]
    assert efficiency
    for chart in efficiency:
        kept = [s for s in chart.series if s.style == "solid"]
        assert {s.model for s in kept} == {f"scale-model-{i}" for i in range(1, 6)}, chart.id
        assert re.search(r"· \d+ of \d+ series: the widest, highest series of each", chart.title)


def test_a_narrow_log_window_keeps_two_labelled_ticks() -> None:
    """A log axis clamped to a window between two 1-2-5 ticks still reads: its ends ticked."""
    from torchscale.interfaces.report.charts.axes import log_axis

    axis = log_axis("busbw", "float", [10.5, 11.2, 11.8], window=(10.0, 12.0))
    assert len(axis.ticks) >= 2 and axis.ticks[0] <= 10.5 and axis.ticks[-1] >= 11.8
    assert len(axis.tick_text) == len(axis.ticks)
