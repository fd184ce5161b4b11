"""A made-up per-rank trace reducer for tests/offline/test_adding_a_trace_analysis.py: what a new
module
in torchscale/offline/analysis/trace/ looks like (docs/architecture.md, "A trace analysis").
It is a pure function of one rank's trace, its step table and its notes (registry.py's
`Reducer`), and returns a small table: the events are dropped once every reducer has run."""

from __future__ import annotations

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.offline.analysis.trace.intervals import window_index
from torchscale.offline.analysis.trace.steps import full_steps
from torchscale.offline.traces.rank_trace import RankTrace

NAME = "event_counts"
COLUMNS = ["step", "kind", "events"]
NOTE = Finding(code="trace.event_counts")  # a code no wording module knows: shown as its code


def event_counts(trace: RankTrace, steps: pd.DataFrame, notes: list[Finding]) -> pd.DataFrame:
    """Per complete step and event kind: how many events start inside the step's window."""
    full = full_steps(steps)
    events = trace.events
    inside = window_index(
        full["start"].to_numpy(dtype=float),
        full["end"].to_numpy(dtype=float),
        events["ts"].to_numpy(dtype=float),
    )
    held = events[inside >= 0].assign(
        step=full["step"].to_numpy()[inside[inside >= 0]], kind=lambda e: e["kind"].astype(str)
    )
    notes.append(NOTE)
    return held.groupby(["step", "kind"]).size().rename("events").reset_index()[COLUMNS]
