"""A host-bound step's compute part is the host issuing kernels: every surface that prints the
step split (the console's profile and sweep lines, the report's diagnosis blocks, its
diagnoses table and its run verdicts) names it 'launch time', decided once from the cell's
host-bound record (`diagnosis_text.compute_word`); a cell the GPU keeps busy still says
'compute'. On the kept H100 profile (GPT-2 b16, its split 'compute 9x %') with a made-up
traced record."""

from __future__ import annotations

import re
from pathlib import Path

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.interfaces.console.profile import analysis_lines
from torchscale.interfaces.report.model import Text
from torchscale.interfaces.report.parts.context import ProfileRef
from torchscale.interfaces.report.parts.diagnosis import diagnosis_blocks
from torchscale.interfaces.report.parts.run_verdicts import verdict_text
from torchscale.interfaces.report.sources import ProfileEntry
from torchscale.offline.results.documents import read_cell, read_profile_analysis
from torchscale.rank.worker.busy_trace import BusyReading, host_bound_record

RUN = (
    Path(__file__).parents[1]
    / "fixtures"
    / "h100_gpt2_profile"
    / "gpt2__b16__w1__bf16__ddp__5d8845e2"
)
COMPUTE_SHARE = re.compile(r"\bcompute [<>]? ?\d")  # 'compute 91.5 %', 'compute > 99.9 %'


def _surfaces(busy_share: float) -> list[str]:
    """The step split as each surface prints it, the run's record traced at `busy_share`."""
    stored = read_cell(RUN / "result.json").doc
    assert isinstance(stored, CellResult)
    record = host_bound_record([BusyReading(0, 3, busy_s=busy_share * 0.03, wall_s=0.03)])
    result = stored.model_copy(update={"host_bound": record})
    analysis = read_profile_analysis(RUN / "analysis.json").doc
    assert analysis is not None and analysis.diagnosis is not None
    ref = ProfileRef("exp", ProfileEntry(RUN.name, RUN, analysis, result), "gpt2 b16")
    return [
        verdict_text(ref),
        *(b.text for b in diagnosis_blocks(analysis.diagnosis, result) if isinstance(b, Text)),
        *(line.text for line in analysis_lines(analysis, result=result)),
    ]


def _splits(texts: list[str]) -> list[str]:
    return [t for t in texts if "Step " in t and "%" in t]


def test_no_surface_calls_a_host_bound_steps_share_compute() -> None:
    texts = _surfaces(0.3)
    splits = _splits(texts)
    assert len(splits) == 3, texts  # the run verdict, the report block, the console line
    assert all("launch time " in t for t in splits), splits
    assert not [t for t in texts if COMPUTE_SHARE.search(t)], texts


def test_a_busy_gpus_step_still_says_compute() -> None:
    splits = _splits(_surfaces(0.95))
    assert len(splits) == 3 and all(COMPUTE_SHARE.search(t) for t in splits), splits
    assert not any("launch time" in t for t in splits)
