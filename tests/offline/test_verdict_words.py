"""The straggler verdict and its caveat stored as findings (issue 72): a fresh diagnosis stores
codes and figures, never its sentences, worded when shown."""

from __future__ import annotations

import json

import pytest

from tests.offline.test_diagnosis import _table
from tests.offline.test_late_collectives import NO_ORDER, UNNAMED, tables
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import Diagnosis
from torchscale.contracts.wording import verdicts as verdict_words
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
    assert verdict is not None and verdict.said is not None
    assert verdict.said.code.startswith("straggler.")
    assert verdict.named or verdict.why_not is not None
    # the ranked problems (`findings`, worded by their own part of issue 72) left aside
    stored = json.dumps(diagnosis.model_dump(mode="json", exclude={"findings"}))
    assert (
        verdict_words.summary(verdict) and verdict_words.summary(verdict) not in stored
    )  # its words are made when shown
    assert '"summary"' not in stored and '"not_named"' not in stored
    if verdict_words.caveat(diagnosis) is not None:
        assert diagnosis.busy == BUSY and verdict_words.caveat(diagnosis) not in stored


@pytest.mark.parametrize("case", ["named, injected, busy", "late, injected"])
def test_the_live_table_says_injected_first_in_the_same_line(case: str) -> None:
    """The live table's straggler note is the line every surface prints, with 'injected' said
    right after 'Straggler' (a narrow table may cut the end), made by the wording layer."""
    verdict = CASES[case]().straggler
    assert verdict is not None and verdict.injected
    line = verdict_words.straggler_text(verdict, 2)
    first = verdict_words.straggler_text(verdict, 2, injected_first=True)
    assert line.startswith("Straggler: ") and line.endswith(verdict_words.INJECTED)
    assert first == "Straggler" + verdict_words.INJECTED + line.removesuffix(
        verdict_words.INJECTED
    ).removeprefix("Straggler")
