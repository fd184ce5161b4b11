"""Charts a stakeholder reads in ten seconds, plotly's and the static SVG's: category labels
that never overprint, legends off the data, ticks without "20,000.0", a log axis
for throughput spanning decades, the baseline chart coloured by verdict over its noise band,
one heatmap colour scale per meaning, inline code in prose, row tints that mean something,
and `--html-link` for the Markdown."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.interfaces.test_svg_direct import NS, groups, parse, plot_box, texts
from tests.report_sample import paired_chart, sample_report
from torchscale.contracts.wording.axis import tick_labels
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.formatting import (
    SEVERITY_COLOUR,
    code_spans,
    heatmap_scale,
    log_ticks,
    strip_code,
)
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.charts.plot import plot
from torchscale.interfaces.report.model import (
    Band,
    Chart,
    Findings,
    Heatmap,
    Report,
    ReportFinding,
    Section,
    Series,
)
from torchscale.interfaces.report.model import (
    Text as TextBlock,
)
from torchscale.interfaces.report.parts.context import RankUnits
from torchscale.interfaces.report.render import markdown, pdf, svg_direct
from torchscale.interfaces.report.render.html import render as render_html
from torchscale.interfaces.report.render.plotly_charts import figure
from torchscale.interfaces.report.sections import scaling
from torchscale.interfaces.report.sections.baseline import CHART_VERDICTS
from torchscale.interfaces.report.sources import read_sources

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _drawn(chart: Chart) -> ET.Element:
    return parse(svg_direct.chart_svg(chart))


def _x_labels(root: ET.Element) -> list[ET.Element]:
    """The category labels under the plot, left to right."""
    left, _, _, bottom = plot_box(root)
    under = [
        t
        for t in root.iter(f"{NS}text")
        if bottom < float(t.attrib["y"]) < bottom + 40 and float(t.attrib["x"]) >= left
    ]
    return sorted(
        (t for t in under if t.get("font-size") != str(svg_direct.SMALL)),
        key=lambda t: float(t.attrib["x"]),
    )


def _width(label: ET.Element) -> float:
    """The widest line of a label, as the writer estimates it (characters x font size)."""
    lines = [t.text or "" for t in label.iter(f"{NS}tspan")] or [label.text or ""]
    size = float(label.attrib["font-size"])
    return max(svg_direct._text_width(line, size) for line in lines)


def _assert_apart(root: ET.Element) -> None:
    """No two x labels overprint: level ones by their (estimated) widths; slanted ones
    (parallel strips) by their distance across the slant against a line's height."""
    labels = _x_labels(root)
    assert len(labels) >= 2
    for a, b in itertools.pairwise(labels):
        xa, xb = float(a.attrib["x"]), float(b.attrib["x"])
        if "rotate" not in a.get("transform", ""):
            assert xa + _width(a) / 2 <= xb - _width(b) / 2, (a.text, b.text)
        else:
            height = float(a.attrib["font-size"]) * 1.3
            assert (xb - xa) * math.sin(math.radians(svg_direct.ROTATION)) >= height


def _categories(count: int, width: int) -> list[float | int | str]:
    return [f"cell {i} " + "x" * (width - 7) for i in range(count)]


@pytest.mark.parametrize(
    "chart",
    [
        # 9 labels of 12 characters: too few and too short for the old character-count rule
        Chart(
            id="bars",
            title="bars",
            kind="bar",
            x_label="cell",
            y_label="samples/s",
            series=[Series(name="s", x=_categories(9, 12), y=[1.0] * 9)],
        ),
        # a line over named categories: never slanted before
        Chart(
            id="line",
            title="line",
            kind="line",
            x_label="layout",
            y_label="samples/s",
            series=[Series(name="s", x=_categories(14, 24), y=[float(i) for i in range(14)])],
        ),
        # a box plot over many groups
        Chart(
            id="box",
            title="box",
            kind="box",
            x_label="cell",
            y_label="step time",
            y_format="seconds",
            series=[Series(name="s", x=_categories(8, 26), values=[[0.1, 0.2, 0.3]] * 8)],
        ),
    ],
    ids=lambda c: c.id,
)
def test_static_category_labels_never_overprint(chart: Chart) -> None:
    _assert_apart(_drawn(chart))


def test_static_many_slanted_labels_are_thinned_not_stacked() -> None:
    chart = Chart(
        id="many",
        title="many",
        kind="line",
        x_label="cell",
        y_label="samples/s",
        series=[Series(name="s", x=_categories(90, 20), y=[1.0] * 90)],
    )
    root = _drawn(chart)
    _assert_apart(root)
    assert 2 <= len(_x_labels(root)) < 90


@pytest.mark.parametrize("kind", ["line", "bar"])
def test_static_legend_is_under_the_plot(kind: str) -> None:
    """An ideal line runs corner to corner: a legend inside the axes covers it somewhere."""
    chart = paired_chart().model_copy(update={"kind": kind})
    root = _drawn(chart)
    (legend,) = [g for g in root.iter(f"{NS}g") if g.get("class") == "legend"]
    bottom = plot_box(root)[3]
    entries = [float(t.attrib["y"]) - svg_direct.SMALL for t in legend.iter(f"{NS}text")]
    assert len(entries) == len(plot(chart).legend) and min(entries) > bottom


def test_tick_labels_use_the_fewest_decimals() -> None:
    assert tick_labels([0, 5_000, 10_000, 15_000, 20_000], "rate") == [
        "0",
        "5k",
        "10k",
        "15k",
        "20k",
    ]
    assert tick_labels([20_000, 22_500], "rate") == ["20k", "22.5k"]
    assert tick_labels([0, 2_000, 4_000], "rate") == ["0", "2,000", "4,000"]
    assert tick_labels([0, 0.5, 1.0], "float") == ["0", "0.5", "1"]
    assert tick_labels([0.2, 0.4, 1.0], "ratio_pct") == ["20 %", "40 %", "100 %"]
    assert tick_labels([-0.1, 0.0, 0.1], "change_pct") == ["-10 %", "0 %", "+10 %"]
    assert tick_labels([0.01, 0.015, 0.02], "seconds") == ["10 ms", "15 ms", "20 ms"]
    assert tick_labels([0, 250, 500], "us") == ["0 µs", "250 µs", "500 µs"]  # was "us"
    assert tick_labels([0, 1024**3, 2 * 1024**3], "bytes") == ["0 GiB", "1 GiB", "2 GiB"]
    assert tick_labels([100, 200, 500, 1_000, 2_000], "rate", log=True) == [
        "100",
        "200",
        "500",
        "1k",
        "2k",
    ]


def _tick_texts(chart: Chart) -> list[str]:
    """The y tick labels the static SVG draws (every one the model gives)."""
    ticks = plot(chart).y.tick_text
    assert set(ticks) <= set(texts(_drawn(chart)))
    return list(ticks)


def test_no_trailing_zero_ticks_in_either_format() -> None:
    chart = Chart(
        id="thr",
        title="thr",
        kind="line",
        x_label="GPUs",
        y_label="samples/s",
        x_format="int",
        y_format="rate",
        x_log2=True,
        series=[Series(name="s", x=[1, 2], y=[4_000.0, 14_500.0])],
    )
    ticks = _tick_texts(chart)
    assert ticks and not [t for t in ticks if re.search(r"\d\.0\b", t)], ticks
    assert any(t.endswith("k") for t in ticks), ticks
    assert figure(chart)["layout"]["yaxis"]["ticktext"] == ticks  # the same ticks in HTML


def test_log_ticks() -> None:
    assert log_ticks(150, 4_000) == [100, 200, 500, 1_000, 2_000, 5_000]
    assert log_ticks(3, 300_000) == [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]


def _scaling_frame(throughput: list[float]) -> pd.DataFrame:
    gpus = [1, 2, 4, 8, 16, 32, 64][: len(throughput)]
    return pd.DataFrame(
        {
            "model_label": "gpt2",
            "group": 0,
            "world_size": gpus,
            "samples_per_s": throughput,
            "samples_per_s_low": [v * 0.98 for v in throughput],
            "samples_per_s_high": [v * 1.02 for v in throughput],
            "ideal_samples_per_s": [throughput[0] * g for g in gpus],
        }
    )


def test_throughput_over_decades_goes_on_a_log_axis_in_both_formats() -> None:
    units = RankUnits("GPUs", "Batch/GPU", "per GPU")
    ctx: Any = SimpleNamespace(group_name=lambda row, batch=None: "b8 bf16 ddp", units=units)
    narrow = scaling._throughput_charts(ctx, _scaling_frame([100.0, 190.0, 350.0]), False)[0]
    assert not narrow.y_log and "log" not in narrow.y_label
    wide = scaling._throughput_charts(
        ctx, _scaling_frame([100.0 * 1.8**i for i in range(7)]), False
    )
    chart = wide[0]
    assert chart.y_log and "log scale" in chart.y_label
    axis = figure(chart)["layout"]["yaxis"]
    assert axis["type"] == "log"
    y = plot(chart).y
    assert y.scale == "log"
    # the same ticks, labelled alike, in both formats
    assert [float(v) for v in y.ticks] == axis["tickvals"]
    assert _tick_texts(chart) == axis["ticktext"]


def _verdict_chart() -> Chart:
    cells: list[float | int | str] = ["a", "b", "c"]
    series = [
        Series(name=name, x=cells, y=[v if i == k else None for i, v in enumerate(ys)], severity=s)
        for k, ((s, name), ys) in enumerate(
            zip(list(CHART_VERDICTS.items())[:3], [[-0.2, 0.1, 0.01]] * 3, strict=True)
        )
    ]
    return Chart(
        id="baseline",
        title="change",
        kind="bar",
        x_label="cell",
        y_label="change",
        y_format="change_pct",
        series=series,
        bands=[Band(low=-0.05, high=0.05, label="noise band")],
    )


def test_baseline_chart_coloured_by_verdict_with_its_noise_band() -> None:
    chart = _verdict_chart()
    plotly = figure(chart)
    bars = [t for t in plotly["data"] if t["type"] == "bar"]
    assert [b["marker"]["color"] for b in bars] == [
        SEVERITY_COLOUR["bad"],
        SEVERITY_COLOUR["good"],
        SEVERITY_COLOUR["info"],
    ]
    assert plotly["layout"]["barmode"] == "overlay"  # one full-width bar per cell
    (band,) = plotly["layout"]["shapes"]
    assert (band["y0"], band["y1"]) == (-0.05, 0.05)
    assert "noise band" in [t["name"] for t in plotly["data"]]
    root = _drawn(chart)
    series = [g for gid, g in groups(root).items() if "-series-" in gid]
    fills = {p.attrib["fill"].lower() for g in series for p in g.iter(f"{NS}path")}
    # the same colours as the interactive HTML's bars (hatched over where colour is not enough)
    assert {f for f in fills if f.startswith("#")} == {
        SEVERITY_COLOUR[s].lower() for s in ("bad", "good", "info")
    }
    spans = [p for p in root.iter(f"{NS}path") if p.get("fill-opacity") == "0.18"]
    assert spans, "the noise band is drawn"
    assert texts(root)[-1] == "noise band"  # the legend's last entry


def test_built_baseline_chart_follows_the_table_verdicts() -> None:
    report = build_report(
        read_sources(FIXTURES / "cpu_sweep_profile"),
        ReportOptions(generated_at="2026-11-22T12:00:00Z"),
        read_sources(FIXTURES / "cpu_crashes"),
    )
    chart = next(c for c in report.charts() if c.id == "baseline-throughput-change")
    table = next(
        b
        for b in report.section("baseline").blocks  # type: ignore[union-attr]
        if getattr(b, "id", None) == "baseline-changes"
    )
    verdict = {row["cell"]: row["_severity"] for row in table.rows}
    for series in chart.series:
        assert series.severity is not None
        for x, y in zip(series.x, series.y, strict=True):
            if y is not None:
                assert verdict[str(x)] == series.severity
    assert len(chart.bands) == 1 and chart.bands[0].low == -chart.bands[0].high


@pytest.mark.parametrize("higher_is", ["worse", "better", None])
def test_heatmap_colours_mean_the_same_in_plotly_and_svg(higher_is: Any) -> None:
    chart = Chart(
        id="heat",
        title="heat",
        kind="heatmap",
        x_label="step",
        y_label="rank",
        heatmap=Heatmap(
            x_labels=["1", "2"],
            y_labels=["0", "1"],
            z=[[0.0, 1.0], [2.0, 3.0]],
            z_label="z",
            higher_is=higher_is,
        ),
    )
    scale = [[p, c] for p, c in heatmap_scale(higher_is)]
    trace = figure(chart)["data"][0]
    assert trace["colorscale"] == scale and not trace.get("reversescale")
    # the static SVG's lowest and highest cells are the scale's ends
    cells = [p for p in _drawn(chart).iter(f"{NS}path") if p.find(f"{NS}title") is not None]
    assert (cells[0].attrib["fill"], cells[-1].attrib["fill"]) == (
        scale[0][1].lower(),
        scale[-1][1].lower(),
    )
    high = heatmap_scale(higher_is)[-1][1]
    # the high end is the dark one: dark red where high is worse, dark blue otherwise
    assert (high == "#800026") is (higher_is == "worse")


def _prose_report() -> Report:
    report = sample_report()
    finding = ReportFinding(
        title="Resume with `torchscale benchmark --resume`",
        cost_pct=None,
        source="cell",
        recommendation="run `a <b>&c` then `torchscale report` (a lone ` stays)",
    )
    extra = Section(
        id="summary",
        title="Prose",
        blocks=[
            TextBlock(text="see `torchscale benchmark --resume`"),
            Findings(findings=[finding]),
        ],
    )
    return report.model_copy(update={"sections": [extra, *report.sections[1:]]})


def test_inline_code_in_html_and_pdf_markdown_keeps_it() -> None:
    report = _prose_report()
    for page in (
        render_html(report).decode(),
        pdf.render_html(report, charts={c.id: "-" for c in report.charts()}),
    ):
        assert "<code>torchscale benchmark --resume</code>" in page
        assert "<code>a &lt;b&gt;&amp;c</code>" in page
        assert "`torchscale" not in page
        assert "(a lone ` stays)" in page
    text = markdown.render(report).decode()
    assert "`torchscale benchmark --resume`" in text
    assert "\\`torchscale" not in text


def test_code_spans_and_strip() -> None:
    assert code_spans("run `x y` now") == [("run ", False), ("x y", True), (" now", False)]
    assert code_spans("a ` b") == [("a ` b", False)]
    assert strip_code("run `torchscale report` now") == "run torchscale report now"


def test_html_tints_only_rows_that_need_a_look() -> None:
    """A good row keeps its check mark but no tint: a table of fine rows reads plain."""
    css = render_html(sample_report()).decode().split("<style>")[1].split("</style>")[0]
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", css)
    tinted = [sel.strip() for sel, body in rules if "tr." in sel and "background" in body]
    assert tinted and not [s for s in tinted if "sev-good" in s or "sev-info" in s], tinted
    assert any("sev-warn" in s for s in tinted) and any("sev-bad" in s for s in tinted)


def test_html_link_flag_reaches_the_markdown(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    url = "https://ci.example.com/run/7/report.html"
    result = CliRunner().invoke(
        app,
        [
            "report",
            "-s",
            str(FIXTURES / "cpu_sweep_profile"),
            "-f",
            "md",
            "-o",
            str(out),
            "--html-link",
            url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"]({url})" in out.read_text(encoding="utf-8")
