"""The second H200 run's profile (2026-11-27, tests/fixtures/h200_gpt2_profile/, the 2 MB trace
left out): GPT-2 124M b16 bf16 compiled on one GPU, 24 traced steps that the profiler slowed
by +17 % ±5 %, so the measured windows head the diagnosis. Its terminal (profile.out.txt
beside the run) printed "compute 99.975 %" beside "data < 0.1 %", and a "[NOTE] cross-checks
disagree" that only repeated the Step line's "(the profiler added +17 %)"."""

from __future__ import annotations

from pathlib import Path

from torchscale.interfaces.report.diagnosis_text import disagreement_text, headline, split_text
from torchscale.offline.analysis.diagnosis.inflation import disagreement
from torchscale.offline.results.documents import read_profile_analysis

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_gpt2_profile"
RUN = FIXTURE / "gpt2__b16__w1__bf16__ddp__5d8845e2"


def test_the_inflated_h200_profile_says_its_split_and_inflation_once() -> None:
    analysis = read_profile_analysis(RUN / "analysis.json").doc
    assert analysis is not None and analysis.diagnosis is not None
    diagnosis = analysis.diagnosis
    assert diagnosis.source == "phase timers"
    printed = (FIXTURE / "profile.out.txt").read_text()
    assert "compute 99.975 %" in printed and "cross-checks disagree" in printed  # as it ran
    line = split_text(diagnosis)
    assert line.startswith("Step 34.3 ms untraced (the profiler added +17 %): compute > 99.9 %")
    assert "data < 0.1 %" in line and "waiting none" in line
    # the inflation check disagrees, and the Step line is where that is said
    [check] = [c for c in diagnosis.cross_checks if c.check == "inflation"]
    assert check.agrees is False
    assert disagreement(diagnosis.cross_checks) is None
    # stored before that rule with a line of its own (analysis schema 9), converted: the line
    # is no longer stored, so nothing prints it again
    assert "disagreement" not in diagnosis.model_dump()
    assert "disagreement" not in [s.kind for s in headline(diagnosis)]
    assert disagreement_text(diagnosis) is None
