"""One rule for a figure wider than itself, and one spelling of a change:
`contracts/wording/figures.py`
holds `too_wide` and the repeats' plural, and the report's estimates, the ranking of leads and
the leads' words call them (each kept its own copy, so the three could drift apart)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchscale.contracts import wording
from torchscale.contracts.wording.figures import change_text, repeats_text, too_wide
from torchscale.offline.analysis.ranking import Lead, judge_lead

PACKAGE = Path(__file__).resolve().parents[2] / "torchscale"
HOME = PACKAGE / "contracts" / "wording" / "figures.py"
# 'high - low > abs(value)', 'self.high - self.low > abs(...)', 'f["high"] - f["low"] > abs(...)'
WIDER = re.compile(r"high\S*\s*-\s*\S*low\S*\s*>\s*abs\(")
PLURAL = re.compile(r"repeat\{'' if")


def _written_in(pattern: re.Pattern[str]) -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if pattern.search(p.read_text())]


@pytest.mark.parametrize("pattern", [WIDER, PLURAL], ids=["wider-than-itself", "repeats-plural"])
def test_the_rule_is_written_once_in_contracts_figures(pattern: re.Pattern[str]) -> None:
    assert _written_in(pattern) == [HOME]


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
    """Issue 72: a step split read 'waiting 1.71 %, rest 0.1723 %': the rest took four
    figures from an interval the sentence does not show."""
    from torchscale.contracts.wording.figures import share_figure

    assert share_figure(0.001723, 0.001711, 0.001735) == "0.172 %"
    assert share_figure(0.0171, 0.0119, 0.0223) == "1.71 %"
