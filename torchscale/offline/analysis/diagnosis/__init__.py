"""The one diagnosis of a run: one step model, two sources of evidence, the verdicts.

Layer 2 (offline side) of docs/architecture.md: imports only from layers below and its own.

- `step_model`: the model of a step every source shares (five parts that add up to the step,
  their intervals);
- `timers`, `traces`: the phase timers' and the traces' evidence cut into that model, each
  handing the straggler evidence to the one judge;
- `verdict`: the one judge of that evidence (the straggler test, the kind, the cross-checks,
  the withdrawal, in one order); `kind`, `host`, `held_launches`, `late_collectives`: what a
  straggler's extra time is;
- `inflation`: the traced steps against the measured windows (the profiler's inflation);
- `findings`: what costs the most step time, ranked from the model's parts;
- `diagnose`: the rule that picks the deciding source and adds the what-if and the findings.

The public entry points are re-exported here.
"""

from torchscale.offline.analysis.diagnosis.diagnose import (
    RunEvidence,
    TimerEvidence,
    TraceEvidence,
    bounded_whatif,
    busy_caveat,
    diagnose,
    marked_injected,
    rank_waits,
    with_caveat,
)

__all__ = [
    "RunEvidence",
    "TimerEvidence",
    "TraceEvidence",
    "bounded_whatif",
    "busy_caveat",
    "diagnose",
    "marked_injected",
    "rank_waits",
    "with_caveat",
]
