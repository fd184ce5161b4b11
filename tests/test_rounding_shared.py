"""One rounding rule for a figure with its interval (`estimates.figure_with_interval`): the
terminal (the sweep table, a cell's lines) and the reports print the same digits for the same
estimate."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from torchscale.contracts.schema.cell_result import CellResult, Estimate
from torchscale.interfaces.report.estimates import (
    compact,
    figure_with_interval,
    long_form,
    plus_minus,
    value_format,
)
from torchscale.interfaces.report.render.formatting import readable_like
from torchscale.interfaces.report.sections.context import throughput_text
from torchscale.interfaces.report.terminal.cells import cell_lines
from torchscale.interfaces.report.terminal.sweep_tables import _throughput
from torchscale.offline.results.frame import cells_table
from torchscale.offline.results.versions import parse_cell_result

FIXTURES = Path(__file__).parent / "fixtures"
NUMBER = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?")

# (value, low, high, what every surface prints): the figures and small rates
FIGURES = [
    (11_079.0, 6_757.0, 15_401.0, "11,100 ±4,300", "6,800 to 15,400"),  # 2 digits of ±
    (38_509.0, 792.0, 1_712_321.0, "40,000 [790, 1,710,000]", ""),  # lopsided: one step
    (4_075.9, 4_067.1, 4_084.7, "4,075.9 ±8.8", "4,067.1 to 4,084.7"),
    (0.4213, 0.3902, 0.4526, "0.421 ±0.031", "0.390 to 0.453"),  # small rates keep digits
    (0.42, 0.05, 1.9, "0.42 [0.05, 1.90]", ""),
    (21_425.6, 0.5, 482_125_066.0, "21,000 [0.50, 480,000,000]", ""),  # an end below the step
    # a percentile at the top of its resamples: the width, not the nearer side, sets the step
    (57.09886, 54.37901, 57.09930, "57.1 [54.4, 57.1]", ""),
]


def digits(text: str) -> list[str]:
    return NUMBER.findall(text)


def row(value: float, low: float, high: float) -> pd.Series:
    return pd.Series(
        {
            "samples_per_s": value,
            "samples_per_s_low": low,
            "samples_per_s_high": high,
            "samples_per_s_repeats": 3,
        }
    )


@pytest.mark.parametrize(("value", "low", "high", "expected", "ends"), FIGURES)
def test_terminal_and_report_print_the_same_digits(
    value: float, low: float, high: float, expected: str, ends: str
) -> None:
    estimate = Estimate(value=value, low=low, high=high, n=3, method="t", measurable=True)
    surfaces = {
        "the one function": figure_with_interval(value, low, high, value_format("rate")),
        "terminal sweep table": _throughput(row(value, low, high)),
        "terminal cell line": plus_minus(estimate, readable_like(value)),
        "report table": throughput_text(row(value, low, high)) or "",
        "report compact": compact(value, low, high, "rate") or "",
    }
    assert surfaces["the one function"] == expected
    for surface, text in surfaces.items():
        assert digits(text) == digits(expected), surface
    # a sentence states the interval's ends, rounded alike
    value_text = digits(expected)[0]
    ends = ends or " to ".join(digits(expected)[1:])
    assert long_form(value, low, high, "rate") == f"{value_text} (95 % interval {ends})"


def test_a_figure_is_never_rounded_to_zero() -> None:
    assert figure_with_interval(0.42, 0.0, 31.0, value_format("rate")).startswith("0.42 ")
    assert figure_with_interval(3e-4, 1e-4, 9e-4, value_format("seconds")).startswith("300 us")


def _fixture_results() -> list[CellResult]:
    files = [
        FIXTURES / "results_v7" / "cpu_tiny_mlp_ddp_w2.json",
        FIXTURES / "results_v12" / "cpu_tiny_mlp_ddp_w2.json",
        *sorted((FIXTURES / "results_v3" / "v3_fixture" / "cells").glob("*.json")),
    ]
    results = []
    for path in files:
        result, _, problem = parse_cell_result(json.loads(path.read_text(encoding="utf-8")))
        assert result is not None, problem
        results.append(result)
    return results


def test_real_cells_read_alike_in_the_terminal_and_the_report() -> None:
    results = _fixture_results()
    table = cells_table(results)
    tables = lines = 0
    for result, (_, r) in zip(results, table.iterrows(), strict=True):
        if pd.isna(r.get("samples_per_s_low")) or pd.isna(r["samples_per_s"]):
            continue
        report = throughput_text(r) or ""
        assert digits(_throughput(r)) == digits(report)
        tables += 1
        line = next(x.text for x in cell_lines(result) if "Average Throughput:" in x.text)
        figure = line.split(":", 1)[1]
        if "±" in figure or "[" in figure:  # a result whose cell carries its interval
            assert digits(figure)[: len(digits(report))] == digits(report), line
            lines += 1
    assert tables >= 2 and lines >= 1
