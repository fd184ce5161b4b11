"""A profile analysis' notes and a profiled run's (`ProfileAnalysis.notes`, `ProfileRecord.notes`)
are codes with their figures, worded by contracts/wording/profile.py.
Today's writers store no sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.orchestration.test_nsys import two_rank_export
from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.offline.results.documents import read_cell
from torchscale.orchestration.profiling.analyze import analyze_directory

KEPT = REPO_ROOT / "tests" / "fixtures" / "h100_gpt2_profile" / "gpt2__b16__w1__bf16__ddp__5d8845e2"


def _kept(tmp_path: Path) -> tuple[Path, bool]:
    return KEPT, True


def _nsys(tmp_path: Path) -> tuple[Path, bool]:
    two_rank_export(tmp_path / "capture.sqlite", marks=False)
    return tmp_path, False


@pytest.mark.parametrize("traces", [_kept, _nsys], ids=["kept", "nsys"])
@pytest.mark.slow  # over 2 s on 2 cores
def test_todays_analysis_stores_every_note_as_a_code(traces: object, tmp_path: Path) -> None:
    directory, with_result = traces(tmp_path)  # type: ignore[operator]
    cell = read_cell(directory / "result.json").doc if with_result else None
    analysis = analyze_directory(directory, cell=cell)
    assert analysis.notes and all(isinstance(n, Finding) for n in analysis.notes), analysis.notes
    assert all(n.code in wording.PHRASES for n in analysis.notes)  # type: ignore[union-attr]
    if with_result:  # the capture overhead, against the run's measured windows
        assert any(getattr(n, "code", "") == "profile.capture_overhead" for n in analysis.notes)
    stored = ProfileAnalysis.model_validate_json(analysis.model_dump_json())
    assert stored.notes == analysis.notes
