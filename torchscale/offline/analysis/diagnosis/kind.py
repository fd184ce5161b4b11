"""What a straggler's extra time is, and why a rank is not named, in plain words.

The straggler test (verdict.straggler_verdict) says whether a rank's own work per step is
significantly above the others'. A user acts on *why*: compute (more work to do), input
(waiting for its batch), host (held off the CPU by other work on its core) or communication
(its collectives start late while its work is on par: late_collectives.py from the traces,
held_launches.py from the phase timers). The rule, and why a rank with more work is compute
however loaded its host: docs/methodology.md, "The kind of a straggler".

Pure: test results in, findings out (worded by contracts/wording/diagnosis_straggler.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate, StragglerKind, StragglerVerdict
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


def straggler_kind(slow_phase: str | None, evidence: KindEvidence) -> tuple[StragglerKind, Finding]:
    """(kind, the rule that decided it with its figures) for a named rank (rule in the module
    doc). `slow_phase`: the phase with the largest significant gap, or None."""
    host, left, on_cpu = evidence.host, evidence.left, evidence.on_cpu
    if on_cpu is not None and on_cpu.significant:
        # the work done decides: a rank that ran longer on a CPU has more to do, however long
        # a loaded host also kept it waiting (more work waits longer), never "check the host"
        figures = {"on_cpu_s": on_cpu.mean_s, "phase": slow_phase}
        if host is not None and host.significant:
            figures["held_s"] = host.mean_s
        return "compute", _rule("on_cpu", **figures)
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
        return "host", _rule("host_held", held_s=host.mean_s, left_s=left.mean_s)
    # the hold beside a kind that is not the host's is said by its one caller that reads it
    # (host.cpu_wait_check), which keeps the verdict's own rule
    if slow_phase == "data":
        return "input", _rule("data_phase")
    if slow_phase is not None:
        return "compute", _rule("slow_phase", phase=slow_phase)
    data = evidence.phases.get("data")
    work = sum(t.mean_s for p, t in evidence.phases.items() if p != "data")
    if data is not None and data.mean_s > work:
        return "input", _rule("phases_data")
    return "compute", _rule("phases_compute")


def _rule(name: str, **figures: object) -> Finding:
    return Finding(code=f"straggler.rule.{name}", figures=figures)


def named_as(
    verdict: StragglerVerdict,
    rank: int,
    kind: StragglerKind,
    *,
    gap: Estimate | None,
    p_value: float | None,
    rule: Finding,
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
        "kind_rule": rule,
        "why_not": None,
        # the pattern is of the candidate's cost: another rank named by a kind rule has none
        "pattern": verdict.pattern if rank == verdict.candidate_rank else None,
    }
    return verdict.model_copy(update={**update, **figures})


def not_named_reason(gap: GapTest, share: float) -> Finding:
    """Why a tested candidate is not named, by the rule (the gap itself is said beside it):
    it could be noise (its interval reaches 0, or its one-sided bound does: too few steps
    agree), or its mean is below the minimum effect (`share` of the mean step)."""
    low, high = gap.low_s, gap.high_s
    if high is not None and high <= 0:
        return Finding(code="straggler.none_above")
    if low is None or high is None or low <= 0:
        return Finding(code="straggler.noise_interval")
    if gap.mean_s < gap.min_effect_s:
        return Finding(code="straggler.below_minimum", figures={"share": share})
    return Finding(code="straggler.noise_few_steps")


def withdrawn(by: list[str]) -> Finding:
    """Why a name was withdrawn: the cross-checks that significantly named another rank."""
    return Finding(code="straggler.withdrawn", figures={"by": by})
