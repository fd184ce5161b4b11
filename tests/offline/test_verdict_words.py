"""The straggler verdict and its caveat stored as findings (issue 72): a fresh diagnosis stores
codes and figures, never its sentences; the words result schema 16-19 stored for each are read
back into the same findings; words no code says stay as stored, shown unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
from torchscale.offline.results.upgrades.verdict_words import coded_diagnosis
from torchscale.offline.results.versions import parse_cell_result

FIXTURES = Path(__file__).parents[1] / "fixtures"
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


def _as_version_19(diagnosis: Diagnosis) -> dict[str, Any]:
    """The diagnosis as result schema 19 stored it: its verdict's line, why not named and its
    caveat in words (the words are today's: the wording did not change)."""
    data = diagnosis.model_dump(mode="json")
    verdict = diagnosis.straggler
    assert verdict is not None
    data["straggler"] = {
        **{k: v for k, v in data["straggler"].items() if k not in ("said", "why_not")},
        "summary": verdict_words.summary(verdict),
        "not_named": verdict_words.why_not(verdict),
    }
    data.pop("busy")
    data["caveat"] = verdict_words.caveat(diagnosis)
    return data


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fresh_verdict_stores_codes_not_sentences(case: str) -> None:
    diagnosis = CASES[case]()
    verdict = diagnosis.straggler
    assert verdict is not None and verdict.said is not None
    assert verdict.said.code.startswith("straggler.") and verdict.stored_summary is None
    assert verdict.named or (verdict.why_not is not None and verdict.stored_not_named is None)
    # the ranked problems (`findings`, worded by their own part of issue 72) left aside
    stored = json.dumps(diagnosis.model_dump(mode="json", exclude={"findings"}))
    assert (
        verdict_words.summary(verdict) and verdict_words.summary(verdict) not in stored
    )  # its words are made when shown
    assert '"summary"' not in stored and '"not_named"' not in stored
    if verdict_words.caveat(diagnosis) is not None:
        assert diagnosis.busy == BUSY and verdict_words.caveat(diagnosis) not in stored


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_words_of_schema_19_read_back_into_the_same_findings(case: str) -> None:
    """Each sentence schema 19 stored becomes its finding again. A late straggler's own work
    and step are figures only its sentence held (3 significant figures): read off it, they
    word the same."""
    diagnosis = CASES[case]()
    upgraded = Diagnosis.model_validate(coded_diagnosis(_as_version_19(diagnosis)))
    before, after = diagnosis.straggler, upgraded.straggler
    assert before is not None and after is not None and before.said is not None
    assert after.said is not None and after.said.code == before.said.code
    assert after.stored_summary is None and after.stored_not_named is None
    assert verdict_words.summary(after) == verdict_words.summary(before)
    if before.said.code == "straggler.late":
        after = after.model_copy(update={"said": before.said})
        upgraded = upgraded.model_copy(update={"straggler": after})
    assert upgraded == diagnosis


def test_words_no_code_says_stay_as_stored_and_read_as_before() -> None:
    """A schema-14 verdict (its gap's interval said in the older words): kept as stored words,
    shown exactly as the file has them, marked as stored; its caveat is recognised."""
    path = FIXTURES / "cpu_profile_injected/standalone/profile"
    path = next(path.glob("*/result.json"))
    raw = json.loads(path.read_text())
    result, _, problem = parse_cell_result(raw)
    assert problem is None and result is not None and result.diagnosis is not None
    verdict = result.diagnosis.straggler
    assert verdict is not None and verdict.said is None
    assert (
        verdict.stored_summary
        == raw["diagnosis"]["straggler"]["summary"]
        == verdict_words.summary(verdict)
    )
    assert result.diagnosis.busy is not None and result.diagnosis.stored_caveat is None
    assert verdict_words.caveat(result.diagnosis) == raw["diagnosis"]["caveat"]


def test_a_kept_reason_is_recognised_where_its_words_are_a_codes() -> None:
    raw = json.loads((FIXTURES / "cells_v12_GONE/cpu_tiny_mlp_ddp_w2.json").read_text())
    result, _, _ = parse_cell_result(raw)
    assert result is not None and result.diagnosis is not None
    verdict = result.diagnosis.straggler
    assert verdict is not None and verdict.why_not == Finding(code="straggler.noise_interval")
    assert verdict_words.why_not(verdict) == "could be noise: its interval reaches 0"


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
