"""The traces as evidence for the one step model (step_model.py): the same five parts as the
phase timers' (timers.py), with the same definitions, so that every figure a profile prints is
one of them or a cross-check of them.

Per rank and complete step, the idle taxonomy (`idle.py`) cuts the step window instant by
instant, each instant counted once (priority compute > memory > waiting for peers > transfer >
data > host wait > other idle):

    compute          = compute + memory: the rank's own work on its timeline (GPU kernels and
                       copies; on CPU ranks its ops outside the collective threads, the injected
                       delay included)
    data             = data-phase time with nothing computing or communicating
    wait_for_peers   = exposed collective time inside [start, start + wait) of a matched
                       collective: blocked for the last rank to arrive with nothing else to do
                       (the "sync stall")
    exposed_transfer = the rest of the exposed collective time: the transfer itself
    rest             = the step minus the four: host wait and other idle

so the parts are never negative and add up to the step by construction. The model is the mean
over ranks per step (steps every rank has), with block-bootstrap intervals over steps, exactly
as the cell's (`step_model.part_estimates`).

The straggler verdict is the cell's rule (`straggler_verdict`: paired per-step test of the
rank's own work against the others', minimum effect 5 % of the step); the traces' own evidence
withdraws it only when it significantly points at another rank (the others wait significantly
*less* than the candidate at the matched collectives; arrival order names another rank by its
binomial test). Arrival order is a cross-check, never a second headline. The what-if and the
findings are built over this model by the diagnosis (diagnose.py).

A profiler slows the steps it traces. When the traced steps ran longer than the same run's
measured windows beyond the noise (`traced_inflation`: Welch's t interval on the difference of
the mean steps, its low end above MIN_EFFECT_SHARE of the untraced step), the traces' split
describes the profiler as much as the run: `with_inflation` then makes the phase timers' model
the headline (the traces' split a cross-check), or, without one, says the inflation in the
split's own line, and withholds every finding whose cost the profiler's added time could
explain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from torchscale.contracts.schema.cell_result import (
    PART_NAMES,
    Attribution,
    CrossCheck,
    Diagnosis,
    Estimate,
    Finding,
    StepPart,
    StragglerVerdict,
)
from torchscale.contracts.step_phases import OWN_WORK_PHASES
from torchscale.offline.analysis.diagnosis.step_model import (
    MIN_EFFECT_SHARE,
    mean_step,
    part_estimates,
    share_of_step,
    wide,
)
from torchscale.offline.analysis.diagnosis.verdict import ArrivalOrder, StragglerEvidence, judge
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.straggler import StragglerAnalysis

# the parts both models measure from the same event, the wait at the gradient sync: the phase
# timers' agreement is judged on these (compute and rest are cut differently by design)
SYNC_PARTS = ("wait_for_peers", "exposed_transfer")
PART_COLUMNS = ["rank", "step", "step_s", *PART_NAMES, "host_wait", "memory"]
BASIS = (
    "profiler traces: per rank and complete step, the step window cut instant by instant "
    "(compute > waiting for peers > exposed transfer > data > rest), mean over {ranks} rank(s)"
)
UNKNOWN_WAIT = (
    "not separable: {why}; the wait is inside exposed transfer (collective time with nothing "
    "computing)"
)
OWN_WORK_FROM_PHASES = (
    "own work = the rank's busy time in its data, forward, backward and optimizer ranges (a "
    "phase holding communication counts its work, not its wait)"
)
OWN_WORK_PARTS = "own work = the compute and data parts of the step model (no phase ranges)"


@dataclass
class StepModel:
    """The model and what the surfaces need beside it.

    `parts`: per rank and step used (seconds; PART_COLUMNS, host_wait is the part of rest the
    device waited for the host, memory the part of compute that is device copies).
    `per_rank`: each rank's parts over those steps with intervals. `own`: what the straggler
    test compared (step, rank, compute = the own work per step), for the diagnosis' what-if.
    `waits_known`: collectives were matched across ranks, so wait and transfer are split."""

    attribution: Attribution | None
    parts: pd.DataFrame
    per_rank: dict[int, list[StepPart]] = field(default_factory=dict)
    own: pd.DataFrame | None = None
    host_wait: Estimate | None = None
    memory: Estimate | None = None
    waits_known: bool = False
    own_work_basis: str = ""
    reason: str | None = None  # why there is no model
    notes: list[str] = field(default_factory=list)


def trace_parts(taxonomy: pd.DataFrame) -> pd.DataFrame:
    """The five parts per rank and step (seconds) from `idle.idle_taxonomy`; step_s is their
    sum (the step window, up to rounding)."""
    if taxonomy.empty:
        frame = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in PART_COLUMNS})
        return frame.astype({"rank": np.int64, "step": np.int64})
    t = taxonomy
    out = pd.DataFrame(
        {
            "rank": t["rank"].to_numpy(dtype=np.int64),
            "step": t["step"].to_numpy(dtype=np.int64),
            "compute": (t["compute_us"] + t["memory_us"]).to_numpy(np.float64) / 1e6,
            "data": t["data_us"].to_numpy(np.float64) / 1e6,
            "wait_for_peers": t["waiting_for_peers_us"].to_numpy(np.float64) / 1e6,
            "exposed_transfer": t["transfer_us"].to_numpy(np.float64) / 1e6,
            "rest": (t["host_wait_us"] + t["other_idle_us"]).to_numpy(np.float64) / 1e6,
            "host_wait": t["host_wait_us"].to_numpy(np.float64) / 1e6,
            "memory": t["memory_us"].to_numpy(np.float64) / 1e6,
        }
    )
    for name in PART_NAMES:  # float rounding of the interval sums only
        out[name] = out[name].clip(lower=0.0)
    out["step_s"] = out[list(PART_NAMES)].sum(axis=1)
    return out[PART_COLUMNS]


def common_steps(parts: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """The rows of steps every rank has. Ranks whose captures share no step number are paired
    by position (the k-th complete step of each), with a note."""
    ranks = parts["rank"].nunique()
    if ranks < 2:
        return parts
    present = parts.groupby("step")["rank"].transform("nunique")
    kept = parts[present == ranks]
    if not kept.empty:
        dropped = int(parts["step"].nunique() - kept["step"].nunique())
        if dropped:
            notes.append(f"step model: {dropped} step(s) not complete on every rank left out")
        return kept
    notes.append("step model: the ranks share no step number; steps paired by position")
    by_position = parts.sort_values(["rank", "step"]).assign(
        step=lambda f: f.groupby("rank").cumcount().astype(np.int64)
    )
    present = by_position.groupby("step")["rank"].transform("nunique")
    return by_position[present == ranks]


TRACE_WAIT = "matched collectives"  # where the others' wait for the candidate comes from


def own_work(
    parts: pd.DataFrame, phases_by_rank: Mapping[int, pd.DataFrame], waits_known: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """What the straggler test compares, per rank and step, as the cell's `straggler_verdict`
    reads it: (own, phases, basis). `own` has window, step, rank, compute (= the own work) and
    data (0); `phases` has window, step, rank and the seconds of each phase.

    Phase basis when every rank has forward and backward ranges (torchscale's markers) and
    collectives were matched: on GPUs a rank late on the host (a slow data step, a sleep)
    shows in its phases' host time, not in its kernels. Without collectives a phase cannot
    tell its work from a wait inside it (it counts its whole duration), so then, as for
    traces of any job, the compute and data parts, and the phases' busy time for the slow
    phase."""
    keys = parts[["rank", "step"]]
    frames = []
    for rank, table in sorted(phases_by_rank.items()):
        if table.empty:
            continue
        frames.append(table.assign(rank=int(rank)))
    ranks = set(int(r) for r in parts["rank"].unique())
    phase_ok = False
    wide = pd.DataFrame()
    if frames:
        allp = pd.concat(frames, ignore_index=True)
        have = allp.groupby("rank")["phase"].agg(lambda s: set(s.astype(str)))
        phase_ok = (
            waits_known
            and set(have.index.astype(int)) >= ranks
            and all({"forward", "backward"} <= have.get(r, set()) for r in ranks)
        )
        # without collectives a phase's duration may hold a wait: compare its work only
        value = "effective_us" if waits_known else "busy_us"
        wide = allp.pivot_table(
            index=["rank", "step"], columns="phase", values=value, aggfunc="sum"
        )
        wide = (wide / 1e6).reset_index()
        wide.columns = [str(c) for c in wide.columns]
        wide = keys.merge(wide, on=["rank", "step"], how="left")
    for phase in OWN_WORK_PHASES:
        if phase not in wide.columns:
            wide[phase] = np.nan
    if wide.empty:
        wide = keys.assign(**{p: np.nan for p in OWN_WORK_PHASES})
    wide = wide.assign(window=0)
    if phase_ok:
        own_s = wide[list(OWN_WORK_PHASES)].sum(axis=1, min_count=1)
        own = wide[["window", "step", "rank"]].assign(compute=own_s.to_numpy(), data=0.0)
        own = own.dropna(subset=["compute"])
        return own, wide, OWN_WORK_FROM_PHASES
    own = parts[["step", "rank"]].assign(
        window=0, compute=(parts["compute"] + parts["data"]).to_numpy(), data=0.0
    )
    return own, wide, OWN_WORK_PARTS


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value * 100:.1f} %"


def _figure(estimate: Estimate) -> str:
    """An estimate in a sentence of this module: '12.3 % [11.0, 13.9]' (the interval itself,
    never a ± that a lopsided interval would misstate), 'not measurable (< 0.4 %)',
    'unknown'."""
    if not estimate.measurable or estimate.value is None:
        return (
            f"not measurable (< {_pct(estimate.high)})" if estimate.high is not None else "unknown"
        )
    if estimate.low is None or estimate.high is None:
        return f"{_pct(estimate.value)} (spread unknown)"
    return f"{_pct(estimate.value)} [{estimate.low * 100:.1f}, {estimate.high * 100:.1f}]"


def _range(estimate: Estimate) -> tuple[float, float] | None:
    """The interval an estimate allows ([value, value] without one); None when unknown."""
    if estimate.low is not None and estimate.high is not None:
        return estimate.low, estimate.high
    if estimate.value is not None:
        return estimate.value, estimate.value
    return None


def _overlap(a: Estimate, b: Estimate) -> bool | None:
    ra, rb = _range(a), _range(b)
    if ra is None or rb is None:
        return None
    return ra[0] <= rb[1] and rb[0] <= ra[1]


def build_step_model(
    taxonomy: pd.DataFrame,
    *,
    phases_by_rank: Mapping[int, pd.DataFrame],
    matched: Matched | None,
    arrival: StragglerAnalysis | None,
    waits_known: bool,
    world_size: int | None,
    cpu_wait: pd.DataFrame | None = None,
) -> StepModel:
    """The trace attribution of one profile (see the module doc). `taxonomy`:
    `idle.idle_taxonomy`; `arrival`: `straggler.attribute_straggler`; `waits_known`:
    collectives were matched, so the wait for peers is split from the transfer; `world_size`:
    as the traces declare it; `cpu_wait`: (rank, step, cpu_wait[, cpu_time]) seconds each
    rank's training thread waited for a CPU (and ran on one) in the traced steps
    (`host.cpu_wait_check`). The what-if
    and findings are the diagnosis' (diagnose.py)."""
    notes: list[str] = []
    parts = trace_parts(taxonomy)
    if parts.empty:
        return StepModel(None, parts, reason="no complete step on any rank", notes=notes)
    parts = common_steps(parts, notes)
    if parts.empty:
        return StepModel(None, parts, reason="no step complete on every rank", notes=notes)
    ranks = int(parts["rank"].nunique())
    mean = mean_step(parts, "step", ranks, extra=("host_wait", "memory"))
    per_step, step_est, estimates = mean.per_step, mean.step_s, mean.parts
    step_series = mean.series
    one_of_many = ranks == 1 and (world_size or 1) > 1
    if one_of_many or (ranks > 1 and not waits_known):
        why = (
            f"one rank of {world_size} in the input"
            if one_of_many
            else "no collective matched across the ranks"
        )
        estimates = [
            p.model_copy(update={"seconds": _unknown(why), "share": _unknown(why)})
            if p.name == "wait_for_peers"
            else p
            for p in estimates
        ]
    basis = BASIS.format(ranks=ranks)
    if one_of_many or (ranks > 1 and not waits_known):
        basis += "; " + UNKNOWN_WAIT.format(why=why)
    host = share_of_step(
        per_step["host_wait"].to_numpy(np.float64),
        step_series,
        method="host wait (part of rest) / step, moving-block bootstrap over steps",
    )
    memory = share_of_step(
        per_step["memory"].to_numpy(np.float64),
        step_series,
        method="device copies not under a kernel (part of compute) / step, moving-block "
        "bootstrap over steps",
    )
    model = StepModel(
        attribution=None,
        parts=parts,
        host_wait=host,
        memory=memory,
        waits_known=waits_known and ranks > 1,
        notes=notes,
    )
    for rank, rows in parts.groupby("rank"):
        matrix = rows.sort_values("step")[list(PART_NAMES)].to_numpy(np.float64)
        method = f"moving-block bootstrap over {matrix.shape[0]} steps of rank {int(rank)}"
        model.per_rank[int(rank)] = part_estimates(matrix, 1, method=method, lone=False)[1]
    verdict: StragglerVerdict | None = None
    checks: list[CrossCheck] = []
    if ranks > 1:
        own, phases, model.own_work_basis = own_work(parts, phases_by_rank, model.waits_known)
        model.own = own
        waits, busy = _cpu_tables(cpu_wait)
        evidence = StragglerEvidence(
            own=own,
            phases=phases,
            step_s=step_est.value or 0.0,
            step=step_series,
            wait=wide(parts.assign(window=0), "wait_for_peers") if model.waits_known else None,
            wait_source=TRACE_WAIT,
            cpu_wait=waits,
            cpu_time=busy,
            order=ArrivalOrder(matched, arrival),
            own_basis=model.own_work_basis,
        )
        verdict, checks = judge(evidence)
    model.attribution = Attribution(
        basis=basis,
        steps=int(per_step.shape[0]),
        ranks=ranks,
        step_s=step_est,
        parts=estimates,
        straggler=verdict,
        cross_checks=checks,
    )
    return model


def _cpu_tables(
    cpu_wait: pd.DataFrame | None,
) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """(wait for a CPU, time on a CPU): (window, step) x rank seconds of the traced steps
    from the (rank, step, cpu_wait[, cpu_time]) frame; None where not measured."""
    if cpu_wait is None or cpu_wait.empty:
        return None, None
    frame = cpu_wait.assign(window=0)
    tables = [
        frame.pivot_table(index=["window", "step"], columns="rank", values=column)
        if column in frame.columns and frame[column].notna().any()
        else None
        for column in ("cpu_wait", "cpu_time")
    ]
    return tables[0], tables[1]


def _unknown(why: str) -> Estimate:
    return Estimate(
        value=None,
        low=None,
        high=None,
        n=0,
        method="none",
        measurable=False,
        reason=UNKNOWN_WAIT.format(why=why),
    )


# ------------------------------------------------------------------ the cell's own model


def phase_timer_checks(trace: Attribution, cell: Attribution | None) -> list[CrossCheck]:
    """The benchmark cell's step model (phase timers, measured windows without a profiler)
    as cross-checks of the trace model: its parts, agreeing when its waiting for peers and
    exposed transfer lie within the traces' intervals (compute and rest are cut differently:
    whole phases against ops), and its straggler verdict, agreeing when both name the same
    rank or none."""
    if cell is None:
        return []
    method = (
        "the run's own phase timers over its measured windows, before any traced step and "
        "without the profiler (docs/methodology.md, 'One model of the step')"
    )
    by_name = {p.name: p for p in trace.parts}
    judged_on, differ, other = [], [], []
    for part in cell.parts:
        mine = by_name.get(part.name)
        if mine is None:
            continue
        same = _overlap(part.share, mine.share)
        if same is None:
            continue
        text = f"{part.name.replace('_', ' ')} {_figure(part.share)} against {_figure(mine.share)}"
        if part.name in SYNC_PARTS:
            judged_on.append(part.name)
            if not same:
                differ.append(text)
        elif not same:
            other.append(text)
    parts_text = ", ".join(f"{p.name.replace('_', ' ')} {_figure(p.share)}" for p in cell.parts)
    step_ms = (cell.step_s.value or 0.0) * 1e3
    detail = f"measured windows: step {step_ms:.3g} ms: {parts_text}"
    if differ:
        detail += "; the waits differ: " + "; ".join(differ)
    elif judged_on:
        detail += "; waiting for peers and exposed transfer within the traces' intervals"
    if other:
        detail += (
            "; also outside the traces' intervals, as the methods differ (the timers count "
            "whole phases, Python included, the traces only ops; the traced steps run under "
            "the profiler): " + "; ".join(other)
        )
    checks = [
        CrossCheck(
            name="phase timers: step model",
            method=method,
            estimate=None,
            agrees=not differ if judged_on else None,
            detail=detail,
        )
    ]
    if cell.straggler is not None and trace.straggler is not None:
        a, b = cell.straggler, trace.straggler
        same_rank = a.named == b.named and (not a.named or a.rank == b.rank)
        checks.append(
            CrossCheck(
                name="phase timers: straggler",
                method=method,
                estimate=None,
                agrees=same_rank,
                detail=a.summary,
            )
        )
    return checks


# ------------------------------------------------------------------ the profiler's inflation

INFLATION_CHECK = "traced steps against the measured windows"
INFLATION_METHOD = (
    "Welch's t 95 % interval on the difference of the mean step, traced (each rank's step "
    "timer under the profiler, rank<k>.phases.json) minus measured (the same timer in the "
    "measured windows, without the profiler), over the measured mean; inflated when its low "
    "end is above 5 % of the measured step"
)
TRACES_STRAGGLER = "traces: straggler"
OVERHEAD_NOTE = "capture overhead"  # how the run's note on it starts


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
            method=INFLATION_METHOD,
            measurable=self.low is not None and self.high is not None,
            reason=None if self.low is not None else "fewer than two steps on a side",
        )

    def words(self) -> str:
        """'+76.4 % [+56.0, +96.9]', or '+76.4 % (no interval)'."""
        if self.low is None or self.high is None:
            return f"{self.share:+.1%} (no interval)".replace("%", " %")
        return f"{self.share * 100:+.1f} % [{self.low * 100:+.1f}, {self.high * 100:+.1f}]"


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
    return TracedInflation(
        traced_s=mean,
        untraced_s=untraced_mean,
        traced_steps=int(values.size),
        untraced_steps=int(untraced_n),
        low=low,
        high=high,
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def overhead_line(tool: str, inflation: TracedInflation, ranks: int, timing: str) -> str:
    """The capture overhead in one note of the run: 'capture overhead (torch): traced steps
    34.8 ms mean against 19.7 ms in the measured windows (+76.4 %, 95 % interval +56.9 % to
    +96.0 %, Welch's t; ...)'; 'not measurable' with the interval where it includes 0."""

    def pct(fraction: float) -> str:
        return f"{fraction * 100:+.1f} %"

    low, high = inflation.low, inflation.high
    if low is None or high is None:
        figure = f"{pct(inflation.share)}, no interval"
    elif not low <= 0.0 <= high:
        figure = f"{pct(inflation.share)}, 95 % interval {pct(low)} to {pct(high)}, Welch's t"
    else:
        figure = f"not measurable: 95 % interval {pct(low)} to {pct(high)}"
    return (
        f"{OVERHEAD_NOTE} ({tool}): traced steps {_ms(inflation.traced_s)} mean against "
        f"{_ms(inflation.untraced_s)} in the measured windows ({figure}; "
        f"{inflation.traced_steps} traced step(s) over {ranks} rank(s), same step timer: "
        f"{timing})"
    )


def _cost_s(finding: Finding, step_s: float) -> tuple[float, float]:
    """A finding's cost per step in seconds: (value, low end of its interval)."""
    share = finding.cost_share
    value = finding.cost_pct / 100
    low = share.low if share is not None and share.low is not None else value
    return value * step_s, low * step_s


def _split_words(diagnosis: Diagnosis) -> str:
    return ", ".join(f"{p.name.replace('_', ' ')} {_figure(p.share)}" for p in diagnosis.parts)


def _inflation_check(inflation: TracedInflation, agrees: bool, detail: str) -> CrossCheck:
    """The cross-check that compares the traced steps with the measured windows."""
    return CrossCheck(
        name=INFLATION_CHECK,
        method=INFLATION_METHOD,
        estimate=inflation.estimate(),
        agrees=agrees,
        detail=detail,
    )


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
    base_checks = [c for c in traced.cross_checks if c.name != INFLATION_CHECK]
    summary = (
        f"traced steps {_ms(inflation.traced_s)} against {_ms(inflation.untraced_s)} in the "
        f"measured windows, {inflation.words()} (Welch's t)"
    )
    if not inflation.inflated:
        check = _inflation_check(inflation, True, f"{summary}: the traces describe the run's steps")
        return traced.model_copy(update={"cross_checks": [*base_checks, check]})
    step_s = traced.step_s.value or inflation.traced_s
    added_high = (inflation.high or inflation.share) * inflation.untraced_s
    withheld, kept = [], []
    for finding in traced.findings:
        value, low = _cost_s(finding, step_s)
        if low <= added_high:
            withheld.append(
                f"{finding.title}, {_ms(value)} a step ({finding.cost_pct:.1f} % of the traced "
                "step)"
            )
        else:
            kept.append(finding)
    added = _ms(inflation.traced_s - inflation.untraced_s)
    if inflation.low is not None and inflation.high is not None:
        low, high = (inflation.untraced_s * x * 1e3 for x in (inflation.low, inflation.high))
        added += f" [{low:.3g}, {high:.3g}]"
    overhead = (
        f"; withheld as profiler overhead (within the +{added} a step the profiler added): "
        + "; ".join(withheld)
        if withheld
        else ""
    )
    if timers is None:
        detail = f"{summary}: the step split describes the traced steps{overhead}"
        check = _inflation_check(inflation, False, detail)
        return _with_checks(traced, [*base_checks, check], kept)
    detail = (
        f"{summary}: the step split is the measured windows'; the traced steps' under the "
        f"profiler: step {_ms(step_s)}: {_split_words(traced)}{overhead}"
    )
    check = _inflation_check(inflation, False, detail)
    own = {INFLATION_CHECK, TRACES_STRAGGLER}
    trace_checks = [c for c in base_checks if not c.name.startswith("phase timers:")]
    if traced.straggler is not None and timers.straggler is not None:
        a, b = timers.straggler, traced.straggler
        trace_checks.append(
            CrossCheck(
                name=TRACES_STRAGGLER,
                method=traced.basis,
                estimate=None,
                agrees=a.named == b.named and (not a.named or a.rank == b.rank),
                detail=b.summary,
            )
        )
    note = f"in the traced steps, {inflation.words()} slower under the profiler"
    traced_findings = [f.model_copy(update={"evidence": [*f.evidence, note]}) for f in kept]
    findings = sorted([*timers.findings, *traced_findings], key=lambda f: -f.cost_pct)
    checks = [c for c in timers.cross_checks if c.name not in own]
    return _with_checks(timers, [*checks, check, *trace_checks], findings)


def _with_checks(
    diagnosis: Diagnosis, checks: list[CrossCheck], findings: list[Finding]
) -> Diagnosis:
    differ = [c.name for c in checks if c.agrees is False]
    disagreement = f"cross-checks disagree: {', '.join(differ)} (-v shows them)" if differ else None
    return diagnosis.model_copy(
        update={"cross_checks": checks, "findings": findings, "disagreement": disagreement}
    )


def inflation_of(diagnosis: Diagnosis) -> Estimate | None:
    """The traced steps' inflation a diagnosis was judged with, where the profiler inflated
    them (`with_inflation`); None otherwise."""
    check = next((c for c in diagnosis.cross_checks if c.name == INFLATION_CHECK), None)
    return check.estimate if check is not None and check.agrees is False else None


def uncleared_inflation(diagnosis: Diagnosis) -> Estimate | None:
    """The traced steps' excess over the measured ones where the traces head the diagnosis as
    not inflated beyond the noise, yet ran longer by more than the minimum effect (few traced
    steps cannot tell whether the profiler added it); None otherwise."""
    check = next((c for c in diagnosis.cross_checks if c.name == INFLATION_CHECK), None)
    estimate = check.estimate if check is not None else None
    if (
        diagnosis.source != "traces"
        or estimate is None
        or estimate.value is None
        or estimate.low is None
        or estimate.high is None
        or estimate.value <= MIN_EFFECT_SHARE
    ):
        return None
    return estimate


__all__ = [
    "INFLATION_CHECK",
    "PART_COLUMNS",
    "StepModel",
    "TracedInflation",
    "build_step_model",
    "common_steps",
    "inflation_of",
    "overhead_line",
    "own_work",
    "phase_timer_checks",
    "share_of_step",
    "trace_parts",
    "traced_inflation",
    "uncleared_inflation",
    "with_inflation",
]
