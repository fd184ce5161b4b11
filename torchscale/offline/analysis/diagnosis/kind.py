"""What a straggler's extra time is, and why a rank is not named, in plain words.

The straggler test (verdict.straggler_verdict) says whether a rank's own work per step is
significantly above the others'. A user acts on *why*: compute (more work to do), input
(waiting for its batch), host (held off the CPU by other work on its core) or communication
(its collectives start late while its work is on par: late_collectives.py from the traces,
held_launches.py from the phase timers). The rule, and why a rank with more work is compute
however loaded its host: docs/methodology.md, "The kind of a straggler".

Pure: test results in, findings out (worded by contracts/wording/verdicts.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import Estimate, StragglerKind, StragglerVerdict
from torchscale.offline.analysis.diagnosis.step_model import ms
from torchscale.offline.analysis.uncertainty import GapTest


@dataclass(frozen=True)
class KindEvidence:
    """The tests the kind is read from: the candidate's per-phase gaps over the others'
    (`phases`, own-work phases only), the time the host held it off the CPU (`host`, None:
    not measured), the rest of its gap (`left`) and its extra time on a CPU (`on_cpu`)."""

    phases: Mapping[str, GapTest]
    host: GapTest | None = None
    left: GapTest | None = None
    on_cpu: GapTest | None = None  # its time on a CPU over the others' (None: not measured)


def straggler_kind(slow_phase: str | None, evidence: KindEvidence) -> tuple[StragglerKind, str]:
    """(kind, the evidence that decided it in words) for a named rank (rule in the module
    doc). `slow_phase`: the phase with the largest significant gap, or None."""
    host, left, on_cpu = evidence.host, evidence.left, evidence.on_cpu
    if on_cpu is not None and on_cpu.significant:
        # the work done decides: a rank that ran longer on a CPU has more to do, however long
        # a loaded host also kept it waiting (more work waits longer), never "check the host"
        where = f"its {slow_phase}" if slow_phase and slow_phase != "data" else "its work"
        held = (
            f"; the host also held it off the CPU {ms(host.mean_s)}"
            if host is not None and host.significant
            else ""
        )
        return "compute", (
            f"it ran {ms(on_cpu.mean_s)} per step longer on a CPU than the others: {where} "
            f"has more to do{held}"
        )
    # host only with its work on par (above): the extra is time runnable but not running. Not
    # for a gap in the data phase: a rank blocked on its loader leaves its core to its own
    # other threads and waits after it (benchmarks/core_speed.py --sleep-ms), its input's fault
    if (
        host is not None
        and left is not None
        and host.significant
        and host.mean_s >= left.mean_s
        and slow_phase != "data"
    ):
        return "host", (
            f"the host held it off the CPU {ms(host.mean_s)} per step, which passes the "
            f"straggler test and is at least the rest of its gap ({ms(left.mean_s)}): "
            "other work held it off the CPU"
        )
    # the hold beside a kind that is not the host's is said by its one caller that reads it
    # (host.cpu_wait_check), which keeps the verdict's own basis
    if slow_phase == "data":
        return "input", "its data phase has the largest significant gap"
    if slow_phase is not None:
        return "compute", f"its {slow_phase} has the largest significant gap"
    data = evidence.phases.get("data")
    work = sum(t.mean_s for p, t in evidence.phases.items() if p != "data")
    alone = "no phase is significant alone; its"
    if data is not None and data.mean_s > work:
        return "input", f"{alone} data phase holds most of the gap"
    return "compute", f"{alone} compute phases hold most of the gap"


def named_summary(
    rank: int,
    kind: StragglerKind,
    gap: tuple[float | None, float | None, float | None],
    phase: str | None,
    pattern: str | None = None,
) -> Finding:
    """The one line of a named straggler: who, by how much (`gap`: mean, low, high seconds it
    costs the others per step), how that falls over the steps (`pattern`,
    cost.pattern_words) and what its time is."""
    figures = {"rank": int(rank), "kind": kind, "phase": phase, "gap": _plain(gap)}
    return Finding(code="straggler.named", figures={**figures, "pattern": pattern})


def late_summary(
    rank: int,
    late: tuple[float | None, float | None, float | None],
    work_s: float,
    step_s: float | None = None,
) -> Finding:
    """The one line of a communication straggler: how much longer the others wait for it per
    step (`late`: mean, low, high seconds) while its own work is on par (`work_s` over the
    others', beside the mean step `step_s` where the rule weighed it)."""
    step = float(step_s) if step_s is not None else None
    figures = {"rank": int(rank), "late": _plain(late), "work_s": float(work_s), "step_s": step}
    return Finding(code="straggler.late", figures=figures)


def _plain(gap: tuple[float | None, float | None, float | None]) -> list[float | None]:
    """[mean, low, high] as plain floats (numpy's are no JSON)."""
    return [float(x) if x is not None else None for x in gap]


def named_as(
    verdict: StragglerVerdict,
    rank: int,
    kind: StragglerKind,
    *,
    gap: Estimate | None,
    p_value: float | None,
    basis: str,
    summary: Finding,
    **figures: object,
) -> StragglerVerdict:
    """`verdict` naming `rank` a straggler of `kind` by a kind rule that looks past its own-work
    test (host.py, held_launches.py, late_collectives.py): no slow phase, nothing withdrawn,
    `gap` its own work over the others', `p_value` the rule's test; `figures`: the rule's own
    (late_s, host_wait_s)."""
    update = {
        "named": True,
        "rank": rank,
        "phase": None,
        "phase_gap_s": None,
        "candidate_rank": rank,
        "gap_s": gap,
        "p_value": p_value,
        "kind": kind,
        "kind_basis": basis,
        "why_not": None,
        "withdrawn_by": None,
        "said": summary,
        # the pattern is of the candidate's cost: another rank named by a kind rule has none
        "pattern": verdict.pattern if rank == verdict.candidate_rank else None,
    }
    return verdict.model_copy(update={**update, **figures})


def not_named_reason(gap: GapTest, step_s: float, share: float) -> Finding:
    """Why a tested candidate is not named, by the rule (the gap itself is said beside it,
    `unnamed_summary`): it could be noise (its interval reaches 0, or its one-sided bound
    does: too few steps agree), or its mean is below the minimum effect (`share` of the mean
    step `step_s`)."""
    low, high = gap.low_s, gap.high_s
    if high is not None and high <= 0:
        return Finding(code="straggler.none_above")
    if low is None or high is None or low <= 0:
        return Finding(code="straggler.noise_interval")
    if gap.mean_s < gap.min_effect_s:
        figures = {"share": share, "min_effect_s": float(gap.min_effect_s), "step_s": float(step_s)}
        return Finding(code="straggler.below_minimum", figures=figures)
    return Finding(code="straggler.noise_few_steps")


def unnamed_summary(
    candidate: int | None,
    gap: tuple[float | None, float | None, float | None],
    why: Finding,
    pattern: str | None = None,
) -> Finding:
    """The one line of a candidate not named, on every surface: the largest gap (mean, low,
    high seconds), how it falls over the steps, then why."""
    rank = int(candidate) if candidate is not None else None
    figures = {"candidate": rank, "gap": _plain(gap), "pattern": pattern, "why": why.model_dump()}
    return Finding(code="straggler.not_named", figures=figures)


def withdrawn(why: str) -> Finding:
    """Why a name was withdrawn: the words of the evidence that named another rank."""
    return Finding(code="straggler.withdrawn", figures={"by": why})
