"""A profile analysis' notes and a profiled run's (`ProfileAnalysis.notes`, schema 10;
`ProfileRecord.notes`, result schema 20) are codes with their figures, worded by
contracts/wording/trace_notes.py and profile_notes.py. Today's writers store no sentence; an
older file's sentence reads as the code whose words it is exactly, any other as stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.orchestration.test_nsys import two_rank_export
from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording.profile_notes import note, said
from torchscale.offline.results.profile_versions import with_run
from torchscale.offline.results.upgrades.stored_words import upgrade_v19
from torchscale.offline.results.versions import read_cell_result
from torchscale.orchestration.profiling.analyze import analyze_directory

KEPT = REPO_ROOT / "tests" / "fixtures" / "h100_gpt2_profile" / "gpt2__b16__w1__bf16__ddp__5d8845e2"


def _kept(tmp_path: Path) -> tuple[Path, bool]:
    return KEPT, True


def _nsys(tmp_path: Path) -> tuple[Path, bool]:
    two_rank_export(tmp_path / "capture.sqlite", marks=False)
    return tmp_path, False


@pytest.mark.parametrize("traces", [_kept, _nsys], ids=["kept", "nsys"])
def test_todays_analysis_stores_every_note_as_a_code(traces: object, tmp_path: Path) -> None:
    directory, with_result = traces(tmp_path)  # type: ignore[operator]
    cell = read_cell_result(directory / "result.json").result if with_result else None
    analysis = analyze_directory(directory, cell=cell)
    assert analysis.notes and all(isinstance(n, Finding) for n in analysis.notes), analysis.notes
    assert all(n.code in wording.PHRASES for n in analysis.notes)  # type: ignore[union-attr]
    if with_result:  # the capture overhead, against the run's measured windows
        assert any(getattr(n, "code", "") == "profile.capture_overhead" for n in analysis.notes)
    stored = ProfileAnalysis.model_validate_json(analysis.model_dump_json())
    assert stored.notes == analysis.notes


def test_an_older_analysis_reads_its_notes_as_codes_in_the_same_words() -> None:
    """The kept schema-9 analysis: each note today's words say exactly is its code (a rank's
    with `on_rank`); the capture overhead, whose figures were rounded, stays as stored."""
    data = json.loads((KEPT / "analysis.json").read_text(encoding="utf-8"))
    analysis = with_run(ProfileAnalysis.model_validate(data), None)
    assert [said(n) for n in analysis.notes] == data["notes"]
    assert analysis.notes[:3] == [
        note("trace.no_collectives", on_rank=0),
        note("trace.no_collectives_anywhere"),
        note("trace.no_matched_collectives"),
    ]
    assert [n for n in analysis.notes if isinstance(n, str)] == [
        n for n in data["notes"] if n.startswith("capture overhead (")
    ]


@pytest.mark.parametrize(
    "found",
    [
        note("profile.nvtx_torch"),
        note("trace.duplicate_steps", on_rank=2, count=3),
        note("trace.rank_from_file_name", field="distributedInfo.rank", rank=4),
        note("trace.captures_start_apart", group="0", step=7),
        note("profile.capture_failed", on_rank=1, what="start", error="cannot push a range"),
        note("trace.nsys_rank_mark", rank=1, mark="torchscale:rank=1", process="pid 7 (python)"),
    ],
    ids=lambda f: f.code,
)
def test_a_sentence_of_schema_19_is_read_back_as_its_code(found: Finding) -> None:
    data = {"schema_version": 19, "warnings": [], "profile": {"notes": [wording.say(found)]}}
    assert upgrade_v19(data)["profile"]["notes"] == [found.model_dump()]


@pytest.mark.parametrize(
    "words",
    [
        "capture overhead (torch): traced steps 40.2 ms mean against 34.3 ms in the measured "
        "windows (+17.2 % ±5.0 %, Welch's t; 24 traced step(s) over 1 rank(s), same step timer: "
        "cuda_events)",  # rounded figures
        "step 6 lasted 12 µs, under 0.5x the median 900 µs: partial (cut by the capture), "
        "left out of the figures",  # rounded figures
        "no ProfilerStep#N ranges in this trace (an older wording)",
    ],
)
def test_other_words_stay_as_stored(words: str) -> None:
    data = {"schema_version": 19, "warnings": [], "profile": {"notes": [words]}}
    assert upgrade_v19(data)["profile"]["notes"] == [words]
