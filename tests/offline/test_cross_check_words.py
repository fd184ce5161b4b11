"""Schema 20 stores what a cross-check found as a code and its figures
(contracts/wording/cross_checks.py words it); the reader turns the sentences schemas 16-19
stored back into codes where today's words for them are those sentences exactly
(upgrades/cross_check_words.py), and keeps anything else as stored words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.cross_checks import detail
from torchscale.offline.results.upgrades.cross_check_words import detail_finding
from torchscale.offline.results.upgrades.stored_words import upgrade_v19
from torchscale.offline.results.versions import parse_cell_result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INJECTED = (
    FIXTURES / "cpu_profile_injected/standalone/profile/tiny-mlp__b8__w2__fp32__ddp__9a305f17"
)


def _f(code: str, **figures: object) -> Finding:
    return Finding(code=f"cross_check.{code}", figures=figures)


HOLD = {"rank": 1, "held_s": 0.0123}
# why arrival order names nobody (the trace analysis' reasons the checks quote)
REASONS = [
    Finding(code="arrival.none_matched"),
    Finding(code="arrival.none_clear"),
    Finding(code="arrival.none_stands_out", figures={"rank": 2, "share": 0.4, "threshold": 0.5}),
    Finding(code="arrival.tie", figures={"rank": 0, "other": 1}),
    Finding(code="arrival.chance", figures={"rank": 3, "last": 6, "matched": 10, "p": 0.079}),
    Finding(code="arrival.noise", figures={"rank": 1, "late_us": 4.2, "min_us": 10.0}),
    Finding(
        code="arrival.last", figures={"rank": 1, "share": 0.9, "expected": 0.5, "late_us": 812.0}
    ),
]
WAITED = {"rank": 1, "held_s": 0.0035, "by": "median"}
# one finding per code whose words carry all their figures, as today's writers store them
RECOGNISED = [
    _f("paired_slower", rank=1, p=0.0009765625),
    _f("paired_not_slower", rank=0, p=0.31),
    _f("paired_not_slower", rank=0, p=None),
    _f("waits_reversed", rank=1, source="phase timers"),
    _f("waited_for", rank=1),
    _f("not_waited_for", rank=2),
    _f("waits_small", rank=0),
    _f("waits_outside", rank=1, min_share=0.05, source="matched collectives"),
    _f("arrival_undecided"),
    _f("arrival_confirms", rank=1, last=10, matched=10, expected=0.5, p=0.002),
    _f("arrival_alone_names", rank=1, last=9, matched=10, expected=0.5, p=0.02),
    _f("arrival_other", rank=1, last=2, matched=10, other=0, other_share=0.8),
    *(
        _f("arrival_no_standout", rank=1, last=5, matched=10, reason=why.model_dump())
        for why in REASONS
    ),
    *(_f("arrival_chance", reason=why.model_dump()) for why in REASONS),
    _f("arrival_names_other", other=3, other_share=0.75),
    _f("no_sync_few_steps"),
    _f("no_sync_agrees", model_low=0.056, model_high=0.121),
    _f("no_sync_costs_more", low=0.2, high=0.3, model_low=0.05, model_high=0.12),
    _f("no_sync_saves_less", low=0.01, high=0.02, model_low=0.05, model_high=0.12),
    _f("cpu_wait_unmeasured"),
    _f("cpu_wait_neutral", **WAITED),
    _f("cpu_wait_neutral", rank=1, held_s=0.0, by="rate"),
    _f("cpu_held_other", **HOLD),
    _f("cpu_wait_host", **WAITED, left=[0.0134, 0.0091, 0.0177]),
    _f("cpu_wait_slow", **WAITED, left=[0.0506, 0.0505, 0.0507], input=False),
    _f("cpu_wait_slow", **WAITED, left=[0.000014, -0.000014, 0.000042], input=True),
    _f("held_none", **HOLD),
    _f("held_waits", **HOLD, work_s=-0.0041),
    _f("held_behind", **HOLD, named=0),
    _f("held_host", **HOLD),
    _f("held_compute", **HOLD, work_s=0.0201),
    _f("held_late", **HOLD),
]


@pytest.mark.parametrize("found", RECOGNISED, ids=lambda f: f.code)
def test_todays_words_read_back_as_their_code(found: Finding) -> None:
    words = wording.say(found)
    read = detail_finding(words)
    assert read is not None, words
    assert read["code"] == found.code and wording.say(Finding(**read)) == words


def test_a_quoted_reason_not_said_today_leaves_the_check_stored() -> None:
    words = "rank 1 arrives last at 8 of 10 matched collectives; no rank stands out (p = 0.11)"
    assert detail_finding(words) is None


def test_the_upgrade_codes_exact_words_and_keeps_older_ones() -> None:
    """The schema-14 run's checks: the others' wait reads as today's words say it (a code);
    its CPU wait (an interval spelled as '95 % interval ... to ...') and arrival order ('50%')
    were said otherwise, and stay as stored, shown word for word."""
    data = json.loads((INJECTED / "result.json").read_text())
    stored = {c["name"]: c["detail"] for c in data["diagnosis"]["cross_checks"]}
    result = parse_cell_result(data)[0]
    assert result is not None and result.diagnosis is not None
    checks = {c.name: c.detail for c in result.diagnosis.cross_checks}
    waited = checks["others' wait for it (matched collectives)"]
    assert waited == _f("waited_for", rank=1)
    for name in ("CPU wait (host)", "arrival order (last arriver)", "phase timers: straggler"):
        assert checks[name] == stored[name]
    assert all(detail(checks[name]) == stored[name] for name in stored)


def test_upgrade_v19_codes_a_schema_19_detail() -> None:
    said = wording.say(_f("held_late", **HOLD))
    check = {"name": "n", "method": "m", "estimate": None, "agrees": True, "detail": said}
    data = {"schema_version": 19, "diagnosis": {"cross_checks": [check, {**check, "detail": "x"}]}}
    upgraded = upgrade_v19(data)["diagnosis"]["cross_checks"]
    assert upgraded[0]["detail"] == _f("held_late", **HOLD).model_dump()
    assert upgraded[1]["detail"] == "x"
