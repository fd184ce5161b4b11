"""A straggler the run's own --inject-delay made is called injected wherever it appears: the
first line of every report format, and each line of `profile`'s terminal that names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscale.interfaces.api import build_report

FIXTURES = Path(__file__).parents[1] / "fixtures"
TODAY = FIXTURES / "cpu_profile_injected"


@pytest.mark.parametrize("fmt", ["md", "term", "json"])
def test_the_headline_calls_an_injected_straggler_injected(tmp_path: Path, fmt: str) -> None:
    run = build_report(TODAY, fmt, output=tmp_path / f"r.{fmt}")
    assert run.report.headline is not None
    assert "injected" in run.report.headline.text, run.report.headline.text
    assert "injected" in run.outcome.content.decode("utf-8").split("\n\n")[0 if fmt != "md" else 1]


def test_the_profile_terminal_calls_it_injected_on_each_line_of_it() -> None:
    """`profile`'s lines: the straggler line and its finding both say injected."""
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.interfaces.console.profile import analysis_lines

    (path,) = TODAY.rglob("analysis.json")
    analysis = ProfileAnalysis.model_validate_json(path.read_text(encoding="utf-8"))
    texts = [line.text for line in analysis_lines(analysis)]
    straggler = [t for t in texts if t.startswith("> [ANALYSIS] Straggler") and "rank" in t]
    finding = [t for t in texts if t.startswith(">   1. ")]
    assert straggler and "Straggler (injected: --inject-delay): rank" in straggler[0]
    assert finding and "(injected: --inject-delay)" in finding[0]
