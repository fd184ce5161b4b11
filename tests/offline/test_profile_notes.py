"""A profile analysis stores why a figure is null as a finding (`unavailable`), worded by
contracts/wording/profile.py: a sentence in its place is refused."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO_ROOT
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis

RUN = (
    REPO_ROOT
    / "tests"
    / "fixtures"
    / "cpu_profile_injected"
    / "standalone"
    / "profile"
    / "tiny-mlp__b8__w2__fp32__ddp__9a305f17"
)


def _stored(unavailable: dict[str, str]) -> dict[str, object]:
    data = json.loads((RUN / "analysis.json").read_text(encoding="utf-8"))
    read = ProfileAnalysis.model_validate(data).model_dump(mode="json")
    return {**read, "unavailable": unavailable}


def test_a_current_analysis_stores_no_sentence() -> None:
    with pytest.raises(ValueError):
        ProfileAnalysis.model_validate(
            _stored({"overlap_pct": "no communication in the traced steps"})
        )
