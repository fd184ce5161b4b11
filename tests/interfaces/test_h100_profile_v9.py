"""The third H100 run's profile (2026-11-27): GPT-2 124M b16 bf16 compiled on one GPU, 10 traced
steps (tests/fixtures/h100_gpt2_profile/, the trace kept: a compiled CUDA trace with Triton
kernels, which no CPU fixture has). Its headline read "data < 0.0 %" (a bound of microseconds
printed at one decimal) and "Found 0 bottleneck(s):" announced a list that never came."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchscale.contracts.wording.spell import share_bound
from torchscale.interfaces.api.profile import analyze_traces
from torchscale.interfaces.console.profile import analysis_lines

RUN = (
    Path(__file__).parents[1]
    / "fixtures"
    / "h100_gpt2_profile"
    / "gpt2__b16__w1__bf16__ddp__5d8845e2"
)


def test_the_compiled_h100_trace_reads_with_a_bound_above_zero(tmp_path: Path) -> None:
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    analysed = analyze_traces(copy, output=tmp_path / "analysis.json")
    printed = "\n".join(line.text for line in analysis_lines(analysed.analysis, verbose=True))
    assert "10 traced step(s)" in printed
    assert "data < 0.1 %" in printed and "< 0.0" not in printed
    assert "> [ANALYSIS] Found 0 bottleneck(s)\n" in printed
    diagnosis = analysed.analysis.diagnosis
    assert diagnosis is not None
    compute = diagnosis.part("compute")
    assert compute is not None and (compute.share.value or 0) > 0.9
    # the traced steps describe the run: the capture added nothing beyond its noise here
    assert "the traces describe the run's steps" in printed


@pytest.mark.parametrize(
    ("high", "places", "shown"),
    [
        (3e-6, 1, "0.1"),  # microseconds of a 34 ms step
        (0.0, 1, "0.1"),
        (0.042, 1, "4.2"),  # an exact tenth stays
        (0.0893, 1, "9.0"),  # a bound rounds up, never down
        (0.004, 0, "1"),
        (0.23, 0, "23"),
    ],
)
def test_a_share_bound_rounds_up_to_one_unit_at_least(high: float, places: int, shown: str) -> None:
    assert share_bound(high, places) == shown
