"""The one straggler judge (offline/analysis/diagnosis/verdict.py): the phase timers and the
traces each hand it the same evidence object, and it alone decides the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from tests.offline.test_attribution import step_table
from tests.offline.test_trace_analysis import cpu_ddp_rank, run_all
from torchscale.offline.analysis.diagnosis import timers, traces, verdict
from torchscale.offline.analysis.diagnosis.step_model import mean_step, wide
from torchscale.offline.analysis.diagnosis.timers import CELL_WAIT, step_parts, timers_step_split
from torchscale.offline.analysis.diagnosis.verdict import StragglerEvidence, judge


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[StragglerEvidence]:
    """Record every evidence `module` hands the one judge."""
    seen: list[StragglerEvidence] = []

    def spying(evidence: StragglerEvidence) -> Any:
        seen.append(evidence)
        return judge(evidence)

    monkeypatch.setattr(module, "judge", spying)
    return seen


def test_both_sources_feed_the_one_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    from_timers, from_traces = _spy(monkeypatch, timers), _spy(monkeypatch, traces)
    model = timers_step_split(step_table(delay=(1, "backward", 3.0)), None)
    frames = {r: cpu_ddp_rank(r, delay=2000.0, steps=8) for r in range(2)}
    traced = run_all(frames)["model"].attribution
    assert len(from_timers) == 1 and len(from_traces) == 1
    assert from_timers[0].order is None and from_traces[0].order is not None
    for built, evidence in ((model, from_timers[0]), (traced, from_traces[0])):
        assert built is not None and built.straggler is not None
        assert built.straggler == judge(evidence)[0]
        assert built.straggler.named and built.straggler.rank == 1


def test_the_same_evidence_in_either_sources_form_gets_the_same_verdict() -> None:
    """The timers' own work split into compute and data, and the same seconds as the traces
    give them (own work in compute, data 0): one verdict, one set of checks."""
    table = step_table(delay=(1, "data", 3.0))
    parts = step_parts(table)
    model = mean_step(parts, ["window", "step"], 2)
    common = dict(
        phases=table,
        step_s=model.step_s.value or 0.0,
        step=model.series,
        wait=wide(parts, "wait_for_peers").loc[model.per_step.index],
        wait_source=CELL_WAIT,
    )
    as_timers = StragglerEvidence(own=parts, **common)  # type: ignore[arg-type]
    own = parts.assign(compute=parts["compute"] + parts["data"], data=0.0)
    as_traces = StragglerEvidence(own=own, **common)  # type: ignore[arg-type]
    a, b = verdict.judge(as_timers), verdict.judge(as_traces)
    assert a == b
    assert a[0] is not None and a[0].named and a[0].kind == "input"
