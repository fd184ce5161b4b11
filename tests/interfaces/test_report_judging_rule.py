"""The rule a diagnosis was judged by is the one it states (`Diagnosis.rule`), never inferred
from figures without an interval: today's result of one measured step has no interval
anywhere, yet was judged by today's rule, so the report says nothing of another rule and
shows the no_sync exposed seconds only where the split does not know the exposed share.

The one-step fixture is a real `torchscale sweep` of tiny-mlp on 2 CPU ranks, 1 step, 1
repeat (schema 14); the older one is the version-7 cell, read through its upgrade.
"""

from __future__ import annotations

import json
from pathlib import Path

import torchscale.results
from tests.interfaces.test_report_uncertainty import build, rendered, table
from torchscale.interfaces.report.diagnosis_text import judging_rules
from torchscale.offline.results.versions import parse_cell_result

FIXTURES = Path(__file__).parents[1] / "fixtures"
ONE_STEP = FIXTURES / "cpu_one_step"
OLD = FIXTURES / "results_v7" / "cpu_tiny_mlp_ddp_w2.json"
RULE_WORDING = (
    "Diagnosis without an interval",
    "finds by the rule it states",
    "none found by their rule",
    "judged by thresholds",
)


def test_one_step_result_has_no_interval_and_states_no_rule() -> None:
    (result,) = torchscale.results.load(ONE_STEP).results
    diagnosis = result.diagnosis
    assert diagnosis is not None and diagnosis.rule is None
    estimates = [diagnosis.step_s, *(p.share for p in diagnosis.parts)]
    assert all(e.low is None and e.high is None for e in estimates)


def test_one_step_result_renders_no_other_rule() -> None:
    report = build(ONE_STEP)
    for fmt, text in rendered(report).items():
        for words in RULE_WORDING:
            assert words not in text, (fmt, words)
    step_model = table(report, "efficiency-step-model")
    assert "exposed_s" not in {c.key for c in step_model.columns}
    assert "A split without an interval is read from" not in (step_model.note or "")


def test_an_upgraded_result_states_its_rule() -> None:
    result, _, _ = parse_cell_result(json.loads(OLD.read_text(encoding="utf-8")))
    assert result is not None and result.diagnosis is not None and result.diagnosis.rule is not None
    assert "judged by thresholds" in result.diagnosis.rule
    (today,) = torchscale.results.load(ONE_STEP).results
    assert judging_rules([today.diagnosis, result.diagnosis, None]) == {result.diagnosis.rule: 1}
