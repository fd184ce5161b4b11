"""The traced steps against the same run's measured windows (the phase timers, no profiler): the
timers' step model and verdict as cross-checks of the traces' (`phase_timer_checks`), and the
profiler's inflation of the traced steps.

A profiler slows the steps it traces. When the traced steps ran longer than the same run's measured
windows beyond the noise (`traced_inflation`: Welch's t interval on the difference of the mean
steps, its low end above MIN_EFFECT_SHARE of the untraced step), the traces' split describes the
profiler as much as the run: `with_inflation` then makes the phase timers' model the headline (the
traces' split a cross-check), or, without one, says the inflation in the split's own line, and
withholds every finding whose cost the profiler's added time could explain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from torchscale.contracts.finding import Finding as Code
from torchscale.contracts.schema.diagnosis import (
    CheckName,
    CrossCheck,
    Diagnosis,
    Estimate,
    Problem,
    StepPart,
    StepSplit,
)
from torchscale.contracts.wording import spell
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.wording.diagnosis_checks import check_label
from torchscale.offline.analysis.diagnosis.step_model import MIN_EFFECT_SHARE

# the parts both models measure from the same event, the wait at the gradient sync: the phase
# timers' agreement is judged on these (compute and rest are cut differently by design)
SYNC_PARTS = ("wait_for_peers", "exposed_transfer")
TERMINAL_HINT = "(-v shows them)"  # where the terminal shows the cross-checks


def _range(estimate: Estimate) -> tuple[float, float] | None:
    """The interval an estimate allows ([value, value] without one); None when unknown."""
    if estimate.low is not None and estimate.high is not None:
        return estimate.low, estimate.high
    if estimate.value is not None:
        return estimate.value, estimate.value
    return None


def phase_timer_checks(trace: StepSplit, cell: StepSplit | None) -> list[CrossCheck]:
    """The benchmark cell's step model (phase timers, measured windows without a profiler) as
    cross-checks of the trace model: its parts, agreeing when its waiting for peers and exposed
    transfer lie within the traces' intervals (compute and rest are cut differently: whole phases
    against ops), and its straggler verdict, judged by `straggler_agreement` (rank and kind)."""
    if cell is None:
        return []
    by_name = {p.name: p for p in trace.parts}
    judged_on, differ, other = [], [], []
    for part in cell.parts:
        mine = by_name.get(part.name)
        if mine is None:
            continue
        ra, rb = _range(part.share), _range(mine.share)
        if ra is None or rb is None:
            continue
        same = ra[0] <= rb[1] and rb[0] <= ra[1]  # the two intervals overlap
        both = {**_part(part), "traces": _figures(mine.share)}
        if part.name in SYNC_PARTS:
            judged_on.append(part.name)
            if not same:
                differ.append(both)
        elif not same:
            other.append(both)
    figures = {"step_s": cell.step_s.value or 0.0, "parts": [_part(p) for p in cell.parts]}
    figures |= {"differ": differ, "judged": bool(judged_on), "other": other}
    detail = Code(code="cross_check.timers_split", figures=figures)
    checks = [_check("timers_split", not differ if judged_on else None, detail)]
    if cell.straggler is not None and trace.straggler is not None:
        checks.append(_check("timers_straggler", *straggler_agreement(cell, trace)))
    return checks


def _figures(share: Estimate) -> dict[str, Any]:
    """A share as the figures its words need (its method is the part's, not said)."""
    return share.model_dump(exclude={"method"})


def _part(part: StepPart) -> dict[str, Any]:
    return {"name": part.name, "share": _figures(part.share)}


def _check(
    check: CheckName, agrees: bool | None, detail: Code, estimate: Estimate | None = None
) -> CrossCheck:
    return CrossCheck(check=check, estimate=estimate, agrees=agrees, detail=detail)


def _side(split: StepSplit) -> dict[str, Any]:
    """Who a source's verdict names ('rank' None: nobody) over how many steps."""
    verdict = split.straggler
    assert verdict is not None
    rank = verdict.rank if verdict.named else None
    return {"steps": split.steps, "rank": rank, "kind": verdict.kind if verdict.named else None}


def straggler_agreement(cell: StepSplit, trace: StepSplit) -> tuple[bool, Code]:
    """(agrees, detail) of the phase timers' straggler verdict against the traces': they agree
    when both name the same rank with the same kind, or neither names one. A disagreement
    says why the evidence differs (`profile` and `benchmark` name the same rank and kind for
    the same run, or say why not): the side that names nobody gives its reason on
    its own count of steps; two kinds for one rank come from different evidence."""
    a, b = cell.straggler, trace.straggler
    assert a is not None and b is not None
    sides = {"timers": _side(cell), "traces": _side(trace)}
    same_rank = a.named == b.named and (not a.named or a.rank == b.rank)
    if same_rank and (not a.named or not a.kind or not b.kind or a.kind == b.kind):
        return True, Code(code="cross_check.verdicts_agree", figures=sides)
    if a.named != b.named:
        silent = b if a.named else a
        why = silent.why_not.model_dump() if silent.why_not is not None else None
        hint = trace.steps < cell.steps and silent is b
        figures = {**sides, "why": why, "hint": hint}
        return False, Code(code="cross_check.verdicts_one_silent", figures=figures)
    if a.rank != b.rank:
        return False, Code(code="cross_check.verdicts_other_rank", figures=sides)
    rules = {
        "timers_rule": a.kind_rule.model_dump() if a.kind_rule is not None else None,
        "traces_rule": b.kind_rule.model_dump() if b.kind_rule is not None else None,
    }
    return False, Code(code="cross_check.verdicts_other_kind", figures={**sides, **rules})


@dataclass(frozen=True)
class TracedInflation:
    """How much longer the traced steps ran than the measured windows: the mean steps (every
    rank pooled) and the 95 % interval of the difference as a fraction of the measured mean
    (None: fewer than two steps on a side)."""

    traced_s: float
    untraced_s: float
    traced_steps: int
    untraced_steps: int
    low: float | None
    high: float | None

    @property
    def share(self) -> float:
        return self.traced_s / self.untraced_s - 1.0

    @property
    def inflated(self) -> bool:
        """The profiler added more than the model's minimum effect, beyond the noise."""
        return self.low is not None and self.low > MIN_EFFECT_SHARE

    def estimate(self) -> Estimate:
        return Estimate(
            value=self.share,
            low=self.low,
            high=self.high,
            n=self.traced_steps,
            measurable=self.low is not None and self.high is not None,
            reason=None if self.low is not None else coded("estimate.few_steps_a_side"),
        )


def traced_inflation(
    traced: Sequence[float], untraced_mean: float, untraced_std: float, untraced_n: int
) -> TracedInflation | None:
    """The traced steps (seconds, every rank pooled) against the measured windows' mean,
    sample standard deviation and count (`CellResult.step_time`), by Welch's t interval on
    the difference of the means; None without steps on either side."""
    values = np.asarray([t for t in traced if math.isfinite(t) and t > 0], dtype=np.float64)
    if values.size == 0 or untraced_mean <= 0 or untraced_n < 1:
        return None
    mean = float(values.mean())
    low = high = None
    if values.size >= 2 and untraced_n >= 2:
        a = float(values.var(ddof=1)) / values.size
        b = untraced_std**2 / untraced_n
        se = math.sqrt(a + b)
        if se > 0:
            df = (a + b) ** 2 / (a**2 / (values.size - 1) + b**2 / (untraced_n - 1))
            half = float(scipy_stats.t.ppf(0.975, df)) * se
        else:
            half = 0.0
        low = (mean - untraced_mean - half) / untraced_mean
        high = (mean - untraced_mean + half) / untraced_mean
    return TracedInflation(mean, untraced_mean, int(values.size), int(untraced_n), low, high)


def _ms(seconds: float) -> str:
    return spell.ms_sig(seconds)


def overhead_note(tool: str, inflation: TracedInflation, ranks: int, timing: str) -> Code:
    """The capture overhead, one note of the run (worded by contracts/wording/profile.py)."""
    figures = {"tool": tool, "traced_s": inflation.traced_s, "untraced_s": inflation.untraced_s}
    figures |= {"share": inflation.share, "low": inflation.low, "high": inflation.high}
    figures |= {"steps": inflation.traced_steps, "ranks": ranks, "timing": timing}
    return Code(code="profile.capture_overhead", figures=figures)


def _inflation_check(
    inflation: TracedInflation, agrees: bool, code: str, figures: dict[str, Any] | None = None
) -> CrossCheck:
    """The cross-check that compares the traced steps with the measured windows."""
    said: dict[str, Any] = {"traced_s": inflation.traced_s, "untraced_s": inflation.untraced_s}
    said |= {"low": inflation.low, "high": inflation.high, **(figures or {})}
    detail = Code(code=f"cross_check.{code}", figures=said)
    return _check("inflation", agrees, detail, inflation.estimate())


def with_inflation(
    traced: Diagnosis, timers: Diagnosis | None, inflation: TracedInflation
) -> Diagnosis:
    """The run's diagnosis once the traced steps are compared with the measured ones
    (`inflation`). Not inflated: the traces' diagnosis with the comparison as an agreeing
    cross-check. Inflated: every finding of the traces whose cost (its interval's low end, per
    step) fits in the time the profiler added (the high end of its interval) is withheld, said
    with its figure in the comparison's cross-check; then `timers`, the phase timers'
    diagnosis of the measured windows, is the diagnosis (the traces' split and straggler its
    cross-checks, their other findings kept with a note), or, without it, the traces' with
    the comparison disagreeing (the split's line carries the inflation)."""
    base_checks = [c for c in traced.cross_checks if c.check != "inflation"]
    if not inflation.inflated:
        check = _inflation_check(inflation, True, "traces_describe_run")
        return traced.model_copy(update={"cross_checks": [*base_checks, check]})
    step_s = traced.step_s.value or inflation.traced_s
    added_high = (inflation.high or inflation.share) * inflation.untraced_s
    withheld, kept = [], []
    for finding in traced.findings:
        share, value = finding.cost_share, finding.cost_pct / 100 * step_s  # cost per step, s
        low = share.low * step_s if share is not None and share.low is not None else value
        if low <= added_high:
            problem = finding.finding.model_dump()
            withheld.append({"problem": problem, "cost_s": value, "cost_pct": finding.cost_pct})
        else:
            kept.append(finding)
    if timers is None:
        check = _inflation_check(inflation, False, "traced_split", {"withheld": withheld})
        return _with_checks(traced, [*base_checks, check], kept)
    split = {"step_s": step_s, "parts": [_part(p) for p in traced.parts], "withheld": withheld}
    check = _inflation_check(inflation, False, "timers_head", split)
    own = {"inflation", "traces_straggler"}
    trace_checks = [c for c in base_checks if c.check not in ("timers_split", "timers_straggler")]
    if traced.straggler is not None and timers.straggler is not None:
        trace_checks.append(_check("traces_straggler", *straggler_agreement(timers, traced)))
    note = Code(
        code="problem.profiler_slower",
        figures={"share": inflation.share, "low": inflation.low, "high": inflation.high},
    )
    traced_findings = [f.model_copy(update={"notes": [*f.notes, note]}) for f in kept]
    findings = sorted([*timers.findings, *traced_findings], key=lambda f: -f.cost_pct)
    checks = [c for c in timers.cross_checks if c.check not in own]
    return _with_checks(timers, [*checks, check, *trace_checks], findings)


def _with_checks(
    diagnosis: Diagnosis, checks: list[CrossCheck], findings: list[Problem]
) -> Diagnosis:
    return diagnosis.model_copy(update={"cross_checks": checks, "findings": findings})


def inflation_of(diagnosis: Diagnosis) -> Estimate | None:
    """The traced steps' inflation a diagnosis was judged with, where the profiler inflated
    them (`with_inflation`); None otherwise."""
    check = next((c for c in diagnosis.cross_checks if c.check == "inflation"), None)
    return check.estimate if check is not None and check.agrees is False else None


def uncleared_inflation(diagnosis: Diagnosis) -> Estimate | None:
    """The traced steps' excess over the measured ones where the traces head the diagnosis as
    not inflated beyond the noise, yet ran longer by more than the minimum effect (few traced
    steps cannot tell whether the profiler added it); None otherwise."""
    check = next((c for c in diagnosis.cross_checks if c.check == "inflation"), None)
    estimate = check.estimate if check is not None else None
    if diagnosis.source != "traces" or estimate is None or estimate.value is None:
        return None
    bounded = estimate.low is not None and estimate.high is not None
    return estimate if bounded and estimate.value > MIN_EFFECT_SHARE else None


def disagreement(checks: Sequence[CrossCheck], hint: str = TERMINAL_HINT) -> str | None:
    """The one line the default output says when a cross-check disagrees, pointing at `hint`
    (where the checks are shown), or None. The profiler's inflation is not counted: the step's
    own line says it (`split_text`)."""
    differ = [check_label(c.check) for c in checks if c.agrees is False and c.check != "inflation"]
    return f"cross-checks disagree: {', '.join(differ)} {hint}" if differ else None
