"""The first screen's headline rules (docs/reporting.md, 'The first screen: headline rules'), one
test row per rule, over a real 8-cell sweep (tests/fixtures/cpu_busy_sweep/busy) whose cells are
given each reliability and busy-machine state in turn; and the rule that a figure whose interval
is wider than itself shows no number on the first screen (tests/fixtures/cpu_sweep_profile)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from torchscale.contracts.wording.report import words
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.model import MAX_CARDS, KeyFigure, KeyFigures, Report, Table, Text
from torchscale.interfaces.report.parts.context import Context, make_context
from torchscale.interfaces.report.parts.findings import collect_findings
from torchscale.interfaces.report.parts.headline import purpose, purpose_text, verdict
from torchscale.interfaces.report.parts.usability import judge
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sections import summary
from torchscale.interfaces.report.sources import read_sources

FIXTURES = Path(__file__).parents[1] / "fixtures"
SWEEP = FIXTURES / "cpu_busy_sweep" / "busy"
# a model line under "cannot be used": what was measured, no figure
UNUSED = f"{words('usable.not_used')} ({words('usable.unusable')})"
V3 = FIXTURES / "cpu_sweep_profile"
R, N, U = "reliable", "varies", "spread_unknown"


def scenario(cells: list[tuple[str, bool]]) -> Context:
    """The fixture's 8 cells, each given (reliability, busy machine)."""
    ctx = make_context(read_sources(SWEEP), ReportOptions(), None)
    table = ctx.cells.copy()
    assert len(table) == len(cells)
    table["reliability"] = [level for level, _ in cells]
    table["busy_machine"] = [busy for _, busy in cells]
    table["other_cpu_cores"] = [1.7 if busy else 0.01 for _, busy in cells]
    ctx = dataclasses.replace(ctx, cells=table)  # a new context: nothing derived from before
    ctx.findings = collect_findings(ctx)
    ctx.usability = judge(ctx)
    return ctx


def first_screen(ctx: Context) -> tuple[Text | None, list[Text], list[KeyFigure]]:
    """(headline, the decision's lines, the summary's cards)."""
    headline, decision = verdict(ctx)
    lines = [] if decision is None else [*decision.models, *filter(None, [decision.best])]
    cards = next(
        b for b in summary.build(ctx).blocks if isinstance(b, KeyFigures) and b.role == "cards"
    )
    return headline, lines, cards.figures


QUIET_RELIABLE, BUSY_RELIABLE, QUIET_NOISY = (R, False), (R, True), (N, False)
RULES: list[tuple[str, list[tuple[str, bool]], str]] = [
    ("every cell quiet and reliable", [QUIET_RELIABLE] * 8, "yes"),
    (
        "some quiet and reliable, the rest noisy",
        [QUIET_RELIABLE] * 2 + [QUIET_NOISY] * 6,
        "with care",
    ),
    ("some quiet and reliable, one busy", [QUIET_RELIABLE] * 7 + [BUSY_RELIABLE], "with care"),
    ("quiet, one repeat each", [(U, False)] * 8, "with care"),
    ("the reliable cells are the busy ones", [BUSY_RELIABLE] * 2 + [QUIET_NOISY] * 6, "no"),
    ("every cell noisy", [QUIET_NOISY] * 8, "no"),
    ("half the cells busy", [QUIET_RELIABLE] * 4 + [BUSY_RELIABLE] * 4, "no"),
]


@pytest.mark.parametrize(("name", "cells", "usable"), RULES, ids=[r[0] for r in RULES])
def test_headline_rules(name: str, cells: list[tuple[str, bool]], usable: str) -> None:
    ctx = scenario(cells)
    assert ctx.usability is not None and ctx.usability.usable == usable, name
    headline, lines, cards = first_screen(ctx)
    assert headline is not None
    opening = {
        "yes": "These numbers can be used:",
        "with care": "These numbers can be used with care:",
        "no": "These numbers cannot be used:",
    }[usable]
    # what the run is for comes first (a CPU sweep: no accelerator figure), then this verdict
    first = purpose_text(purpose(ctx))
    assert first.startswith("No accelerator figure here")
    assert headline.text.startswith(first + opening)
    if name == "the reliable cells are the busy ones":
        assert "no cell is both quiet and reliable" in headline.text
    # a green mark only on figures from quiet, reliable cells
    trusted = {i for i, (level, busy) in enumerate(cells) if level == R and not busy}
    if not trusted:
        assert all(t.severity != "good" for t in lines), [t.text for t in lines]
        model_cards = [c for c in cards if c.label.startswith(summary.MODEL_FIGURES)]
        assert all(c.severity != "good" for c in model_cards)
    if usable == "yes":
        assert headline.severity == "good"
    assert len(cards) <= MAX_CARDS


def test_a_green_best_only_from_quiet_reliable_cells() -> None:
    """The issue's sweep: the 2 reliable cells are the 2 busy ones. No check mark anywhere on
    the decision, and no best configuration is named."""
    ctx = scenario([BUSY_RELIABLE] * 2 + [QUIET_NOISY] * 6)
    _, lines, cards = first_screen(ctx)
    assert not [t.text for t in lines if t.severity == "good"]
    assert not [c.label for c in cards if c.severity == "good" and "throughput" in c.label]


def test_under_cannot_be_used_no_model_line_shows_a_figure() -> None:
    """Under "cannot be used" the decision's model lines show no figure, as the cards show
    none: a bare '63.33 % ±0.83 % of linear' (or a throughput, a cost, an MFU) there read as a
    clean figure. Each line says what was measured and that it is not usable."""
    ctx = scenario([QUIET_NOISY] * 8)
    assert ctx.usability is not None and ctx.usability.usable == "no"
    _, lines, cards = first_screen(ctx)
    models = [t for t in lines if not t.text.startswith("Best configuration")]
    assert models
    for line in models:
        assert not re.search(r"\d\s?%|samples/s|±", line.text), line.text
        assert line.text.endswith(UNUSED), line.text
        assert line.severity == "info"
    model_cards = [c for c in cards if c.label.startswith(summary.MODEL_FIGURES)]
    assert all(c.value is None or isinstance(c.value, str) for c in model_cards)


# ------------------------------------------------------------------------ not measurable

NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@pytest.fixture(scope="module")
def v3() -> Report:
    return build_report(read_sources(V3), ReportOptions(generated_at="2026-11-22T12:00:00Z"))


def _first_screen_texts(report: Report) -> list[str]:
    texts = [report.headline.text] if report.headline else []
    if report.decision is not None:
        texts += [t.text for t in [*report.decision.models, *filter(None, [report.decision.best])]]
    head = report.sections[0]
    for block in head.blocks:
        if isinstance(block, KeyFigures) and block.role == "cards":
            texts += [f"{f.label}: {f.value} ({f.note})" for f in block.figures]
        if isinstance(block, Table) and block.id == "summary-best":
            texts += [" ".join(str(v) for v in row.values()) for row in block.rows]
    return texts


def test_a_figure_wider_than_itself_has_no_number_on_the_first_screen(v3: Report) -> None:
    """tiny-mlp's best throughput (b8 x1: 7,438 in [4,547, 12,148], 2 repeats) and its
    scaling (25 % in [17 %, 44 %]) say nothing: 'not measurable (2 repeats)' on the card, in
    the headline and in the best configuration (which names none), and none of their digits."""
    texts = _first_screen_texts(v3)
    joined = "\n".join(texts)
    assert "not measurable (2 repeats)" in joined
    cards = [f for b in v3.sections[0].blocks if isinstance(b, KeyFigures) for f in b.figures]
    card = next(f for f in cards if f.label == "Highest throughput: tiny-mlp")  # cards or more
    # no highest figure is named from cells the page calls not measurable: the card says why
    assert card.value == "none named" and "not measurable (2 repeats)" in (card.note or "")
    assert "7,4" not in (card.note or "")
    for digits in ("7,438", "7,400", "7,437", "4,547", "4,500", "12,148", "12,100", "17-44"):
        assert digits not in joined, digits
    # v3's numbers cannot be used: its model line, like its cards, shows no figure at all
    model = next(t for t in texts if "tiny-mlp" in t and "scaling" in t)
    assert model.endswith(UNUSED) and "%" not in model


def test_cards_and_headline_never_disagree(v3: Report) -> None:
    """Each model's efficiency card says what the headline's model line says of it."""
    assert v3.decision is not None
    cards = {
        f.label: f for b in v3.sections[0].blocks if isinstance(b, KeyFigures) for f in b.figures
    }
    for line in v3.decision.models:
        model = line.text.split(",")[0]
        card = next((c for label, c in cards.items() if label.endswith(f": {model}")
                     and label.startswith("Scaling efficiency")), None)  # fmt: skip
        if card is None or card.value == words("usable.not_used"):  # no figure to disagree with
            continue
        if isinstance(card.value, str) and card.value.startswith("not measurable"):
            assert card.value in line.text
        else:
            assert "not measurable" not in line.text.split(";")[0]
