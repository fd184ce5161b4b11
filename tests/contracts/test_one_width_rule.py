"""One rule for a figure wider than itself, and one spelling of a change:
`contracts/wording/figures.py`
holds `too_wide` and the repeats' plural, and the report's estimates, the ranking of leads and
the leads' words call them (each kept its own copy, so the three could drift apart)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchscale.contracts import wording
from torchscale.contracts.wording.figures import change_text, too_wide
from torchscale.contracts.wording.spell import repeats_text
from torchscale.offline.analysis.ranking import Lead, judge_lead

PACKAGE = Path(__file__).resolve().parents[2] / "torchscale"
WORDING = PACKAGE / "contracts" / "wording"
# 'high - low > abs(value)', 'self.high - self.low > abs(...)', 'f["high"] - f["low"] > abs(...)'
WIDER = re.compile(r"high\S*\s*-\s*\S*low\S*\s*>\s*abs\(")
PLURAL = re.compile(r"repeat\{'' if")


def _written_in(pattern: re.Pattern[str]) -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if pattern.search(p.read_text())]


@pytest.mark.parametrize(
    ("pattern", "home"),
    [(WIDER, "figures.py"), (PLURAL, "spell.py")],
    ids=["wider-than-itself", "repeats-plural"],
)
def test_the_rule_is_written_once_in_the_wording_layer(pattern: re.Pattern[str], home: str) -> None:
    assert _written_in(pattern) == [WORDING / home]


def test_a_lead_is_spelled_as_every_change_is() -> None:
    """A clear lead of +15.5 % in [+8.2, +22.8] reads as `change_text` writes it ('+15.5 %
    ±7.3 %'), not in a second spelling ('+15 % [+8, +23]')."""
    finding = judge_lead(Lead(0.155, 0.082, 0.228, "bootstrap"), 4)
    assert finding.code == "lead.clear"
    assert wording.say(finding).startswith(f"{change_text(0.155, 0.082, 0.228)} throughput over")


def test_leads_words_and_ranking_judge_width_by_the_one_rule() -> None:
    lead = Lead(0.05, -0.05, 0.15, "t")  # wider than itself
    assert lead.wider_than_itself == too_wide(lead.change, lead.low, lead.high) is True
    said = wording.say(judge_lead(lead, 2))
    assert said.endswith(f"lead not measurable ({repeats_text(2)})")
    assert repeats_text(1) == "1 repeat" and repeats_text(4) == "4 repeats"


def test_a_share_shown_without_its_interval_keeps_three_figures() -> None:
    """A step split once read 'waiting 1.71 %, rest 0.1723 %': the rest took four
    figures from an interval the sentence does not show."""
    from torchscale.contracts.wording.figures import share_figure

    assert share_figure(0.001723, 0.001711, 0.001735) == "0.172 %"
    assert share_figure(0.0171, 0.0119, 0.0223) == "1.7 %"  # as beside "1.7 % ±0.5 %"


def test_a_figure_keeps_the_digits_its_half_width_supports() -> None:
    """'99.930 % ±0.047 %' once printed a digit its interval does not support. By the
    Particle Data Group's rule a half-width keeps two significant digits where its leading
    three are 100-354, else one; a lopsided interval's ends keep two digits."""
    from torchscale.contracts.wording.figures import (
        figure_with_interval,
        uncertainty_quantum,
        value_format,
    )

    share = value_format("pct")
    assert figure_with_interval(99.93, 99.883, 99.977, share) == "99.93 % ±0.05 %"
    assert figure_with_interval(99.93, 99.907, 99.953, share) == "99.930 % ±0.023 %"
    assert figure_with_interval(30.0, 13.0, 84.0, share) == "30 % [13, 84]"
    assert [uncertainty_quantum(s) for s in (0.354, 0.355, 0.97, 26_235.3)] == [
        0.01,
        0.1,
        0.1,
        1_000.0,
    ]
