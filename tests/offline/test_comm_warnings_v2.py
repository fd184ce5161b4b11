"""A comm result's warnings are findings (issue 72: facts, not sentences): an import stores each
as its code and figures, worded when shown in the words older versions stored; a schema 2 (or 1)
result's sentences read back into their findings, in the same words, and a sentence no writer
made (or one whose figures its words rounded) is kept as stored and shown so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.wording import say
from torchscale.interfaces.console.comm import comm_lines
from torchscale.offline.comm.nccl_tests import read_nccl_tests
from torchscale.offline.results.documents import read_comm

FIXTURES = Path(__file__).parents[1] / "fixtures"
BEFORE = json.loads((FIXTURES / "nccl_tests" / "warnings_schema2.json").read_text())
EVERY = [w for file in BEFORE["imports"].values() for w in file] + BEFORE["sentences"]
# sentences whose figures the words rounded: no finding gives them back exactly
ROUNDED = ("the footer's Avg bus bandwidth", "out-of-place: busbw", "in-place: busbw")
UNWRITTEN = "something no torchscale wrote"


def _stored(text: str) -> bool:
    return text == UNWRITTEN or any(part in text for part in ROUNDED)


def _schema2(warnings: list[str]) -> CommResult:
    return CommResult.model_validate(
        {
            "schema_version": 2,
            "id": "run",
            "world_size": 2,
            "device": "cuda",
            "backend": "nccl",
            "dtype": "float32",
            "check": True,
            "warnings": warnings,
        }
    )


@pytest.mark.parametrize("name", sorted(BEFORE["imports"]))
def test_an_import_stores_codes_and_words_them_as_before(name: str) -> None:
    result = read_nccl_tests(FIXTURES / name)
    assert all(isinstance(w, Finding) and w.code.startswith("comm.") for w in result.warnings)
    stored = json.loads(result.model_dump_json())["warnings"]
    assert [w["code"] for w in stored] == [w.code for w in result.warnings]
    assert [say(w) for w in result.warnings] == BEFORE["imports"][name]


def test_a_failed_run_keeps_its_failure_line_as_a_figure() -> None:
    result = read_nccl_tests(FIXTURES / "nccl_tests_corpus/h100_two_nodes_first_run_failed.txt")
    [warning] = result.warnings
    assert warning.code == "comm.import.run_failed" and warning.figures["line"] == 1
    assert warning.figures["failure"].startswith("line 18: cnode2-001: Test NCCL failure")


def test_a_schema_2_warning_reads_as_its_finding_in_the_words_it_stored() -> None:
    result = _schema2(EVERY)
    for text, finding in zip(EVERY, result.warnings, strict=True):
        if _stored(text):
            assert finding == Finding(code="comm.stored", figures={"words": text, "schema": 2})
            assert say(finding) == f"{text} (as a schema 2 result stored it)"
        else:
            assert finding.code != "comm.stored", text
            assert say(finding) == text


def test_a_schema_2_file_shows_its_warnings_as_before(tmp_path: Path) -> None:
    data = _schema2([]).model_dump(mode="json")
    data["warnings"] = BEFORE["sentences"][:4]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    read = read_comm(path)
    assert read.doc is not None, read.problem
    assert read.doc.warnings[3] == Finding(code="comm.one_rank")
    text = comm_lines(read.doc)
    for sentence in BEFORE["sentences"][:4]:
        words = f"{sentence} (as a schema 2 result stored it)" if _stored(sentence) else sentence
        assert f"# warning: {words}" in text


def test_a_schema_1_result_reads_its_warnings_too() -> None:
    data = _schema2([]).model_dump(mode="json")
    result = CommResult.model_validate({**data, "schema_version": 1, "warnings": [EVERY[0]]})
    assert result.warnings[0].code == "comm.import.inferred_op"
