"""The PDF report's charts read back from the PDF itself: poppler's word boxes put
each legend under its plot and no taller than it, and the page rendered to pixels holds every
series in its model colour (the colour the HTML draws it in). Charts from the 500-cell results
of benchmarks/report_scale.py, where a 250-entry legend covered the plot."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from tests.scale_sample import scale_report
from torchscale.interfaces.report.charts.plot import Plot, plot
from torchscale.interfaces.report.model import Chart, Report, Section
from torchscale.interfaces.report.render import pdf

PDFTOTEXT = shutil.which("pdftotext")
PDFTOPPM = shutil.which("pdftoppm")
pytestmark = pytest.mark.skipif(
    PDFTOTEXT is None or PDFTOPPM is None,
    reason="pdftotext and pdftoppm (poppler-utils) are not installed",
)
WORD = re.compile(
    r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>'
)
CHARTS = ("strategies-memory", "scaling-weak-throughput-scale-model-1", "latency-steps-scale")
DPI = 150


def _one_chart_pdf(report: Report, chart: Chart, path: Path) -> Path:
    # the chart alone under the title: the decision's lines would push it to page 2
    single = report.model_copy(
        update={
            "sections": [Section(id="scaling", title="Chart", blocks=[chart])],
            "decision": None,
        }
    )
    path.write_bytes(pdf.render(single))
    return path


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Plot, Path]]:
    work = tmp_path_factory.mktemp("pdf-charts")
    report = scale_report(work)
    out = []
    for prefix in CHARTS:
        chart = next(c for c in report.charts() if c.id.startswith(prefix))
        out.append((plot(chart), _one_chart_pdf(report, chart, work / f"{prefix}.pdf")))
    return out


def _words(path: Path) -> list[tuple[float, float, float, float, str]]:
    """The first page's words with their boxes (points, y down)."""
    assert PDFTOTEXT is not None
    done = subprocess.run(
        [PDFTOTEXT, "-bbox", "-f", "1", "-l", "1", str(path), "-"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return [
        (float(x0), float(y0), float(x1), float(y1), text)
        for x0, y0, x1, y1, text in WORD.findall(done.stdout.decode("utf-8"))
    ]


@pytest.mark.slow
def test_each_legend_lies_under_its_plot_and_is_shorter(pdfs: list[tuple[Plot, Path]]) -> None:
    for p, path in pdfs:
        words = _words(path)
        # the plot's extent: from its top to its bottom y tick label, at the left of the chart
        tick_words = {text.split()[0] for text in p.y.tick_text}
        candidates = [w for w in words if w[4] in tick_words and w[0] < 120]
        # y tick labels are right-aligned on one edge; a note's number under the chart is not
        edge = Counter(round(w[2]) for w in candidates).most_common(1)[0][0]
        ticks = [w for w in candidates if round(w[2]) == edge]
        assert len(ticks) >= 3, (p.id, ticks)
        plot_top, plot_bottom = min(w[1] for w in ticks), max(w[3] for w in ticks)
        # the x axis title: the first of its words under the plot (the page title may have it)
        title = min(
            (w for w in words if w[4] == p.x.title.split()[-1] and w[1] > plot_bottom),
            key=lambda w: w[1],
        )
        legend_words = {e.label.split()[0] for e in p.legend}
        legend = [w for w in words if w[4] in legend_words]
        assert len(legend) >= len(p.legend), (p.id, legend)
        top, bottom = min(w[1] for w in legend), max(w[3] for w in legend)
        assert top >= title[3], (p.id, "legend over the plot")
        assert bottom - top <= plot_bottom - plot_top, (p.id, "legend taller than the plot")


@pytest.mark.slow
def test_every_series_colour_is_on_the_page(pdfs: list[tuple[Plot, Path]]) -> None:
    assert PDFTOPPM is not None
    for p, path in pdfs:
        prefix = path.with_suffix("")
        subprocess.run(
            [PDFTOPPM, "-r", str(DPI), "-f", "1", "-l", "1", "-png", str(path), str(prefix)],
            check=True,
            timeout=120,
        )
        (page,) = path.parent.glob(f"{prefix.name}-*1.png")
        colours = Image.open(page).convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None
        counts = {"#{:02x}{:02x}{:02x}".format(*rgb): n for n, rgb in colours}
        for series in p.series:
            # exact pixels of the series colour: lines, bars and box edges are opaque
            assert counts.get(series.colour.lower(), 0) >= 10, (p.id, series.name)
