"""The headline a stakeholder reads in ten seconds: at most 40 words on every kept input (CPU
and GPU sweeps, a stopped one, the workload level's runs, profiled runs), counted as every
format shows it. What does not fit (the cells not measured, the command that finishes a
stopped sweep, which cells shared their machine) is said under it or in its actions."""

from __future__ import annotations

import pytest

from tests.project.test_golden_renders import EXPERIMENTS, FIXTURES
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources

HEADLINE_WORDS = 40
# the experiments the golden renders keep, and the other kept runs a report reads
KEPT = {
    **EXPERIMENTS,
    "cpu-profile-injected": FIXTURES / "cpu_profile_injected" / "standalone",
    "h100-first-run-sweep-stopped": FIXTURES / "h100_first_run" / "default-sweep",
    "h100-first-run-workload": FIXTURES / "h100_first_run" / "workload" / "runs",
    "h100-gpt2-profile": FIXTURES / "h100_gpt2_profile",
    "h200-gpt2-profile": FIXTURES / "h200_gpt2_profile",
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_the_headline_is_read_in_ten_seconds(name: str) -> None:
    report = build_report(read_sources(KEPT[name]), ReportOptions())
    assert report.headline is not None
    said = report.headline.text.split()
    assert len(said) <= HEADLINE_WORDS, f"{len(said)} words: {report.headline.text}"
