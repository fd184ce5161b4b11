"""A profile analysis stores why a figure is null as a finding (`unavailable`, schema 10),
worded by contracts/wording/profile_notes.py; an older analysis' sentence reads as the code
whose words it is, else as the words it stored, never edited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SHARED_DIR
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import say
from torchscale.contracts.wording.profile_notes import SAID
from torchscale.offline.results.profile_versions import with_run

RUN = (
    REPO_ROOT
    / "tests"
    / "fixtures"
    / "cpu_profile_injected"
    / "standalone"
    / "profile"
    / "tiny-mlp__b8__w2__fp32__ddp__9a305f17"
)
STORED = sorted(
    path
    for path in [
        *(REPO_ROOT / "tests" / "fixtures").rglob("analysis.json"),
        *(SHARED_DIR / "gpu").rglob("analysis.json"),
    ]
    if json.loads(path.read_text(encoding="utf-8"))["schema_version"] < 10
)


def _stored(version: int, unavailable: dict[str, str]) -> dict[str, object]:
    data = json.loads((RUN / "analysis.json").read_text(encoding="utf-8"))
    read = ProfileAnalysis.model_validate(data).model_dump(mode="json")
    return {**read, "schema_version": version, "unavailable": unavailable}


def test_an_older_sentence_reads_as_its_code_and_says_the_same_words() -> None:
    stored = {
        "overlap_pct": "no communication in the traced steps",
        "diagnosis": "no step complete on every rank",
        "idle_us": "an older reason no code has",
    }
    analysis = with_run(ProfileAnalysis.model_validate(_stored(9, stored)), None)
    assert analysis.unavailable == {
        "overlap_pct": Finding(code="profile.no_communication"),
        "diagnosis": Finding(code="profile.no_step_on_every_rank"),
        "idle_us": Finding(code="profile.stored", figures={"words": "an older reason no code has"}),
    }
    assert {k: say(v) for k, v in analysis.unavailable.items()} == stored


def test_a_current_analysis_stores_no_sentence() -> None:
    with pytest.raises(ValueError):
        ProfileAnalysis.model_validate(
            _stored(10, {"overlap_pct": "no communication in the traced steps"})
        )


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.parent.name))
def test_every_stored_reason_is_worded_as_it_was_stored(path: Path) -> None:
    """Each reason an older analysis stored under a name the reader keeps is shown in its
    stored words, through its code where one says them."""
    data = json.loads(path.read_text(encoding="utf-8"))
    analysis = with_run(ProfileAnalysis.model_validate(data), None)
    for key, finding in analysis.unavailable.items():
        if key in data["unavailable"]:
            assert say(finding) == data["unavailable"][key]
            assert finding.code == "profile.stored" or SAID[finding.code] == say(finding)
