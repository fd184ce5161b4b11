"""Adding a per-rank trace analysis is one module plus its line in `REDUCERS`
(docs/architecture.md, "A trace analysis"): tests/added_reducer.py holds the reducer, and the
test adds the one line to torchscale/offline/analysis/trace/registry.py's `REDUCERS` (read each
time a rank is reduced). Every rank's reduction then holds its table under its name, the other
tables exactly as they were, and `torchscale profile analyze` runs it: its note is in the
analysis' notes, and every other figure of analysis.json is unchanged. No other file changes.
The traces: a synthetic pair (always) and the shared real trace_filter pair (when ../shared is
beside the checkout)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from benchmarks.synthetic_traces import write_synthetic_traces
from tests.added_reducer import COLUMNS, NAME, NOTE, event_counts
from torchscale.contracts.wording.profile import on_rank
from torchscale.interfaces.cli.app import app
from torchscale.offline.analysis.trace import registry
from torchscale.offline.analysis.trace.reduce import RankReduction, reduce_rank
from torchscale.offline.analysis.trace.steps import full_steps
from torchscale.offline.traces.discover import read_rank_traces
from torchscale.orchestration.profiling.analyze import analyze_directory

SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


@pytest.fixture(params=["synthetic", "trace_filter"])
def traces(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "synthetic":
        write_synthetic_traces(tmp_path / "synthetic", ranks=2, steps=4, events_per_step=60)
        return tmp_path / "synthetic"
    folder = SHARED_TRACES / request.param
    if not folder.is_dir():
        pytest.skip("../shared/traces is not beside the checkout")
    return folder


def reduce_all(directory: Path) -> dict[int, RankReduction]:
    """Every rank reduced, with the reducer's table checked against the rank's own events."""
    reductions: dict[int, RankReduction] = {}
    for trace in read_rank_traces(directory):
        reductions[trace.rank] = reduction = reduce_rank(trace)
        table = reduction.tables.get(NAME)
        if table is None:
            continue
        assert isinstance(table, pd.DataFrame) and list(table.columns) == COLUMNS
        full = full_steps(reduction.steps)
        assert not full.empty and set(table["step"]) == set(full["step"])
        ts = trace.events["ts"]
        for step in full.itertuples():
            held = ((ts >= step.start) & (ts < step.end)).sum()
            assert table.loc[table["step"] == step.step, "events"].sum() == held
    return reductions


@pytest.mark.slow
def test_one_module_and_its_registry_line_add_a_trace_analysis(
    traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = reduce_all(traces)
    assert all(NAME not in r.tables for r in before.values())
    analysed_before = analyze_directory(traces)

    monkeypatch.setattr(registry, "REDUCERS", {**registry.REDUCERS, NAME: event_counts})  # the line

    # the reduction: its table on every rank (checked against the events), the others as before
    after = reduce_all(traces)
    assert sorted(after) == sorted(before)
    for rank, reduction in after.items():
        assert list(reduction.tables) == [*before[rank].tables, NAME]
        for name in ("phases", "breakdown", "collectives", "kernels"):
            pd.testing.assert_frame_equal(reduction.tables[name], before[rank].tables[name])
        pd.testing.assert_frame_equal(reduction.idle.per_step, before[rank].idle.per_step)
        assert reduction.notes == [*before[rank].notes, on_rank(NOTE, rank)]

    # `torchscale profile analyze`: the same analysis.json but for the reducer's notes
    out = tmp_path / "analysis.json"
    result = CliRunner().invoke(app, ["profile", "analyze", str(traces), "--output", str(out)])
    assert result.exit_code == 0, result.output
    analysed = json.loads(out.read_text())
    expected = json.loads(analysed_before.model_dump_json())
    added = [on_rank(NOTE, rank).model_dump() for rank in sorted(after)]
    assert [n for n in analysed["notes"] if n in added] == added
    assert [n for n in analysed["notes"] if n not in added] == expected["notes"]
    for stored in (analysed, expected):
        del stored["notes"], stored["analysis_s"]
    assert analysed == expected
