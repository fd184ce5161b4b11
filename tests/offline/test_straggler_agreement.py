"""`profile` and `benchmark` judge one run alike, or say why not: the phase
timers' verdict (the measured windows, what `benchmark` judges) against the traces' (what
`profile` judges) agrees on rank and kind, and a disagreement states why the evidence differs."""

from __future__ import annotations

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import (
    CrossCheck,
    Diagnosis,
    Estimate,
    StepSplit,
    StragglerKind,
    StragglerVerdict,
)
from torchscale.contracts.wording import say
from torchscale.contracts.wording.diagnosis_checks import detail as said
from torchscale.offline.analysis.diagnosis.inflation import (
    TracedInflation,
    phase_timer_checks,
    with_inflation,
)

GAP = Estimate(value=0.012, low=0.010, high=0.015, n=24, measurable=True)
STEP = Estimate(value=0.04, low=0.039, high=0.041, n=24, measurable=True)


# why the hand-made verdicts name nobody, as the diagnosis stores it (kind.py)
NOISE = Finding(code="straggler.noise_interval")
BELOW = Finding(code="straggler.below_minimum", figures={"share": 0.05})
# the rule that decided each kind, as kind.py stores it
RULES = {
    "compute": Finding(code="straggler.rule.slow_phase", figures={"phase": "forward"}),
    "host": Finding(code="straggler.rule.host_held", figures={"held_s": 0.012, "left_s": 0.001}),
}
TEST = Finding(
    code="straggler.test", figures={"alpha": 0.01, "min_share": 0.05, "own_work": "timers"}
)


def verdict(
    rank: int | None, kind: StragglerKind | None = None, why: Finding | None = None
) -> StragglerVerdict:
    named = rank is not None
    assert (kind is not None) if named else (why is not None)
    return StragglerVerdict(
        named=named,
        rank=rank,
        phase="forward" if named else None,
        candidate_rank=1,
        gap_s=GAP,
        p_value=0.001,
        min_effect_s=0.002,
        kind=kind,
        kind_rule=RULES[kind] if kind else None,
        why_not=why,
        test=TEST,
    )


def split(straggler: StragglerVerdict, steps: int) -> StepSplit:
    return StepSplit(steps=steps, ranks=2, step_s=STEP, parts=[], straggler=straggler)


def check(timers: StragglerVerdict, traces: StragglerVerdict, traced_steps: int = 10) -> CrossCheck:
    [found] = [
        c
        for c in phase_timer_checks(split(traces, traced_steps), split(timers, 96))
        if c.check == "timers_straggler"
    ]
    return found


def test_the_same_rank_and_kind_agree() -> None:
    found = check(verdict(1, "compute"), verdict(1, "compute"))
    assert found.agrees is True and said(found.detail).startswith("both name rank 1, compute")


def test_nobody_on_both_sides_agrees() -> None:
    found = check(verdict(None, why=NOISE), verdict(None, why=BELOW))
    assert found.agrees is True and said(found.detail).startswith("neither names a rank")


def test_traces_too_few_to_name_say_so_and_ask_for_more_steps() -> None:
    found = check(verdict(1, "compute"), verdict(None, why=NOISE))
    assert found.agrees is False
    assert "the timers (96 measured steps) name rank 1, compute" in said(found.detail)
    assert "the traces (10 traced steps) none: could be noise" in said(found.detail)
    assert said(found.detail).endswith("trace more steps (--profile-steps)")


def test_timers_that_name_nobody_give_their_reason_without_the_hint() -> None:
    found = check(verdict(None, why=BELOW), verdict(1, "compute"))
    assert found.agrees is False and said(found.detail).endswith(": " + say(BELOW))
    assert say(BELOW) == "below the 5 % minimum effect"


def test_another_kind_for_the_same_rank_names_both_kinds_evidence() -> None:
    found = check(verdict(1, "host"), verdict(1, "compute"), traced_steps=24)
    assert found.agrees is False
    assert "different evidence" in said(found.detail)
    host, compute = say(RULES["host"]), say(RULES["compute"])
    assert f"the timers' ({host}) against the traces' ({compute})" in said(found.detail)


def test_another_rank_says_the_traces_are_another_sample() -> None:
    found = check(verdict(0, "compute"), verdict(1, "compute"))
    assert found.agrees is False and "another sample of the run" in said(found.detail)


def inflated_check(timers: StragglerVerdict, traces: StragglerVerdict) -> CrossCheck:
    """The traces' verdict as the cross-check where the profiler inflated the traced steps
    and the timers head the diagnosis (`with_inflation`)."""
    diagnosis = {
        source: Diagnosis(**split(v, steps).model_dump(), source=source)
        for source, v, steps in (("phase timers", timers, 96), ("traces", traces, 10))
    }
    inflated = TracedInflation(0.060, 0.040, 10, 96, low=0.3, high=0.7)
    assert inflated.inflated
    found = with_inflation(diagnosis["traces"], diagnosis["phase timers"], inflated)
    assert found.source == "phase timers"
    checks = {c.check: c for c in found.cross_checks}
    assert checks["inflation"].agrees is False
    return checks["traces_straggler"]


def test_under_inflation_the_traces_verdict_is_judged_by_the_same_rule() -> None:
    """One rule of agreement whichever source heads: the same rank and kind agree; another
    kind for that rank disagrees, as it does where the traces head."""
    same = inflated_check(verdict(1, "compute"), verdict(1, "compute"))
    assert same.agrees is True and said(same.detail) == "both name rank 1, compute"
    other_kind = inflated_check(verdict(1, "host"), verdict(1, "compute"))
    assert other_kind.agrees is False and "different evidence" in said(other_kind.detail)
    silent = inflated_check(verdict(1, "compute"), verdict(None, why=NOISE))
    assert silent.agrees is False and said(silent.detail).endswith(
        "trace more steps (--profile-steps)"
    )
