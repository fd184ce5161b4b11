"""The straggler verdict and its caveat stored as findings: a fresh diagnosis stores
codes and figures, never its sentences, worded when shown."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.offline.test_diagnosis import _table
from tests.offline.test_late_collectives import NO_ORDER, UNNAMED, tables
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say
from torchscale.interfaces.console.live_table import straggler_note
from torchscale.offline.analysis.diagnosis import (
    RunEvidence,
    TimerEvidence,
    diagnose,
    marked_injected,
    with_caveat,
)
from torchscale.offline.analysis.diagnosis.late_collectives import late_collectives

BUSY = Finding(code="caveat.busy_machine", figures={"cores": 1.8, "host": "vm"})


def _diagnosis(extra: dict[int, float], steps: int = 20) -> Diagnosis:
    diagnosis = diagnose(RunEvidence(timers=TimerEvidence(steps=_table(steps, 2, extra))))
    assert diagnosis is not None and diagnosis.straggler is not None
    return diagnosis


def _named(injected: bool, caveat: bool) -> Diagnosis:
    diagnosis = _diagnosis({1: 0.030})
    verdict = marked_injected(diagnosis.straggler, frozenset({1} if injected else ()))
    diagnosis = diagnosis.model_copy(update={"straggler": verdict})
    return with_caveat(diagnosis, BUSY if caveat else None)


def _late(injected: bool) -> Diagnosis:
    """A communication straggler named from the traces' waits (late_collectives.py)."""
    wait, own, step = tables(late_ms=8.0, work_ms=1.0)
    verdict = late_collectives(UNNAMED, NO_ORDER, wait, own, step)
    verdict = marked_injected(verdict, frozenset({3} if injected else ()))
    return _named(injected=False, caveat=True).model_copy(update={"straggler": verdict})


CASES = {
    "late": lambda: _late(injected=False),
    "late, injected": lambda: _late(injected=True),
    "named": lambda: _named(injected=False, caveat=False),
    "named, injected, busy": lambda: _named(injected=True, caveat=True),
    "not named": lambda: _diagnosis({}),
    "untested": lambda: _diagnosis({1: 0.030}, steps=3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fresh_verdict_stores_codes_not_sentences(case: str) -> None:
    diagnosis = CASES[case]()
    verdict = diagnosis.straggler
    assert verdict is not None and verdict.test.code == "straggler.test"
    line = verdict_words.line(verdict, diagnosis.ranks)
    assert line.code.startswith("straggler.")  # made from the fields, when shown
    coded = [verdict.test]
    if verdict.named:
        assert verdict.kind_rule is not None and verdict.kind_rule.code.startswith(
            "straggler.rule."
        )
        coded.append(verdict.kind_rule)
    else:
        assert verdict.why_not is not None and verdict.why_not.code.startswith("straggler.")
        coded.append(verdict.why_not)
    # the ranked problems (`findings`, worded by their own module) left aside
    stored = json.dumps(diagnosis.model_dump(mode="json", exclude={"findings"}))
    text = verdict_words.straggler_text(verdict, diagnosis.ranks)
    assert text and text not in stored  # its words are made when shown
    for finding in coded:
        assert say(finding) not in stored, finding.code
    if verdict.pattern is not None:  # a record, its words made when shown
        words = verdict_words.pattern_words(verdict.pattern)
        assert words is not None and words in text and words not in stored
    assert '"summary"' not in stored and '"said"' not in stored and '"not_named"' not in stored
    if verdict_words.caveat(diagnosis) is not None:
        assert diagnosis.busy == BUSY and verdict_words.caveat(diagnosis) not in stored


@pytest.mark.parametrize("case", ["named, injected, busy", "late, injected"])
def test_the_live_table_says_injected_first_in_the_same_line(case: str) -> None:
    """The live table's straggler note is the line every surface prints, with 'injected' said
    right after 'Straggler' (a narrow table may cut the end), made by the wording layer."""
    diagnosis = CASES[case]()
    verdict = diagnosis.straggler
    assert verdict is not None and verdict.injected
    line = verdict_words.straggler_text(verdict, 2)
    assert line.startswith("Straggler" + verdict_words.INJECTED + ": rank ")
    assert line.count(verdict_words.INJECTED) == 1
    plain = verdict_words.straggler_text(verdict.model_copy(update={"injected": False}), 2)
    assert line == plain.replace("Straggler", "Straggler" + verdict_words.INJECTED, 1)
    result = SimpleNamespace(diagnosis=diagnosis, cell=SimpleNamespace(world_size=2))
    assert straggler_note(result, pd.Series(dtype=object)) == line  # type: ignore[arg-type]
