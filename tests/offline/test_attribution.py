"""The one model of the step (analysis/diagnosis/step_model.py, timers.py) on synthetic tables
with known answers: balanced ranks plus noise name no straggler, an injected gap names the right
rank and phase, and the parts are never negative and add up to the step whatever the input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from torchscale.contracts.schema.diagnosis import PART_NAMES, StepSplit
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say
from torchscale.offline.analysis.diagnosis.step_model import MIN_EFFECT_SHARE, NoSyncSteps
from torchscale.offline.analysis.diagnosis.timers import step_parts, timers_step_split

PHASE_MS = {"data": 0.1, "forward": 1.0, "backward": 2.0, "optimizer": 0.5}
TRANSFER_MS = 1.0
REST_MS = 0.2


def step_table(
    *,
    ranks: int = 2,
    windows: int = 3,
    steps: int = 15,
    noise: float = 0.05,
    delay: tuple[int, str, float] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Steps of DDP ranks as the phase timers see them: every rank works (each phase with
    relative noise), the ranks that arrive early at the gradient sync wait for the last one,
    then all wait for the transfer. A rank starts its step when its previous optimizer step
    ends (the sync ends together), so a slow optimizer makes the others wait at the next
    step's sync. `delay` = (rank, phase, ms) adds work to one rank."""
    rng = np.random.default_rng(seed)
    rows = []
    for window in range(windows):
        carried = dict.fromkeys(range(ranks), 0.0)  # after the last sync (a barrier: none)
        for step in range(steps):
            work: dict[int, dict[str, float]] = {}
            for rank in range(ranks):
                phases = {
                    name: ms / 1e3 * (1 + abs(rng.normal(0, noise)))
                    for name, ms in PHASE_MS.items()
                }
                if delay is not None and rank == delay[0]:
                    phases[delay[1]] += delay[2] / 1e3
                work[rank] = phases
            # the sync happens at the end of backward: what comes before it decides the order
            arrive = {
                r: carried[r] + p["data"] + p["forward"] + p["backward"] for r, p in work.items()
            }
            carried = {r: p["optimizer"] for r, p in work.items()}
            last = max(arrive.values())
            transfer = TRANSFER_MS / 1e3 * (1 + abs(rng.normal(0, noise)))
            for rank, phases in work.items():
                wait = last - arrive[rank] + transfer  # measured from its own arrival
                step_s = sum(phases.values()) + wait + REST_MS / 1e3
                rows.append(
                    {
                        "window": window,
                        "step": step,
                        "rank": rank,
                        "step_s": step_s,
                        "grad_sync_wait": wait,
                        **phases,
                    }
                )
    return pd.DataFrame(rows)


def parts_of(attribution: StepSplit) -> dict[str, float | None]:
    return {p.name: p.share.value for p in attribution.parts}


def line(attribution: StepSplit) -> str:
    """The straggler's one line, as every surface shows it."""
    return verdict_words.straggler_text(attribution.straggler, attribution.ranks)


def test_balanced_ranks_name_no_straggler() -> None:
    for seed in range(5):
        attribution = timers_step_split(step_table(seed=seed), None)
        assert attribution is not None and attribution.straggler is not None
        verdict = attribution.straggler
        assert not verdict.named, line(attribution)
        assert verdict.rank is None and verdict.phase is None
        assert verdict.candidate_rank is not None
        assert line(attribution).startswith(f"Straggler: none (rank {verdict.candidate_rank} ")
        assert verdict.kind is None and verdict_words.why_not(verdict) is not None
        assert verdict_words.why_not(verdict) in line(attribution)
        # the largest gap is stated with its interval, which includes zero or is tiny
        assert verdict.gap_s is not None and verdict.gap_s.low is not None
        assert verdict.gap_s.low < MIN_EFFECT_SHARE * attribution.step_s.value  # type: ignore[operator]


def test_small_real_gap_below_the_minimum_effect_is_not_named() -> None:
    """A consistent but tiny gap (36 us on a ~5 ms step) is certain and still not a straggler."""
    table = step_table(delay=(1, "backward", 0.036), noise=0.001)
    attribution = timers_step_split(table, None)
    assert attribution is not None and attribution.straggler is not None
    assert not attribution.straggler.named
    # said in the rule's words: certain (its interval is above 0) and too small to act on
    assert verdict_words.why_not(attribution.straggler) is not None
    assert "below the 5 % minimum effect" in verdict_words.why_not(attribution.straggler)
    assert "noise" not in verdict_words.why_not(attribution.straggler)


@pytest.mark.parametrize(
    ("rank", "phase", "ranks"), [(1, "backward", 2), (0, "forward", 2), (3, "optimizer", 4)]
)
def test_injected_gap_names_rank_and_phase(rank: int, phase: str, ranks: int) -> None:
    table = step_table(ranks=ranks, delay=(rank, phase, 3.0))
    attribution = timers_step_split(table, None)
    assert attribution is not None and attribution.straggler is not None
    verdict = attribution.straggler
    assert verdict.named, line(attribution)
    assert verdict.rank == rank
    assert verdict.phase == phase
    assert verdict.phase_gap_s is not None and verdict.phase_gap_s.value is not None
    assert verdict.phase_gap_s.value == pytest.approx(3e-3, rel=0.1)
    assert verdict.p_value is not None and verdict.p_value < 0.01
    assert verdict.kind == "compute" and verdict_words.why_not(verdict) is None
    assert line(attribution).startswith(f"Straggler: rank {rank}, compute in {phase}, +")


def test_the_others_wait_for_the_straggler() -> None:
    """Waiting for peers is what the delay costs the other ranks; transfer stays the transfer."""
    table = step_table(ranks=2, delay=(1, "backward", 3.0), noise=0.01)
    attribution = timers_step_split(table, None)
    assert attribution is not None
    seconds = {p.name: p.seconds.value for p in attribution.parts}
    # rank 0 waits ~3 ms, rank 1 none: the mean over the two ranks is ~1.5 ms
    assert seconds["wait_for_peers"] == pytest.approx(1.5e-3, rel=0.1)
    assert seconds["exposed_transfer"] == pytest.approx(TRANSFER_MS / 1e3, rel=0.1)
    assert seconds["rest"] == pytest.approx(REST_MS / 1e3, rel=0.1)


def test_no_sync_windows_that_contradict_the_candidate_stop_the_name() -> None:
    table = step_table(ranks=2, delay=(1, "backward", 3.0))
    rng = np.random.default_rng(3)
    contradicting = NoSyncSteps(
        {0: list(rng.normal(8e-3, 1e-4, 30)), 1: list(rng.normal(4e-3, 1e-4, 30))}
    )
    attribution = timers_step_split(table, contradicting)
    assert attribution is not None and attribution.straggler is not None
    assert not attribution.straggler.named
    why = attribution.straggler.why_not
    assert why is not None and why.code == "straggler.withdrawn"
    assert why.figures["by"] == ["no_sync_windows"]
    assert "withdrawn by the no_sync windows" in line(attribution)
    agreeing = NoSyncSteps(
        {0: list(rng.normal(4e-3, 1e-4, 30)), 1: list(rng.normal(7e-3, 1e-4, 30))}
    )
    named = timers_step_split(table, agreeing)
    assert named is not None and named.straggler is not None and named.straggler.named
    checks = {c.check: c for c in named.cross_checks}
    assert set(checks) == {"paired", "others_wait", "no_sync_comm"}
    assert checks["paired"].agrees is True  # a steady gap: slower at the median
    assert checks["no_sync_comm"].agrees is not None
    assert checks["others_wait"].agrees is True
    assert checks["others_wait"].detail.figures["source"] == "phase timers"


@pytest.mark.slow
def test_parts_never_negative_and_add_up_to_the_step() -> None:
    """Random tables, including ones whose timers disagree (a rest below zero, phases longer
    than the step): every part of every step is >= 0, the parts add up to the model step,
    shares are in [0, 1] or not measurable, and the point shares add up to 1."""
    rng = np.random.default_rng(42)
    for trial in range(40):
        ranks = int(rng.integers(1, 5))
        steps = int(rng.integers(1, 30))
        rows = []
        for step in range(steps):
            for rank in range(ranks):
                phases = {
                    name: float(rng.exponential(rng.choice([1e-5, 1e-3, 1e-1])))
                    for name in ("data", "forward", "backward", "grad_sync_wait", "optimizer")
                }
                jitter = float(rng.normal(0, 1e-3))  # the step timer may read less than phases
                rows.append(
                    {
                        "window": 0,
                        "step": step,
                        "rank": rank,
                        "step_s": sum(phases.values()) + jitter,
                        **phases,
                    }
                )
        table = pd.DataFrame(rows)
        parts = step_parts(table)
        values = parts[list(PART_NAMES)]
        assert (values >= 0).all().all(), trial
        assert np.allclose(values.sum(axis=1), parts["model_step_s"]), trial
        attribution = timers_step_split(table, None)
        assert attribution is not None
        shares = [p.share for p in attribution.parts]
        total = 0.0
        for share in shares:
            for end in (share.value, share.low, share.high):
                assert end is None or 0 <= end <= 1 + 1e-9, (trial, share)
        points = [p.seconds for p in attribution.parts]
        total = sum(p.value or 0.0 for p in points)
        # measurable parts never exceed the step; not-measurable ones are below their high end
        assert total <= (attribution.step_s.value or 0) * (1 + 1e-9), trial


def test_rows_without_every_phase_give_no_model() -> None:
    table = step_table().assign(grad_sync_wait=None)  # FSDP: backward not split
    assert timers_step_split(table, None) is None


def test_too_few_steps_for_the_test_say_so() -> None:
    """With 6 paired steps the smallest one-sided signed-rank p is 2^-6 > 0.01: even a 3 ms
    gap on every step cannot be named, and the verdict says how many steps it needs."""
    table = step_table(windows=1, steps=6, delay=(1, "backward", 3.0))
    attribution = timers_step_split(table, None)
    assert attribution is not None and attribution.straggler is not None
    assert not attribution.straggler.named
    assert "needs at least 7" in line(attribution)
    named = timers_step_split(step_table(windows=1, steps=7, delay=(1, "backward", 3.0)), None)
    assert named is not None and named.straggler is not None and named.straggler.named


def test_steps_left_out_are_counted_with_why() -> None:
    """A verdict on too few steps says how many were left out and why (a
    capture that cut one rank's steps leaves them on the other rank only)."""
    table = step_table(windows=1, steps=10, delay=(1, "backward", 3.0))
    cut = table[~((table["rank"] == 1) & (table["step"] >= 5))]
    attribution = timers_step_split(cut, None)
    assert attribution is not None and attribution.straggler is not None
    summary = line(attribution)
    assert "5 paired steps, 5 of 10 left out: not on every rank" in summary, summary
    assert "needs at least 7 (trace or measure more steps)" in summary


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("delay_ms", [0.0, 0.05, 0.15, 0.3, 3.0])
def test_the_words_match_the_rule(seed: int, delay_ms: float) -> None:
    """The default line never shows a p-value, a named rank passed the rule (its cost at
    least the minimum effect, its interval above 0), and a rank not named says the rule's own
    reason: one whose interval reaches 0 "could be noise"; one whose interval excludes 0 is
    "below the minimum effect" when its mean is, else too few steps agree."""
    from torchscale.interfaces.report.diagnosis_text import straggler_text

    table = step_table(delay=(1, "backward", delay_ms) if delay_ms else None, seed=seed)
    attribution = timers_step_split(table, None)
    assert attribution is not None and attribution.straggler is not None
    verdict = attribution.straggler
    line = straggler_text(verdict, attribution.ranks)
    assert "p =" not in line and "p=" not in line and "significant" not in line
    gap = verdict.gap_s
    assert gap is not None and gap.low is not None and verdict.min_effect_s is not None
    if verdict.named:
        assert gap.value >= verdict.min_effect_s and gap.low > 0
        assert verdict_words.why_not(verdict) is None
        return
    assert verdict_words.why_not(verdict) is not None and verdict_words.why_not(verdict) in line
    if gap.low > 0:
        below = gap.value < verdict.min_effect_s
        assert ("minimum effect" in verdict_words.why_not(verdict)) == below
        assert below or "too few steps agree" in verdict_words.why_not(verdict)
    else:
        assert "could be noise" in verdict_words.why_not(
            verdict
        ) or "no rank's own work" in verdict_words.why_not(verdict)


def test_a_rank_blocked_on_its_input_is_input() -> None:
    """3 ms more in rank 1's data phase every step (its loader is slow): input, its data phase
    the slow one."""
    table = step_table(delay=(1, "data", 3.0))
    attribution = timers_step_split(table, None)
    assert attribution is not None and attribution.straggler is not None
    verdict = attribution.straggler
    assert verdict.named and verdict.rank == 1 and verdict.phase == "data", line(attribution)
    assert verdict.kind == "input" and verdict.kind_rule is not None
    assert verdict.kind_rule.code == "straggler.rule.data_phase"
    assert "data phase" in say(verdict.kind_rule)
    assert "input (waits for its data)" in line(attribution)


def test_one_rank_exchanges_nothing_its_sync_wait_is_backward() -> None:
    """At world size 1 the time from the last gradient to backward()'s return is the autograd
    engine finishing (77 us a step on the first H100 run), not communication: compute holds
    it, and neither exposed transfer nor waiting for peers is ever more than 0."""
    table = step_table(ranks=1)
    parts = step_parts(table)
    assert (parts["exposed_transfer"] == 0).all() and (parts["wait_for_peers"] == 0).all()
    own = table[["forward", "backward", "grad_sync_wait", "optimizer"]].astype(float).sum(axis=1)
    assert np.allclose(parts["compute"], own)
    assert np.allclose(parts[list(PART_NAMES)].sum(axis=1), parts["model_step_s"])


def test_a_rank_the_paired_test_names_below_the_cost_floor_has_its_pattern() -> None:
    """At 4 ranks a rank 0.3 ms slower every step costs the others 0.24 ms (its work past the
    slowest other's), under the 0.265 ms floor, yet the paired per-step test names it: the
    named rank's line says how its cost falls ('most steps'), as every named rank's does."""
    attribution = timers_step_split(step_table(ranks=4, delay=(3, "backward", 0.3)), None)
    assert attribution is not None and attribution.straggler is not None
    verdict = attribution.straggler
    assert verdict.named and verdict.rank == 3
    assert verdict.gap_s is not None and (verdict.gap_s.value or 0) < (verdict.min_effect_s or 0)
    assert verdict.pattern is not None and verdict.pattern.shape == "most"
    words = verdict_words.pattern_words(verdict.pattern)
    assert words is not None and words.startswith("most steps")
    assert f"/step, {words}" in line(attribution)
