"""The figures beyond the first screen's cards (`KeyFigures(role="more")`) are a compact list, one
line each after the best configuration table, in every format (HTML, PDF, Markdown, term); and
the HTML explains the glossary's terms where a heading or a card's label uses them (an
<abbr title> from `words.GLOSSARY`, every string escaped)."""

from __future__ import annotations

import re

import pytest

from tests.interfaces.test_report_html import Element, parse
from tests.report_sample import HOSTILE, sample_report
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.report.model import (
    Column,
    KeyFigure,
    KeyFigures,
    Report,
    Section,
    Table,
    Text,
)
from torchscale.interfaces.report.parts.words import GLOSSARY
from torchscale.interfaces.report.render import html, markdown, pdf

BEST_TITLE = "Best configuration per model"
CARDS = [
    KeyFigure(label="Cells measured", value="8 of 8", severity="good"),
    KeyFigure(label="Sync stall: tiny-gpt2 b16 x2 fp32 ddp", value=5.7, format="pct"),
]
MORE = [
    KeyFigure(
        label=f"Highest throughput: {HOSTILE}",
        value=63_000.0,
        format="rate",
        note="samples/s at b32 x1 fp32 ddp; noisy",
        severity="warn",
    ),
    KeyFigure(label="Scaling efficiency at 2 CPU ranks: tiny-mlp", value=0.149, format="ratio_pct"),
    KeyFigure(label="Cost per million samples", value=None, format="money", note="no price"),
]


def _report() -> Report:
    """A summary as the report builds it: cards, a line, the best configuration table, the
    figures beyond the cards."""
    best = Table(
        id="best-config",
        title=BEST_TITLE,
        columns=[
            Column(key="model", label="Model", align="left"),
            Column(key="config", label="Configuration", align="left"),
            Column(key="p50", label="Step p50", format="seconds"),
            Column(key="cv", label=f"Step CV {HOSTILE}", format="pct"),
        ],
        rows=[{"model": "tiny-gpt2", "config": "b32 x2 fp32 ddp", "p50": 0.0494, "cv": 3.1}],
    )
    summary = Section(
        id="summary",
        title="Executive summary",
        blocks=[
            KeyFigures(figures=CARDS),
            Text(text="2 of 8 cells reliable."),
            best,
            KeyFigures(figures=MORE, role="more"),
        ],
    )
    report = sample_report(1).model_copy(update={"sections": [summary], "regressions": None})
    assert isinstance(report, Report)
    return report


@pytest.fixture(scope="module")
def report() -> Report:
    return _report()


@pytest.fixture(scope="module")
def page(report: Report) -> Element:
    return parse(html.render(report).decode("utf-8")).root


def _value(figure: KeyFigure) -> str:
    return format_value(figure.value, figure.format)


def _after_table(elements: list[Element], root: Element) -> bool:
    order = list(root.iter())
    (table,) = [e for e in order if e.tag == "table" and e.attrs.get("id") == "best-config"]
    return all(order.index(e) > order.index(table) for e in elements)


def test_html_lists_the_figures_beyond_the_cards(page: Element) -> None:
    labels = [e.text() for e in page.find_all(lambda e: "card-label" in e.classes())]
    assert len(labels) == len(CARDS)
    assert all(text.endswith(f.label) for text, f in zip(labels, CARDS, strict=True))
    (listed,) = page.find_all(lambda e: "more-figures" in e.classes())
    assert listed.tag == "ul" and listed.attrs.get("data-role") == "more"
    items = [e for e in listed.children if isinstance(e, Element)]
    assert [e.tag for e in items] == ["li"] * len(MORE)
    for item, figure in zip(items, MORE, strict=True):
        text = item.text()
        assert figure.label in text and _value(figure) in text  # escaped: shown as text
        assert f"sev-{figure.severity}" in item.classes()
        assert not item.find_all(lambda e: e.classes() & {"card", "card-value"})
    assert _after_table([listed], page)


def test_pdf_lists_the_figures_beyond_the_boxes(report: Report) -> None:
    root = parse(pdf.render_html(report, charts={})).root
    boxes = root.find_all(lambda e: "kf" in e.classes())
    assert len(boxes) == len(CARDS)
    (listed,) = root.find_all(lambda e: "more-figures" in e.classes())
    items = [e for e in listed.children if isinstance(e, Element)]
    assert len(items) == len(MORE)
    for item, figure in zip(items, MORE, strict=True):
        assert figure.label in item.text() and _value(figure) in item.text()
    assert not listed.find_all(lambda e: "kf" in e.classes())
    order = list(root.iter())
    (table,) = [e for e in order if e.attrs.get("id") == "table-best-config"]
    assert order.index(listed) > order.index(table)


def test_markdown_lists_each_figure_on_one_line_after_the_table(report: Report) -> None:
    lines = markdown.render(report).decode("utf-8").splitlines()
    table_at = lines.index(f"### {BEST_TITLE}")
    for figure in MORE:
        label = markdown.escape(figure.label)
        (at,) = [i for i, line in enumerate(lines) if label in line]
        assert at > table_at
        assert lines[at].startswith("- ") and _value(figure) in lines[at]
        assert "**" not in lines[at]  # bold is the decision's alone


@pytest.mark.parametrize("full", [True, False])
def test_term_gives_each_figure_one_line_after_the_table(report: Report, full: bool) -> None:
    lines = term.render(report, width=120, full=full).decode("utf-8").splitlines()
    table_at = next(i for i, line in enumerate(lines) if line.strip() == BEST_TITLE)
    for figure in MORE:
        (at,) = [i for i, line in enumerate(lines) if figure.label in line]
        assert at > table_at and _value(figure) in lines[at]
        if figure.note:
            assert figure.note in lines[at]


def _abbrs(element: Element) -> dict[str, str]:
    return {e.text(): e.attrs["title"] for e in element.iter() if e.tag == "abbr"}


def test_a_heading_with_a_glossary_term_explains_it(page: Element) -> None:
    (table,) = page.find_all(lambda e: e.tag == "table" and e.attrs.get("id") == "best-config")
    headers = {th.text(): th for th in table.iter() if th.tag == "th"}
    assert _abbrs(headers["Step p50"]) == {"p50": GLOSSARY["p50"]}
    cv = headers[f"Step CV {HOSTILE}"]  # the rest of the heading stays text
    assert _abbrs(cv) == {"CV": GLOSSARY["CV"]}
    assert not [e for e in cv.iter() if e.tag == "script"]
    assert _abbrs(headers["Model"]) == {} and _abbrs(headers["Configuration"]) == {}


def test_a_card_label_with_a_glossary_term_explains_it(page: Element) -> None:
    cards = page.find_all(lambda e: "card-label" in e.classes())
    # 'sync stall' matches in any case; the layout 'ddp' in a configuration's name is not the
    # acronym DDP
    assert _abbrs(cards[1]) == {"Sync stall": GLOSSARY["sync stall"]}
    assert _abbrs(cards[0]) == {}


def test_glossed_escapes_the_text_and_the_meaning() -> None:
    text = str(html.glossed(f'p95 of {HOSTILE} "quoted" & CV'))
    assert HOSTILE not in text and "&lt;script&gt;" in text
    assert re.findall(r"<abbr title=\"[^\"<>]*\">(\w+)</abbr>", text) == ["p95", "CV"]
    assert str(html.glossed("MFU-like and rep50 or xCV")) == "MFU-like and rep50 or xCV"
