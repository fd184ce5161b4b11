"""benchmarks/report_scale.py: CI runs it whole, at 500 cells with the PDF (.ci/run), where it
exits 1 when a chart breaks a structural bound (12 series, SVG nodes); here, in-process, its
lines and its bounds. No timing is asserted."""

from __future__ import annotations

from tests.scale_sample import report_scale


def test_each_line_says_its_ratio_and_bound() -> None:
    """The judged size says each format's ratio to the bare load against its bound; the
    smaller size shows the growth, judged by no bound."""
    module = report_scale()
    row = {"load_s": 0.5}
    for fmt, seconds in (("html", 1.0), ("md", 2.0), ("json", 0.4)):
        row |= {f"{fmt}_s": seconds, f"{fmt}_bytes": 2e6, f"{fmt}_charts": 3}
    judged = module.format_line(40, row)
    assert judged.startswith(
        "  40 cells: bare load 0.50 s, html 1.00 s = 2.0x (<= 3x: met; 2.00 MB"
    )
    assert "md 2.00 s = 4.0x (<= 2x: MISSED; " in judged
    assert "json 0.40 s = 0.8x (<= 2x: met; " in judged
    growth = module.format_line(20, row, judged=False)
    assert growth.endswith("growth only, not judged") and "met" not in growth
    load, _ = module.load_text(2)  # the machine's load beside the ratios
    assert load.startswith("load average")


def test_a_broken_structural_bound_is_named() -> None:
    problems = report_scale().structure_problems(
        {"charts": 3, "series": 250, "legend": 250, "nodes_max": 3112, "nodes_total": 9000}
    )
    assert problems == [
        "a chart draws 250 series (bound 12)",
        "a chart's SVG has 3112 nodes (bound 400)",
    ]
