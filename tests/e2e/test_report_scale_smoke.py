"""benchmarks/report_scale.py as a smoke run: it builds and renders reports of
generated results, prints its timings with the machine's load, and exits 0 while every chart
keeps within its structural bounds (12 series, SVG nodes). No timing is asserted: CI runs it
at 500 cells with the PDF (.ci/run); here a small run keeps the script from rotting."""

from __future__ import annotations

import re

import pytest

from tests.scale_sample import report_scale


@pytest.mark.slow  # a benchmark's smoke run; CI also runs it at 500 cells
def test_the_benchmark_runs_and_reports_structure(capsys: pytest.CaptureFixture[str]) -> None:
    assert report_scale().main(["--cells", "40", "--small", "20", "--no-pdf"]) == 0
    out = capsys.readouterr().out
    assert "structure: within bounds" in out
    assert "load average" in out or "load average unknown" in out
    assert " 40 cells: " in out and "charts in the full report, at most" in out
    # each format's time as a ratio to the bare load of the same run, against its bound
    assert re.search(r" 40 cells: bare load [\d.]+ s, html [\d.]+ s = [\d.]+x \(<= 3x: ", out)
    for fmt, bound in (("md", 2), ("json", 2)):
        assert re.search(rf"{fmt} [\d.]+ s = [\d.]+x \(<= {bound}x: (met|MISSED)", out)
    # the smaller size shows the growth, judged by no bound
    (small,) = [line for line in out.splitlines() if line.startswith("  20 cells: bare load")]
    assert small.endswith("growth only, not judged") and "met" not in small


def test_a_broken_structural_bound_is_named() -> None:
    problems = report_scale().structure_problems(
        {"charts": 3, "series": 250, "legend": 250, "nodes_max": 3112, "nodes_total": 9000}
    )
    assert problems == [
        "a chart draws 250 series (bound 12)",
        "a chart's SVG has 3112 nodes (bound 400)",
    ]
