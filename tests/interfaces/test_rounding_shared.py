"""One rounding rule for a figure with its interval (`estimates.figure_with_interval`): the
terminal (the sweep table, a cell's lines) and the reports print the same digits for the same
estimate."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.wording.figures import (
    figure_with_interval,
    plus_minus,
    readable_like,
    seconds_text,
    share_text,
    too_wide,
    value_format,
)
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.console.cells import cell_lines
from torchscale.interfaces.console.sweep_tables import _throughput
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.estimates import compact, scaled_rate
from torchscale.interfaces.report.model import Findings, KeyFigures, Report, Table, Text
from torchscale.interfaces.report.parts.context import throughput_text
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.frame import cells_table

FIXTURES = Path(__file__).parents[1] / "fixtures"
NUMBER = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?")

# (value, low, high, what every surface prints): measured figures and small rates
FIGURES = [
    (11_079.0, 6_757.0, 15_401.0, "11,000 ±4,000"),  # 1 digit of ± (4,322: 432 > 354)
    (11_079.0, 8_079.0, 14_079.0, "11,100 ±3,000"),  # 2 digits of ± (3,000: 300 <= 354)
    (38_509.0, 792.0, 1_712_321.0, "40,000 [790, 1,710,000]"),  # lopsided: one step
    (4_075.9, 4_067.1, 4_084.7, "4,076 ±9"),
    (4_075.9, 4_073.6, 4_078.2, "4,075.9 ±2.3"),
    (0.4213, 0.3902, 0.4526, "0.421 ±0.031"),  # small rates keep digits
    (0.42, 0.05, 1.9, "0.42 [0.05, 1.90]"),
    (21_425.6, 0.5, 482_125_066.0, "21,000 [0.50, 480,000,000]"),  # an end below the step
    # a percentile at the top of its resamples: the width, not the nearer side, sets the step
    (57.09886, 54.37901, 57.09930, "57.1 [54.4, 57.1]"),
]


# the tables that print no figure whose interval is wider than itself
WITHHELD = ("terminal sweep table", "report table")


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


@pytest.mark.parametrize(("value", "low", "high", "expected"), FIGURES)
def test_terminal_and_report_print_the_same_digits(
    value: float, low: float, high: float, expected: str
) -> None:
    estimate = Estimate(value=value, low=low, high=high, n=3, measurable=True)
    surfaces = {
        "the one function": figure_with_interval(value, low, high, value_format("rate")),
        "terminal sweep table": _throughput(row(value, low, high)),
        "terminal cell line": plus_minus(estimate, readable_like(value)),
        "report table": throughput_text(row(value, low, high)) or "",
        "report compact": compact(value, low, high, "rate") or "",
    }
    assert surfaces["the one function"] == expected
    wide = too_wide(value, low, high)  # the tables withhold it: one rule (estimates.withheld)
    for surface, text in surfaces.items():
        if wide and surface in WITHHELD:
            assert text == "not measurable", surface
            continue
        assert digits(text) == digits(expected), surface


def test_a_figure_is_never_rounded_to_zero() -> None:
    assert figure_with_interval(0.42, 0.0, 31.0, value_format("rate")).startswith("0.42 ")
    assert figure_with_interval(3e-4, 1e-4, 9e-4, value_format("seconds")).startswith("300 µs")


def _fixture_results() -> list[CellResult]:
    files = [
        FIXTURES / "cells" / "cpu_tiny_mlp_ddp_w2.json",
        FIXTURES / "cells" / "cpu_tiny_mlp_ddp_w2_again.json",
        *sorted((FIXTURES / "cpu_sweep_profile" / "v3_fixture" / "cells").glob("*.json")),
    ]
    results = []
    for path in files:
        read = read_cell(path)
        result = read.doc
        assert result is not None, read.problem
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
        withheld = report.startswith("not measurable")  # both withhold it, or neither
        assert _throughput(r).startswith("not measurable") == withheld
        if not withheld:
            assert digits(_throughput(r)) == digits(report)
        tables += 1
        line = next(x.text for x in cell_lines(result) if "Average Throughput:" in x.text)
        figure = line.split(":", 1)[1]
        # the cell's own line keeps its figure; the tables' spelling of it, where not withheld
        spelled = compact(*(r[f"samples_per_s{end}"] for end in ("", "_low", "_high")), "rate")
        if "±" in figure or "[" in figure:  # a result whose cell carries its interval
            shown = digits(spelled or "")
            assert digits(figure)[: len(shown)] == shown, line
            lines += 1
    assert tables >= 2 and lines >= 1


# ---------------------------------------------------------------- every figure of a report

_NUM = r"[+\-]?\d[\d,]*(?:\.\d+)?"
_UNIT = r"(?:\s?(?:%|ms|us|s|pts))?"
# a figure and its spread in one unit: '1,270 ±110', '11 ms [1, 29]', '14.9 % (95 % interval
# 13.9 % to 21.9 %)'; '28.77 ms ±870 us' changes unit, so its digits are not compared here
_PLUS_MINUS = re.compile(rf"({_NUM})({_UNIT}) ?±({_NUM})\2(?![\w])")
_BRACKETS = re.compile(rf"({_NUM})({_UNIT}) ?\[({_NUM})\2?, ({_NUM})\2?\]")
_SENTENCE = re.compile(rf"({_NUM})({_UNIT}) \(95 % interval ({_NUM})\2 to ({_NUM})\2\)")
_MANY_DIGITS = re.compile(r"\d{1,3}(?:,\d{3})+\.\d")  # '81,537.6': a rate beside its interval


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def _over_precise(text: str) -> list[str]:
    """The figures of `text` written with more decimals than two significant digits of their
    interval's half-width allow."""
    found = []
    spreads = [(m.group(1), _number(m.group(3))) for m in _PLUS_MINUS.finditer(text)]
    for match in [*_BRACKETS.finditer(text), *_SENTENCE.finditer(text)]:
        low, high = _number(match.group(3)), _number(match.group(4))
        spreads.append((match.group(1), (high - low) / 2))
    for figure, half in spreads:
        if half <= 0:
            continue
        allowed = max(0, 1 - math.floor(math.log10(half)))
        if _decimals(figure) > allowed:
            found.append(f"{figure} (±{half:g}) in {text!r}")
    return found


def _texts(report: Report) -> list[str]:
    """Every text a reader sees: sentences, cards, notes and table cells as formatted."""
    out = [t.text for t in ([report.headline] if report.headline else [])]
    if report.decision is not None:
        out += [t.text for t in report.decision.in_reading_order()]
    for section in report.sections:
        for block in section.blocks:
            if isinstance(block, Text):
                out.append(block.text)
            elif isinstance(block, KeyFigures):
                for figure in block.figures:
                    out += [format_value(figure.value, figure.format), figure.note or ""]
            elif isinstance(block, Table):
                out.append(block.note or "")
                out += [
                    format_value(row.get(c.key), c.format)
                    for row in block.rows
                    for c in block.columns
                    if row.get(c.key) is not None
                ]
            elif isinstance(block, Findings):
                out += [f.title for f in block.findings]
                out += [e for f in block.findings for e in f.evidence]
    return out


def _scale_results(root: Path, cells: int) -> Path:
    path = Path(__file__).parents[2] / "benchmarks" / "report_scale.py"
    spec = importlib.util.spec_from_file_location("report_scale_rounding", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.write_results(root, cells))


@pytest.mark.parametrize("source", ["cpu_default_sweep", "synthetic"])
def test_no_figure_of_a_report_reads_finer_than_its_interval(tmp_path: Path, source: str) -> None:
    """Every figure with an interval, in every sentence, card and table cell of a full report
    (what every format renders), has at most the digits two significant digits of its
    half-width give; rates that are a multiple of samples/s (tokens/s, per device) are cut by
    its interval ('82,000', never '81,537.6' beside '1,270 ±110')."""
    root = (
        FIXTURES / "cpu_default_sweep"
        if source == "cpu_default_sweep"
        else _scale_results(tmp_path, 60)
    )
    report = build_report(read_sources(root), ReportOptions(generated_at="2026-01-01T00:00:00Z"))
    texts = _texts(report)
    assert any("±" in t or "95 % interval" in t for t in texts)  # the scan has figures to read
    over = [problem for text in texts for problem in _over_precise(text)]
    assert not over, over[:5]
    long = [t for t in texts if _MANY_DIGITS.search(t)]
    assert not long, long[:5]


def test_the_scan_finds_an_over_precise_figure() -> None:
    assert _over_precise("14.86 % (95 % interval 13.91 % to 21.91 %)")
    assert _over_precise("+0.00785 ms [-0.0124, 0.0241]")
    assert not _over_precise("14.9 % (95 % interval 13.9 % to 21.9 %)")
    assert not _over_precise("1,270 ±110") and _over_precise("1,274.3 ±110")


def test_a_rate_in_proportion_to_samples_takes_their_interval() -> None:
    # 64 tokens a sample: 1,274 samples/s in [1,170, 1,390] is 81,537.6 tokens/s ±7,040
    assert scaled_rate(81_537.6, 1_274.0, 1_170.0, 1_390.0) == 82_000.0  # ±7,000
    assert scaled_rate(637.3, 1_274.0, 1_170.0, 1_390.0) == 640.0  # per device of 2: ±55
    assert scaled_rate(81_537.6, 1_274.0, None, None) == 81_537.6  # no interval: as it is
    assert scaled_rate(0.42, 1_274.0, 100.0, 90_000.0) == 0.42  # wider than itself: its digits


def test_a_straggler_gap_reads_in_the_unit_that_keeps_its_digits() -> None:
    gap = Estimate(value=7.85e-6, low=-12.4e-6, high=24.1e-6, n=20, measurable=True)
    assert seconds_text(gap, signed=True) == "+8 µs [-12, 24]"
    gap = Estimate(value=3.13e-3, low=1.97e-3, high=4.37e-3, n=20, measurable=True)
    assert seconds_text(gap, signed=True) == "+3.1 ms ±1.2 ms"
    share = Estimate(value=0.057, low=0.038, high=0.076, n=20, measurable=True)
    assert share_text(share) == "5.7 % ±1.9 %"


def test_an_interval_reads_in_its_figure_unit() -> None:
    """'28.8 ms ±0.9 ms', never '28.8 ms ±870 us': one unit for a figure and its spread."""
    assert compact(0.02877, 0.0279, 0.02964, "seconds") == "28.8 ms ±0.9 ms"
    assert compact(0.0109, 0.00099, 0.0293, "seconds") == "11 ms [0.99, 29]"


def test_edge_figures_read_as_a_person_reads_them() -> None:
    """A tiny figure keeps its digits (no row of zeros), an interval of zero width prints the
    figure alone, a figure or interval that is not finite never prints a broken '±'."""
    from torchscale.contracts.wording.figures import figure_with_interval, value_format

    readable, rate = value_format("readable"), value_format("rate")
    assert figure_with_interval(4.2e-6, 3.9e-6, 4.6e-6, readable) == "4.2e-06 ±3.5e-07"
    assert figure_with_interval(10.0, 10.0, 10.0, rate) == rate(10.0)
    assert figure_with_interval(float("nan"), 0.0, 1.0, rate) == "-"
    assert figure_with_interval(1.0, float("-inf"), float("inf"), rate) == rate(1.0)


def test_the_analysis_sentences_spell_figures_as_the_tables_do() -> None:
    """The straggler sentences and a finding's evidence are written offline and stored; they
    spell a figure with its interval by the same rule (contracts/wording/figures.py), never the long
    '(95 % interval a to b)' beside a table's '±'."""
    from torchscale.contracts.schema.diagnosis import StepPattern, StragglerVerdict
    from torchscale.contracts.wording.diagnosis_straggler import straggler_text
    from torchscale.contracts.wording.figures import seconds_text, share_text

    test = Finding(
        code="straggler.test", figures={"alpha": 0.01, "min_share": 0.05, "own_work": "timers"}
    )
    gap = Estimate(value=0.0134, low=0.0088, high=0.0174, n=19, measurable=True)
    verdict = StragglerVerdict(
        named=True,
        rank=1,
        phase="forward",
        candidate_rank=1,
        gap_s=gap,
        p_value=None,
        min_effect_s=0.002,
        kind="compute",
        test=test,
    )
    named = straggler_text(verdict, 2)
    assert f"{seconds_text(gap, signed=True)}/step" in named, named
    assert "+13 ms ±4 ms" in named and "interval" not in named
    noisy = Finding(code="straggler.noise_interval")
    small = Estimate(value=0.00042, low=-0.00024, high=0.0012, n=19, measurable=True)
    unnamed = verdict.model_copy(
        update={
            "named": False,
            "rank": None,
            "phase": None,
            "kind": None,
            "candidate_rank": 0,
            "gap_s": small,
            "pattern": StepPattern(shape="every"),
            "why_not": noisy,
        }
    )
    noise = straggler_text(unnamed, 2)
    assert "+0.4 ms [-0.2, 1.2]/step, every step: could be noise" in noise, noise
    share = Estimate(value=0.288, low=0.266, high=0.310, n=12, measurable=True)
    assert share_text(share) == "28.8 % ±2.2 %"


def test_a_narrow_interval_keeps_its_figures_decimals() -> None:
    """'2.36 ms ±0.0972 ms' gave the half-width more digits than its figure: ends and half
    take the figure's decimals; a split's part reads as its Sync stall does."""
    from torchscale.contracts.wording.figures import seconds_text, share_figure, share_text

    narrow = Estimate(value=0.00236, low=0.0022628, high=0.0024572, n=9, measurable=True)
    assert seconds_text(narrow) == "2.36 ms ±0.10 ms"
    stall = Estimate(value=0.222, low=0.07, high=0.37, n=9, measurable=True)
    assert share_text(stall) == "22 % ±15 %"
    assert share_figure(0.222, 0.07, 0.37) == "22 %"  # 'waiting 22 %', never '22.2 %' beside it


def test_a_wait_that_cannot_exist_reads_none_not_zero_percent() -> None:
    """One rank has no peers to wait for: its Sync stall reads 'none (one rank: ...)' as the
    profile line's '-' does, never a measured-looking '0.0 %'; a part no step had stays 0.0 %."""
    from torchscale.contracts.wording.cell_reasons import coded
    from torchscale.contracts.wording.figures import share_text

    one_rank = coded("estimate.one_rank")
    lone = Estimate(value=0.0, low=0.0, high=0.0, n=9, measurable=True, reason=one_rank)
    assert share_text(lone) == "none (one rank: no peers to wait for)"
    idle = Estimate(value=0.0, low=0.0, high=0.0, n=9, measurable=True)
    assert share_text(idle) == "0.0 %"
