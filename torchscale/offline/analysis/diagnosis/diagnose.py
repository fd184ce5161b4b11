"""The one diagnosis of a run, computed once from all the evidence it has.

A run may carry two step models: the phase timers of its measured windows
(`timers.timers_step_split`) and, when it was profiled, the traces
(`traces.build_step_model`). Each answers the same questions, so one source decides every
figure (the traces when the run has a trace step model, else the phase timers) and the
figures agree by construction; the other source's model and verdict are cross-checks. The
rule, figure by figure and why: docs/methodology.md, "One diagnosis".

Pure: tables and estimates in, a `Diagnosis` out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_telemetry import Telemetry
from torchscale.contracts.schema.diagnosis import (
    CrossCheck,
    Diagnosis,
    Problem,
    RankWait,
    StepSplit,
    StragglerVerdict,
    WhatIf,
)
from torchscale.offline.analysis.diagnosis.device import Calibrated
from torchscale.offline.analysis.diagnosis.findings import (
    FindingInputs,
    compute_spread,
    part_share,
    rank_findings,
)
from torchscale.offline.analysis.diagnosis.inflation import (
    TracedInflation,
    phase_timer_checks,
    with_inflation,
)
from torchscale.offline.analysis.diagnosis.step_model import (
    NoSyncSteps,
    mean_seconds,
    share_of_step,
)
from torchscale.offline.analysis.diagnosis.timers import step_parts, timers_step_split
from torchscale.offline.analysis.diagnosis.traces import StepModel

# short enough for one terminal line: a rank starved of CPU by other processes is slow exactly
# like a slow workload, so a name on a busy machine says to check the host before the code


@dataclass(frozen=True)
class TimerEvidence:
    """The phase timers of the measured windows: the per-step phase table (window, step, rank,
    step_s and the phases) and the interleaved no_sync windows, or, where the table is not at
    hand (a stored result), the model already computed from it."""

    steps: pd.DataFrame | None = None
    no_sync: NoSyncSteps | None = None
    stored: StepSplit | None = None
    calibration: Calibrated | None = None  # the ranks' fixed calibration (device.py)


@dataclass(frozen=True)
class TraceEvidence:
    """The traces' step model and what the findings read beside it."""

    model: StepModel
    inputs: FindingInputs


@dataclass(frozen=True)
class RunEvidence:
    """Everything a run has: phase timers, traces, and what the host saw."""

    timers: TimerEvidence | None = None
    traces: TraceEvidence | None = None
    caveat: Finding | None = None  # the busy-machine caveat (`busy_caveat`), or None
    device_type: str = "cpu"
    backend: str | None = None
    strategy: str | None = None
    nodes: int | None = None  # hosts the ranks ran on; None: not known (traces alone)
    injected_ranks: frozenset[int] = frozenset()  # ranks --inject-delay slowed on purpose
    # the traced steps against the measured windows (inflation.traced_inflation); None: unknown
    inflation: TracedInflation | None = None


def busy_caveat(telemetry: Telemetry | None) -> Finding | None:
    """The busy-machine caveat when other processes took cores during the windows, or when the
    run's own ranks outnumber a host's cores: a rank starved of CPU (by other processes or by
    the scheduler sharing cores among ranks) is slow exactly like a slow workload."""
    if telemetry is None:
        return None
    hosts = telemetry.hosts or []
    busy = [h for h in hosts if h.busy]
    if busy:
        figures = {"cores": busy[0].other_cores, "host": busy[0].host}
        return Finding(code="caveat.busy_machine", figures=figures)
    # a host whose ranks outnumber its cores (None: the core count was not read)
    crowded = [h for h in hosts if h.cores is not None and len(h.ranks) > h.cores]
    if crowded:
        host = crowded[0]
        figures = {"ranks": len(host.ranks), "cores": host.cores, "host": host.host}
        return Finding(code="caveat.shared_cores", figures=figures)
    return None


def diagnose(evidence: RunEvidence) -> Diagnosis | None:
    """The one diagnosis of a run (see the module doc), or None when no source has a model."""
    traces, timers = evidence.traces, evidence.timers
    parts = step_parts(timers.steps) if timers is not None and timers.steps is not None else None
    timer_model = timers.stored if timers is not None else None
    if timers is not None and timers.steps is not None:
        timer_model = timers_step_split(timers.steps, timers.no_sync, parts, timers.calibration)
    if traces is not None and traces.model.attribution is not None:
        diagnosis = _from_traces(traces, timer_model, evidence)
        if evidence.inflation is None:
            return diagnosis
        # a profiler that slowed the traced steps beyond the noise hands the headline to the
        # phase timers of the measured windows (inflation.with_inflation)
        stored = timers.stored if timers is not None else None
        untraced = (
            stored if isinstance(stored, Diagnosis) and stored.source == "phase timers" else None
        )
        inflated = with_inflation(diagnosis, untraced, evidence.inflation)
        return with_caveat(inflated, evidence.caveat)
    if timer_model is not None and parts is not None:
        return _from_timers(timer_model, parts, evidence)
    if timer_model is not None:  # a stored model without its table: no waits or what-if
        return _assemble(timer_model, "phase timers", [], None, [], evidence)
    return None


# ------------------------------------------------------------------ the phase timers decide


def _from_timers(model: StepSplit, parts: pd.DataFrame, evidence: RunEvidence) -> Diagnosis:
    """`parts`: the phase table's `step_parts`, the rows `model` was built from."""
    keyed = parts.assign(key=list(zip(parts["window"], parts["step"], strict=True)))
    step_col = keyed.assign(step_total=keyed["model_step_s"])
    waits = rank_waits(step_col)
    own = keyed.assign(own=keyed["compute"] + keyed["data"])
    whatif = _whatif_for(model, step_col, own)
    inputs = FindingInputs(
        cycle_us=float(model.step_s.value or 0.0) * 1e6,
        ranks=model.ranks,
        device_type=evidence.device_type,
        backend=evidence.backend,
        strategy=evidence.strategy,
        nodes=evidence.nodes,
        stall=part_share(model, "wait_for_peers") if model.ranks > 1 else None,
        exposed_transfer=part_share(model, "exposed_transfer") if model.ranks > 1 else None,
        data=part_share(model, "data"),
        waits_known=model.ranks > 1,
        verdict=model.straggler,
        whatif=whatif.share if whatif is not None else None,
        rank_waits={w.rank: w.share for w in waits},
        compute_spread_frac=compute_spread(keyed, "key", model.step_s.value or 0.0),
    )
    findings = [f.stored() for f in rank_findings(inputs)]
    return _assemble(model, "phase timers", waits, whatif, findings, evidence)


# ------------------------------------------------------------------ the traces decide


def _from_traces(
    traces: TraceEvidence, timer_model: StepSplit | None, evidence: RunEvidence
) -> Diagnosis:
    model = traces.model
    attribution = model.attribution
    assert attribution is not None
    parts = model.parts.assign(key=model.parts["step"], step_total=model.parts["step_s"])
    waits = rank_waits(parts) if model.waits_known else []
    whatif = None
    if model.waits_known and model.own is not None:
        own = model.own.assign(key=model.own["step"], own=model.own["compute"])
        whatif = _whatif_for(attribution, parts, own)
    inputs = traces.inputs  # completed in place: the findings read the diagnosis' figures
    inputs.whatif = whatif.share if whatif is not None else None
    inputs.rank_waits = {w.rank: w.share for w in waits}
    findings = [f.stored() for f in rank_findings(inputs)]
    extra = phase_timer_checks(attribution, timer_model)
    return _assemble(attribution, "traces", waits, whatif, findings, evidence, extra)


# ------------------------------------------------------------------ shared pieces


def rank_waits(parts: pd.DataFrame) -> list[RankWait]:
    """Each rank's wait for peers as a share of its own step: its mean wait per step over its
    mean step, with the moving-block bootstrap interval over its steps. `parts`: rank, key
    (the step), wait_for_peers and step_total seconds (other columns are not read)."""
    out = []
    for rank, rows in parts.sort_values(["rank", "key"]).groupby("rank"):
        wait = rows["wait_for_peers"].to_numpy(np.float64)
        step = rows["step_total"].to_numpy(np.float64)
        out.append(RankWait(rank=int(rank), share=share_of_step(wait, step)))
    return out


def _whatif_for(model: StepSplit, parts: pd.DataFrame, own: pd.DataFrame) -> WhatIf | None:
    """The bounded what-if of the verdict's candidate (see `bounded_whatif`)."""
    verdict = model.straggler
    if verdict is None or verdict.candidate_rank is None:
        return None
    wait = parts.pivot_table(index="key", columns="rank", values="wait_for_peers")
    work = own.pivot_table(index="key", columns="rank", values="own")
    step = parts.groupby("key")["step_total"].mean()
    # a rank whose collectives start late costs the others their wait, not extra work
    late = verdict.kind == "communication"
    return bounded_whatif(
        wait, work, step, verdict.candidate_rank, verdict.named, cap_by_work=not late
    )


def bounded_whatif(
    wait: pd.DataFrame,
    own: pd.DataFrame,
    step: pd.Series,
    candidate: int,
    named: bool,
    *,
    cap_by_work: bool = True,
) -> WhatIf | None:
    """What a step would lose if `candidate` did no more work than the others: per step, the
    least wait for peers of any other rank (what its lateness costs them) capped by its own
    work past the slowest other's (its cost, `cost.step_delays`: on par with the median rank
    the step still waits for the slowest), at least 0. `wait` and `own`: step x
    rank seconds; `step`: the mean step per step key. None without other ranks or steps.
    `cap_by_work` False (a rank whose collectives start late, its work on par): what the step
    would lose if it launched them on time, the others' least wait alone."""
    keys = wait.index.intersection(own.index).intersection(step.index)
    if candidate not in wait.columns or candidate not in own.columns or wait.shape[1] < 2:
        return None
    wait, own, step = wait.loc[keys].dropna(), own.loc[keys].dropna(), step.loc[keys]
    keys = wait.index.intersection(own.index)
    if len(keys) == 0:
        return None
    least_wait = wait.loc[keys].drop(columns=[candidate]).min(axis=1).to_numpy(np.float64)
    others = own.loc[keys].drop(columns=[candidate]).max(axis=1)
    extra = (own.loc[keys, candidate] - others).to_numpy(np.float64)
    saved = np.clip(np.minimum(least_wait, extra) if cap_by_work else least_wait, 0.0, None)
    steps = step.loc[keys].to_numpy(np.float64)
    share = share_of_step(saved, steps)
    return WhatIf(
        rank=int(candidate),
        named=named,
        saved_s=mean_seconds(saved),
        share=share,
        extra_work_s=float(np.mean(extra)) if cap_by_work else None,
    )


def _assemble(
    model: StepSplit,
    source: str,
    waits: Sequence[RankWait],
    whatif: WhatIf | None,
    findings: Sequence[Problem],
    evidence: RunEvidence,
    extra_checks: Sequence[CrossCheck] = (),
) -> Diagnosis:
    checks = [*model.cross_checks, *extra_checks]
    diagnosis = Diagnosis(
        steps=model.steps,
        ranks=model.ranks,
        step_s=model.step_s,
        parts=model.parts,
        straggler=marked_injected(model.straggler, evidence.injected_ranks),
        cross_checks=checks,
        source="traces" if source == "traces" else "phase timers",
        rank_waits=list(waits),
        whatif=whatif,
        findings=list(findings),
    )
    return with_caveat(diagnosis, evidence.caveat)


def marked_injected(
    verdict: StragglerVerdict | None, injected_ranks: frozenset[int]
) -> StragglerVerdict | None:
    """A named verdict says whether its rank is one the run delayed on purpose (`injected`), so
    no surface can show the artificial straggler as the machine's: a delay is neither a
    slower device nor more work, so its device reading is dropped."""
    if verdict is None or not verdict.named:
        return verdict
    if verdict.rank not in injected_ranks:
        return verdict.model_copy(update={"injected": False})
    update = {"injected": True, "device": None, "device_ratio": None}
    return verdict.model_copy(update=update)


def with_caveat(diagnosis: Diagnosis, caveat: Finding | None) -> Diagnosis:
    """The diagnosis with the busy-machine caveat (`busy`), shown beside its straggler and
    its problems on every surface."""
    if caveat is None or diagnosis.busy == caveat:
        return diagnosis
    return diagnosis.model_copy(update={"busy": caveat})
