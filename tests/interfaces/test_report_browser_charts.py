"""The HTML report's charts as a real headless Chromium lays them out at 1400 px: no legend
taller than its plot or lying over it, and each series in the colour the static SVG (the PDF's
and the plain HTML's) draws it in. Charts from the 500-cell results of
benchmarks/report_scale.py, where a legend stood 1,000 px tall over a 100 px plot, and from the
hand-made sample report."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import pytest

from tests.interfaces.test_report_browser import (
    CHROMIUM,
    Node,
    Tree,
    chromium_argv,
    run_chromium,
    wait_gone,
)
from tests.interfaces.test_svg_direct import legend_entries, parse
from tests.report_sample import paired_chart, sample_report
from tests.scale_sample import one_per_family, scale_report
from torchscale.interfaces.report.charts.plot import plot
from torchscale.interfaces.report.model import Chart, Report, Section
from torchscale.interfaces.report.render import html as html_format
from torchscale.interfaces.report.render import svg_direct

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs a headless Chromium on PATH (Debian package `chromium`; CI installs it)",
)


def render(report: Report) -> bytes:
    """The interactive page (plotly), what this module checks in a browser."""
    return html_format.render(report, interactive=True)


WIDTH_PX = 1400
_TRANSLATE = re.compile(r"translate\(([-\d.]+),\s*([-\d.]+)\)")
_RGB = re.compile(r"(?:stroke|fill): rgb\((\d+), (\d+), (\d+)\)")
_URL = re.compile(r'fill: url\("?#([^")]+)"?\)')


def _dom(work: Path, page: bytes) -> Node:
    path = work / f"charts-{uuid.uuid4().hex}.html"
    path.write_bytes(page)
    profile = work / f"chromium-profile-{uuid.uuid4().hex}"
    argv = chromium_argv(profile, f"--window-size={WIDTH_PX},1000", "--dump-dom", path.as_uri())
    result = run_chromium(argv)
    assert wait_gone(str(profile)) == []
    shutil.rmtree(profile, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    tree = Tree()
    tree.feed(result.stdout)
    tree.close()
    return tree.root


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Chart], Node]:
    work = tmp_path_factory.mktemp("browser-charts")
    charts = [
        *one_per_family(scale_report(work).charts()),
        *sample_report().charts(),
        paired_chart(),
    ]
    report = sample_report().model_copy(
        update={"sections": [Section(id="scaling", title="Charts", blocks=charts)]}
    )
    assert isinstance(report, Report)
    return charts, _dom(work, render(report))


def _find(node: Node, cls: str) -> list[Node]:
    return [n for n in node.iter() if cls in n.classes()]


def _chart(root: Node, chart_id: str) -> Node:
    (div,) = [n for n in root.iter() if n.attrs.get("id") == chart_id]
    return div


def _hex(rgb: tuple[str, str, str]) -> str:
    return "#" + "".join(f"{int(v):02x}" for v in rgb)


def _pattern_colours(root: Node) -> dict[str, str]:
    """Pattern id -> its background colour (a hatched bar's series colour)."""
    colours = {}
    for pattern in (n for n in root.iter() if n.tag == "pattern"):
        rect = next((c for c in pattern.iter() if c.tag == "rect"), None)
        fill = re.match(r"rgb\((\d+), (\d+), (\d+)\)", rect.attrs.get("fill", "")) if rect else None
        if fill:
            colours[pattern.attrs["id"]] = _hex(fill.groups())  # type: ignore[arg-type]
    return colours


def _legend_colours(div: Node, patterns: dict[str, str]) -> dict[str, str]:
    """Legend label -> the colour of its symbol, as the browser drew it."""
    out = {}
    for item in _find(div, "traces"):
        texts = _find(item, "legendtext")
        if not texts:
            continue
        label = texts[0].text()
        for path in (n for n in item.iter() if n.tag == "path"):
            style = path.attrs.get("style", "")
            url = _URL.search(style)
            rgb = _RGB.search(style)
            if url and url.group(1) in patterns:
                out[label] = patterns[url.group(1)]
                break
            if rgb and rgb.groups() != ("255", "255", "255"):
                out[label] = _hex(rgb.groups())  # type: ignore[arg-type]
                break
    return out


def _pdf_legend_colours(chart: Chart) -> dict[str, str]:
    return dict(legend_entries(parse(svg_direct.chart_svg(chart))))


@pytest.mark.slow
def test_no_legend_is_taller_than_its_plot_or_over_it(drawn: tuple[list[Chart], Node]) -> None:
    charts, root = drawn
    for chart in charts:
        div = _chart(root, chart.id)
        (area,) = [n for n in _find(div, "nsewdrag") if n.attrs.get("data-subplot") == "xy"]
        plot_top, plot_height = float(area.attrs["y"]), float(area.attrs["height"])
        assert plot_height >= 250, chart.id  # the plot keeps its height
        legends = _find(div, "legend")
        if not plot(chart).legend:
            assert not legends, chart.id
            continue
        (legend,) = legends
        (background,) = [n for n in legend.iter() if "bg" in n.classes()]
        height = float(background.attrs["height"])
        match = _TRANSLATE.search(legend.attrs["transform"])
        assert match is not None
        top = float(match.group(2))
        assert height <= plot_height, (chart.id, height, plot_height)
        assert top + height <= plot_top, (chart.id, top + height, plot_top)  # above, not over


@pytest.mark.slow
def test_each_series_has_the_static_svgs_colour(drawn: tuple[list[Chart], Node]) -> None:
    """b32 was yellow in the interactive HTML and vermillion in the PDF."""
    charts, root = drawn
    patterns = _pattern_colours(root)
    for chart in charts:
        model = {e.label: e.colour.lower() for e in plot(chart).legend}
        if not model:
            continue
        html_colours = _legend_colours(_chart(root, chart.id), patterns)
        assert html_colours == model, chart.id
        assert _pdf_legend_colours(chart) == model, chart.id
