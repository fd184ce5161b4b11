"""A profile analysis stores each figure once: the headline figures that its diagnosis holds
(sync stall, exposed communication, straggler, what-if, the cycle) are never fields beside it
again; `offline/results/profile_figures.py` computes them from the diagnosis for every surface,
and only a schema-1 analysis (no diagnosis) keeps its own, apart (`before_diagnosis`)."""

from __future__ import annotations

from torchscale.contracts.schema.profile_analysis import (
    BEFORE_SCHEMA_8,
    ProfileAnalysis,
    RankFigures,
)

# figures the diagnosis holds, by the names their copies had
MIRRORED = (*BEFORE_SCHEMA_8, "cycle_us", "attribution")


def test_no_mirrored_field_reappears_in_the_profile_analysis() -> None:
    assert set(MIRRORED) >= {"sync_stall_pct", "exposed_comm_pct", "straggler", "whatif"}
    assert sorted(set(ProfileAnalysis.model_fields) & set(MIRRORED)) == []


def test_the_per_rank_figures_hold_no_copy_of_the_diagnosis() -> None:
    # a rank's parts are its own step model (the diagnosis keeps only the mean over ranks)
    assert sorted(set(RankFigures.model_fields) & {"straggler", "whatif", "diagnosis"}) == []
