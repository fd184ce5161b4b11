"""The first screen a stakeholder reads in ten seconds, on every kept input (CPU and GPU sweeps,
a stopped one, the workload level's runs, profiled runs): the headline at most 40 words, and
the text before the first section (the headline and the calls under it) at most 60, counted
in the Markdown a pull request shows. What does not fit (the cells not measured, the command
that finishes a stopped sweep, a line per model) is said under a heading after it: What to do,
By model."""

from __future__ import annotations

from itertools import takewhile

import pytest

from tests.project.test_golden_renders import EXPERIMENTS, FIXTURES
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.render import markdown
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources

HEADLINE_WORDS = 40
BEFORE_FIRST_SECTION_WORDS = 60
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
def test_the_first_screen_is_read_in_ten_seconds(name: str) -> None:
    report = build_report(read_sources(KEPT[name]), ReportOptions())
    assert report.headline is not None and report.decision is not None
    said = report.headline.text.split()
    assert len(said) <= HEADLINE_WORDS, f"{len(said)} words: {report.headline.text}"
    below_title = markdown.render(report).decode("utf-8").splitlines()[1:]
    before = " ".join(takewhile(lambda line: not line.startswith("#"), below_title))
    words = before.replace("**", "").split()
    assert len(words) <= BEFORE_FIRST_SECTION_WORDS, f"{len(words)} words: {before}"
    # what is cut from there is under its heading, never dropped
    assert all(line.text in before for line in report.decision.conclusions())
