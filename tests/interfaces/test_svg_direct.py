"""The static charts, the HTML's and the PDF's, written straight from the chart model
(`render/svg_direct.py`) show what the model says: a group per series with its points' hover
text as <title>, a line through exactly its points at the axes' scale, the model's tick labels
and legend entries, bars from zero, cut intervals marked with their full interval, boxes by the
1.5 IQR rule, and every user string escaped. Checked on the real 8-cell sweep's charts, a
60-cell synthetic report's, and charts made to the purpose."""

from __future__ import annotations

import math
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.scale_sample import scale_report
from torchscale.interfaces.api import build_report
from torchscale.interfaces.report.charts.palette import AXIS_COLOUR
from torchscale.interfaces.report.charts.plot import CLIP_UP, Plot, plot
from torchscale.interfaces.report.model import Chart, Series
from torchscale.interfaces.report.render.svg_direct import box_stats, chart_svg, series_id

SWEEP = Path(__file__).resolve().parents[1] / "fixtures" / "cpu_default_sweep"
NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "</svg><script>alert(1)</script>&"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def groups(root: ET.Element) -> dict[str, ET.Element]:
    return {g.attrib["id"]: g for g in root.iter(f"{NS}g") if "id" in g.attrib}


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def title_of(group: ET.Element) -> str:
    first = next(iter(group))
    assert first.tag == f"{NS}title"
    return first.text or ""


def points(d: str) -> list[tuple[float, float]]:
    """The vertices of a path of M and L commands only (a line)."""
    out = []
    for part in d.replace("M", " ").replace("L", " ").split():
        x, y = part.split(",")
        out.append((float(x), float(y)))
    return out


def plot_box(root: ET.Element) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of the plot area: the frame's 'Mleft,topVbottomHright'."""
    frame = next(e for e in root.iter(f"{NS}path") if e.get("stroke") == AXIS_COLOUR)
    left, top, bottom, right = (float(v) for v in re.findall(r"[\d.]+", frame.attrib["d"]))
    return left, top, right, bottom


def legend_entries(root: ET.Element) -> list[tuple[str, str]]:
    """(label, colour) of each legend entry, in order: its handle's first stroke or fill."""
    legend = next((g for g in root.iter(f"{NS}g") if g.get("class") == "legend"), None)
    entries: list[tuple[str, str]] = []
    colour = ""
    for node in legend if legend is not None else ():
        paint = node.get("stroke") or node.get("fill") or ""
        if node.tag == f"{NS}path" and paint.startswith("#"):
            colour = colour or paint.lower()
        elif node.tag == f"{NS}text":
            entries.append(("".join(node.itertext()), colour))
            colour = ""
    return entries


def rect(d: str) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of 'Mx0,y0Hx1Vy1Hx0'."""
    start, rest = d.lstrip("M").split("H", 1)
    left, top = (float(v) for v in start.split(","))
    right, rest = rest.split("V", 1)
    bottom = rest.split("H", 1)[0]
    return left, top, float(right), float(bottom)


@pytest.fixture(scope="module")
def real_charts(tmp_path_factory: pytest.TempPathFactory) -> list[Chart]:
    out = tmp_path_factory.mktemp("direct") / "report.json"
    report = build_report(SWEEP, "json", output=out, full=True).report
    synthetic = scale_report(tmp_path_factory.mktemp("direct-scale"), cells=60)
    charts = [*report.charts(), *synthetic.charts()]
    assert {c.kind for c in charts} >= {"line", "bar", "stacked_bar", "box"}
    return charts


def test_each_series_is_a_group_with_its_points_hover(real_charts: list[Chart]) -> None:
    for chart in real_charts:
        p = plot(chart)
        root = parse(chart_svg(chart))
        assert root.tag == f"{NS}svg"
        found = groups(root)
        for index, series in enumerate(p.series):
            gid = series_id(p.id, index)
            if p.kind == "box":
                if not any(series.values or ()):
                    continue
                assert series.name in title_of(found[gid]), chart.id
                continue
            assert gid in found, (chart.id, index)
            assert title_of(found[gid]) == "\n".join([t for t in series.text if t] or [series.name])


def test_tick_labels_and_legend_are_the_models(real_charts: list[Chart]) -> None:
    for chart in real_charts:
        p = plot(chart)
        shown = texts(parse(chart_svg(chart)))
        if not p.empty and p.kind != "heatmap":
            assert set(p.y.tick_text) <= set(shown), chart.id
            level = p.x.scale != "category" or not p.x.slanted
            if level and all("\n" not in t and len(t) < 20 for t in p.x.tick_text):
                assert set(p.x.tick_text) <= set(shown), chart.id
            for label in (p.x.title, p.y.title):
                assert not label or label in shown, chart.id
        # the legend's own entries, in its order (a note may name a series too: '3 series
        # coincide: ...', wrapped so that a line is one name)
        root = parse(chart_svg(chart))
        assert [e.label for e in p.legend] == [label for label, _ in legend_entries(root)]


def _line_chart(**series_args: list[float | None]) -> Chart:
    return Chart(
        id="line-test",
        title="samples/s",
        kind="line",
        x_label="GPUs",
        y_label="samples/s",
        x_format="int",
        y_format="rate",
        x_log2=True,
        series=[
            Series(name="a", x=[1, 2, 4, 8], **series_args),  # type: ignore[arg-type]
            Series(name="b", x=[1, 2, 4, 8], y=[50.0, 95.0, 170.0, 300.0]),
        ],
    )


def _affine(data: list[float], pixels: list[float]) -> None:
    """`pixels` are `data` mapped by one straight line (the axis' scale)."""
    (d0, p0), (d1, p1) = (data[0], pixels[0]), (data[-1], pixels[-1])
    slope = (p1 - p0) / (d1 - d0)
    for d, p in zip(data, pixels, strict=True):
        assert p == pytest.approx(p0 + slope * (d - d0), abs=0.02)


def test_a_line_goes_through_exactly_its_points_at_the_axes_scale() -> None:
    chart = _line_chart(y=[100.0, None, 330.0, 610.0])
    p = plot(chart)
    root = parse(chart_svg(chart))
    group = groups(root)[series_id(p.id, 0)]
    lines = [e for e in group if e.tag == f"{NS}path" and e.attrib.get("fill") == "none"]
    line = next(e for e in lines if "stroke-dasharray" not in e.attrib and "V" not in e.attrib["d"])
    # the gap breaks the line: two pieces, three points in all
    assert line.attrib["d"].count("M") == 2
    drawn = points(line.attrib["d"])
    xs = [x for x, y in zip(p.series[0].x, p.series[0].y, strict=True) if y is not None]
    ys = [y for y in p.series[0].y if y is not None]
    assert len(drawn) == len(ys) == 3
    _affine([math.log10(x) for x in xs], [px for px, _ in drawn])  # a log2 GPU axis
    _affine(ys, [py for _, py in drawn])
    assert drawn[0][1] > drawn[-1][1]  # up is more


def test_bars_stand_on_zero_and_hatch_by_pattern() -> None:
    chart = Chart(
        id="bars",
        title="t",
        kind="bar",
        x_label="cell",
        y_label="samples/s",
        y_format="rate",
        series=[
            Series(name="ddp", x=["a", "b"], y=[10.0, 40.0]),
            Series(name="fsdp", x=["a", "b"], y=[20.0, 35.0]),
        ],
    )
    p = plot(chart)
    assert p.y.low == 0.0
    root = parse(chart_svg(chart))
    fills = [e for e in groups(root)[series_id(p.id, 0)] if e.tag == f"{NS}path"]
    bars = [rect(part) for part in fills[0].attrib["d"].split("Z")[:-1]]
    assert len(bars) == 2
    # both bars stand on one baseline (zero) and their heights are their values' ratio
    assert bars[0][3] == pytest.approx(bars[1][3])
    heights = [bottom - top for _, top, _, bottom in bars]
    assert heights[0] / heights[1] == pytest.approx(10.0 / 40.0, rel=1e-3)
    hatched = [e for e in groups(root)[series_id(p.id, 1)] if "url(#" in e.attrib.get("fill", "")]
    assert hatched and hatched[0].attrib["fill"].startswith(f"url(#{p.id}-hatch-")


def test_a_cut_interval_is_marked_with_its_full_interval() -> None:
    chart = _line_chart(y=[100.0, 190.0, 330.0, 610.0])
    series = chart.series[0].model_copy(
        update={"low": [90.0, 180.0, 300.0, 590.0], "high": [110.0, 200.0, 360.0, 60000.0]}
    )
    chart = chart.model_copy(update={"series": [series, chart.series[1]]})
    p = plot(chart)
    assert p.series[0].clips
    svg = chart_svg(chart)
    mark = groups(parse(svg))[series_id(p.id, 0, "clip-up")]
    assert "60,000" in title_of(mark) or "60000" in title_of(mark) or "60k" in title_of(mark)
    assert any(t.startswith(CLIP_UP) for t in texts(parse(svg)))


def test_user_strings_are_escaped() -> None:
    chart = Chart(
        id="hostile",
        title=HOSTILE,
        kind="line",
        x_label=HOSTILE,
        y_label="y",
        series=[
            Series(name=HOSTILE, x=[1, 2], y=[1.0, 2.0]),
            Series(name="other", x=[1, 2], y=[2.0, 3.0]),
        ],
        absent=[f"{HOSTILE}: not split"],
    )
    svg = chart_svg(chart)
    assert "<script" not in svg and svg.count("<svg") == 1
    root = parse(svg)  # still one well-formed picture
    assert HOSTILE in texts(root)  # the axis title, as text
    assert HOSTILE in title_of(groups(root)[series_id("hostile", 0)])


def test_empty_and_heatmap_charts_draw() -> None:
    empty = Chart(id="empty", title="t", kind="line", x_label="x", y_label="y", series=[])
    assert "no data" in texts(parse(chart_svg(empty)))
    heat = Chart.model_validate(
        {
            "id": "heat",
            "title": "t",
            "kind": "heatmap",
            "x_label": "step",
            "y_label": "rank",
            "heatmap": {
                "x_labels": ["0", "1"],
                "y_labels": ["r0", "r1"],
                "z": [[1.0, 2.0], [None, 4.0]],
                "z_label": "stall",
            },
        }
    )
    root = parse(chart_svg(heat))
    cells = [e for e in root.iter(f"{NS}path") if e.find(f"{NS}title") is not None]
    assert len(cells) == 4  # three values and the no-data cells' shape
    assert {"r0", "r1", "0", "1", "stall"} <= set(texts(root))


def test_boxes_follow_the_iqr_rule() -> None:
    """Quartiles as numpy interpolates them, whiskers to the farthest sample within 1.5 IQR of
    the box, every sample beyond an outlier (plotly's boxes in the interactive HTML)."""
    rng = random.Random(3)
    for size in (1, 2, 5, 17, 60):
        samples = [rng.lognormvariate(0, 0.6) for _ in range(size)]
        ours = box_stats(samples)
        q1, median, q3 = np.percentile(samples, [25, 50, 75])
        reach = 1.5 * (q3 - q1)
        inside = [v for v in samples if q1 - reach <= v <= q3 + reach]
        assert (ours.q1, ours.median, ours.q3) == pytest.approx((q1, median, q3))
        assert ours.low == pytest.approx(min(inside)) and ours.high == pytest.approx(max(inside))
        assert sorted(ours.outliers) == pytest.approx(sorted(set(samples) - set(inside)))


def test_the_plot_decides_what_is_drawn() -> None:
    """A Plot given directly is drawn as given (the HTML and the PDF share one model)."""
    p: Plot = plot(_line_chart(y=[1.0, 2.0, 3.0, 4.0]))
    assert chart_svg(p) == chart_svg(_line_chart(y=[1.0, 2.0, 3.0, 4.0]))
