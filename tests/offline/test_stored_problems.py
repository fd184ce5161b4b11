"""A kept result's ranked problems, stored as sentences, read as codes where today's words of
a code are exactly the stored ones, else as stored words; either way they read as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchscale.contracts.schema.cell_result import CellResult, Problem
from torchscale.contracts.wording import verdicts as verdict_words
from torchscale.contracts.wording.figures import as_written_before_schema_20
from torchscale.offline.results.upgrades.stored_problems import coded_problem
from torchscale.offline.results.versions import parse_cell_result

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _read(path: Path) -> tuple[list[dict], list]:
    data = json.loads(path.read_text(encoding="utf-8"))
    result, _, problem = parse_cell_result(data, path)
    assert result is not None and result.diagnosis is not None, problem
    return data["diagnosis"]["findings"], result.diagnosis.findings


def _sentences(problem: Problem) -> dict:
    """A problem as versions 16-19 stored it: its words."""
    return {
        "title": problem.title,
        "category": problem.category,
        "cost_share": problem.cost_share.model_dump(mode="json"),
        "evidence": problem.evidence,
        "recommendation": problem.recommendation,
    }


def _fresh() -> CellResult:
    data = json.loads((FIXTURES / "results_v8/cpu_tiny_mlp_ddp_w2.json").read_text())
    result, _, _ = parse_cell_result(data)
    assert result is not None and result.diagnosis is not None
    return result


def test_the_sentences_of_todays_words_are_read_as_codes() -> None:
    fresh = _fresh()
    diagnosis = fresh.diagnosis
    assert diagnosis is not None and diagnosis.findings
    verdict = diagnosis.straggler.model_dump(mode="json") if diagnosis.straggler else None
    for problem in diagnosis.findings:
        coded = coded_problem(_sentences(problem), verdict_words.caveat(diagnosis), verdict)
        assert coded["finding"]["code"] == problem.finding.code
        assert set(coded) == {"finding", "category", "cost_share"}  # no sentence kept


def test_a_kept_schema_18_results_problems_word_as_before() -> None:
    path = FIXTURES / "h200_gpt2_profile/gpt2__b16__w1__bf16__ddp__5d8845e2/result.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == 18
    comm = next(p for p in _fresh().diagnosis.findings if p.category == "exposed_comm")
    with as_written_before_schema_20():  # as a schema 18 result's sentences were written
        written = _sentences(comm)
    unknown = {**written, "title": "Something an older version said"}
    data["diagnosis"]["findings"] = [written, unknown]
    result, _, problem = parse_cell_result(data)
    assert result is not None and result.diagnosis is not None, problem
    read = {p.finding.code: p for p in result.diagnosis.findings}
    assert set(read) == {"problem.exposed_comm", "problem.stored"}
    with as_written_before_schema_20():  # the same words, by the rule that wrote them
        for old in data["diagnosis"]["findings"]:
            new = next(p for p in read.values() if p.title == old["title"])
            assert (new.evidence, new.recommendation) == (old["evidence"], old["recommendation"])


@pytest.mark.parametrize(
    "name",
    [
        "cpu_crashes1/cpu_tiny_mlp_ddp_w2.json",
        "cells_v12_GONE/cpu_tiny_mlp_ddp_w2.json",
    ],
)
def test_a_kept_results_problems_word_as_they_were_stored(name: str) -> None:
    stored, read = _read(FIXTURES / name)
    assert len(stored) == len(read)
    for old, new in zip(
        sorted(stored, key=lambda f: f["title"]), sorted(read, key=lambda f: f.title), strict=True
    ):
        assert new.title == old["title"]
        assert new.evidence == old["evidence"]
        assert new.recommendation == old["recommendation"]


def test_words_not_recognised_stay_as_stored_and_are_marked() -> None:
    _, read = _read(FIXTURES / "cells_v12_GONE/cpu_tiny_mlp_ddp_w2.json")
    assert read and {problem.finding.code for problem in read} == {"problem.stored"}
