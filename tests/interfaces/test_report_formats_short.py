"""Short formats: each format shows the decision and what carries it, and builds only that.

On fixture results: the 8-cell sweep of tests/fixtures/cpu_busy_sweep/busy and the 2-rank
profile of tests/fixtures/cpu_sweep_profile/profile. The PDF of the sweep fits in 6 pages and the
profile's in 3 (`--full` has every section); the HTML draws the PDF's SVG charts (plotly only with
--interactive) and stays under 1.5 MB; the Markdown fits a pull-request comment with bold on
the decision alone and no path of this machine; Markdown and JSON never draw a chart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fresh_interpreter import run_probe
from tests.report_sample import HOSTILE, HOSTILE_IMG, sample_report
from torchscale.interfaces.api import build_report
from torchscale.interfaces.report.model import Report, Text
from torchscale.interfaces.report.progress import Step
from torchscale.interfaces.report.render import html, markdown, pdf
from torchscale.interfaces.report.short import (
    MAX_CHARTS,
    PROFILE_SECTIONS,
    SHORT_SECTIONS,
    SUMMARY_SECTIONS,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SWEEP = FIXTURES / "cpu_busy_sweep" / "busy"  # 8 cells, two models, 1 and 2 ranks
PROFILE = FIXTURES / "cpu_sweep_profile" / "profile"  # one profiled 2-rank run
MAX_SWEEP_PAGES = 6
MAX_PROFILE_PAGES = 3
MAX_HTML_BYTES = 1_500_000
GITHUB_COMMENT_CHARS = 65_536
SHORT_MARKDOWN_CHARS = 16_000  # an 8-cell comment reads in a minute, far under GitHub's limit


def _pages(report: Report) -> int:
    """The PDF's page count as WeasyPrint laid it out (the document's own count, which the
    renderer reports as its last step)."""
    steps: list[Step] = []
    content = pdf.render(report, on_step=steps.append)
    assert content.startswith(b"%PDF-")
    return [s.total for s in steps if s.stage == "pages"][-1]


def _model(source: Path, fmt: str, tmp_path: Path, full: bool = False) -> Report:
    """The report model a format builds (json: written; the others: built and rendered)."""
    run = build_report(source, fmt, output=tmp_path / f"r.{fmt}", full=full)
    return run.report


@pytest.fixture(scope="module")
def sweep_short(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return _model(SWEEP, "json", tmp_path_factory.mktemp("short"))


@pytest.fixture(scope="module")
def sweep_full(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return _model(SWEEP, "json", tmp_path_factory.mktemp("full"), full=True)


def test_the_fixtures_are_an_8_cell_sweep_and_a_profile(sweep_full: Report, tmp_path: Path) -> None:
    assert sum(s.cells for s in sweep_full.current_sources()) == 8
    profile = _model(PROFILE, "json", tmp_path)
    assert sum(s.profiles for s in profile.current_sources()) == 1
    assert sum(s.cells for s in profile.current_sources()) == 0


def test_the_short_report_keeps_the_decision_and_says_what_it_left_out(
    sweep_short: Report, sweep_full: Report
) -> None:
    short_ids = [s.id for s in sweep_short.sections]
    full_ids = [s.id for s in sweep_full.sections]
    assert set(short_ids) <= SHORT_SECTIONS
    assert short_ids == [i for i in full_ids if i in short_ids]  # the full report's order
    assert set(full_ids) - set(short_ids)  # something is left out, and said once:
    assert sweep_short.headline == sweep_full.headline
    assert sweep_short.decision == sweep_full.decision
    summary = sweep_short.section("summary")
    assert summary is not None
    said = [b for b in summary.blocks if isinstance(b, Text) and "--full" in b.text]
    assert len(said) == 1 and "short report" in said[0].text
    assert 0 < len(sweep_short.charts()) <= MAX_CHARTS < len(sweep_full.charts())
    assert all(c.id.endswith("-efficiency") for c in sweep_short.charts())


def test_a_profile_keeps_its_diagnosis(tmp_path: Path) -> None:
    report = _model(PROFILE, "json", tmp_path)
    ids = {s.id for s in report.sections}
    assert ids <= SHORT_SECTIONS | PROFILE_SECTIONS and ids >= PROFILE_SECTIONS
    assert len(report.charts()) == 1  # its stall per rank and step


@pytest.mark.slow
def test_the_sweep_pdf_fits_in_6_pages_and_full_has_more(
    sweep_short: Report, sweep_full: Report
) -> None:
    short = _pages(sweep_short)
    assert short <= MAX_SWEEP_PAGES
    assert _pages(sweep_full) > short


@pytest.mark.slow  # starts a child process
def test_the_profile_pdf_fits_in_3_pages(tmp_path: Path) -> None:
    assert _pages(_model(PROFILE, "json", tmp_path)) <= MAX_PROFILE_PAGES


@pytest.mark.parametrize("source", [SWEEP, PROFILE], ids=["sweep", "profile"])
def test_the_html_is_small_draws_svg_and_holds_every_section(
    source: Path, tmp_path: Path, sweep_full: Report
) -> None:
    run = build_report(source, "html", output=tmp_path / "r.html")
    page = run.outcome.content.decode("utf-8")
    assert len(run.outcome.content) <= MAX_HTML_BYTES
    assert "plotly" not in page.lower()
    charts = run.report.charts()
    assert charts and f'data-charts-rendered="{len(charts)}"' in page
    assert page.count("<svg ") == len(charts)
    assert "<title>" in page.split("<main>", 1)[1]  # hover titles on the series
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # clip paths and markers of two charts never clash
    if source == SWEEP:  # the HTML holds every section, whatever the short formats keep
        assert [s.id for s in run.report.sections] == [s.id for s in sweep_full.sections]


def test_interactive_html_is_plotly(tmp_path: Path) -> None:
    run = build_report(PROFILE, "html", output=tmp_path / "r.html", interactive=True)
    page = run.outcome.content.decode("utf-8")
    assert '<script data-lib="plotly.js">' in page and 'class="chart-svg"' not in page


def test_static_html_escapes_every_user_string() -> None:
    page = html.render(sample_report()).decode("utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # the SVG charts carry the hostile names as text, escaped by svg_direct
    svg = page[page.index("<svg ") :]
    assert "&lt;script&gt;" in svg and HOSTILE not in svg
    scripts = re.findall(r"<script\b", page)
    assert len(scripts) == 2  # the error recorder and the table cues: no chart needs one
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp.count("sha256-") == 2
    assert html.render(sample_report()) == html.render(sample_report())  # deterministic
    assert HOSTILE_IMG not in page


def test_markdown_fits_a_comment_bold_only_on_the_decision_no_local_path(
    tmp_path: Path,
) -> None:
    build_report(SWEEP, "html", output=tmp_path / "report.html")  # an HTML report beside it
    run = build_report(SWEEP, "md", output=tmp_path / "report.md")
    text = run.outcome.content.decode("utf-8")
    assert len(text) <= SHORT_MARKDOWN_CHARS < GITHUB_COMMENT_CHARS
    assert run.report.headline is not None
    bold = re.findall(r"\*\*(.+?)\*\*", text)
    assert bold == [markdown.inline(run.report.headline.text)]
    assert str(tmp_path) not in text and str(SWEEP) not in text and str(FIXTURES) not in text
    assert "Full report (charts, every table): report.html" in text
    assert {s.id for s in run.report.sections} <= SUMMARY_SECTIONS  # built only what it shows


def test_markdown_full_has_every_section_and_still_fits(tmp_path: Path) -> None:
    run = build_report(SWEEP, "md", output=tmp_path / "report.md", full=True)
    text = run.outcome.content.decode("utf-8")
    assert len(text) <= markdown.MAX_CHARS
    for section in run.report.sections:
        assert f"## {markdown.escape(section.title)}" in text


PROBE = """
import json, sys
from torchscale.interfaces.api import build_report
for fmt in ("md", "json"):
    build_report(sys.argv[1], fmt, output=sys.argv[2] + "/r." + fmt)
heavy = ("matplotlib", "weasyprint", "plotly")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


@pytest.mark.slow  # starts a fresh interpreter
def test_markdown_and_json_draw_no_chart(tmp_path: Path) -> None:
    """Neither format draws or lays out anything: matplotlib, WeasyPrint and plotly are never
    imported (in a fresh interpreter, so nothing else in the suite imported them first)."""
    assert run_probe(PROBE, str(SWEEP), str(tmp_path)) == []
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert {s["id"] for s in written["sections"]} <= SHORT_SECTIONS
