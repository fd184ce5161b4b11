"""What a rank costs the others (diagnosis/cost.py): the quantity a straggler is named by,
and the words for how it falls over the steps. Tables as a user's runs make them: a stall
every k-th step on one rank, a steadily slower rank, a few sporadic stalls, balanced ranks."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from torchscale.contracts.wording import diagnosis_straggler
from torchscale.offline.analysis.diagnosis.cost import (
    cost_test,
    excess_costs,
    step_delays,
    step_pattern,
)
from torchscale.offline.analysis.diagnosis.step_model import ALPHA, MIN_EFFECT_SHARE
from torchscale.offline.analysis.diagnosis.verdict import steady_or_costly
from torchscale.offline.analysis.uncertainty import paired_gap_test

STEP_S = 0.037
NOISE_S = 0.002


def own_work(
    steps: int, ranks: int, extra: dict[int, Callable[[int], float]], seed: int = 0
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    table = pd.DataFrame(STEP_S + rng.normal(0, NOISE_S, (steps, ranks)), columns=range(ranks))
    for rank, seconds in extra.items():
        table[rank] += [seconds(step) for step in range(steps)]
    return table


def pattern_words(
    costs: np.ndarray | pd.Series,
    min_effect_s: float,
    windows: np.ndarray | None = None,
    steps: np.ndarray | None = None,
) -> str | None:
    """How the cost falls over the steps, as every surface words it (`step_pattern`)."""
    return diagnosis_straggler.pattern_words(step_pattern(costs, min_effect_s, windows, steps))


def judged(table: pd.DataFrame) -> tuple[int, bool, str | None]:
    costs = excess_costs(table)
    rank = int(costs.mean().idxmax())
    min_effect = MIN_EFFECT_SHARE * float(table.to_numpy().mean())
    cost = cost_test(costs[rank], min_effect_s=min_effect, alpha=ALPHA, candidates=table.shape[1])
    others = table.drop(columns=[rank]).median(axis=1)
    paired = paired_gap_test(table[rank] - others, min_effect_s=min_effect, alpha=ALPHA)
    test = steady_or_costly(cost, paired)  # the rule straggler_verdict applies
    return rank, test.significant, pattern_words(costs[rank], min_effect)


def test_a_rank_costs_what_its_work_runs_past_the_slowest_other() -> None:
    table = pd.DataFrame({0: [1.0, 2.0, 3.0], 1: [2.0, 1.0, 3.0], 2: [1.5, 1.5, 1.0]})
    delays = step_delays(table)
    assert delays[0].tolist() == [0.0, 0.5, 0.0]  # last only at step 1, by 0.5 over rank 2
    assert delays[1].tolist() == [0.5, 0.0, 0.0]  # a tie for last costs nobody anything
    assert delays[2].tolist() == [0.0, 0.0, 0.0]
    two = excess_costs(table[[0, 1]])
    assert two[1].tolist() == pytest.approx((table[1] - table[0]).tolist())


@pytest.mark.parametrize("every", [2, 3, 4, 6, 8])
def test_a_periodic_stall_is_named_and_said_as_periodic(every: int) -> None:
    """A 60 ms stall every k-th step (a GC pause, a checkpoint write): at the median step the
    rank is on par, yet it costs the others 60/k ms a step."""
    table = own_work(48, 2, {1: lambda step: 0.06 if step % every == every - 1 else 0.0})
    rank, named, words = judged(table)
    assert (rank, named) == (1, True)
    assert words is not None and words.startswith(f"every {every}") and "+6" in words
    # stored as a record: its shape, its period and the typical cost of the steps carrying it
    costs = excess_costs(table)[1]
    pattern = step_pattern(costs, MIN_EFFECT_SHARE * float(table.to_numpy().mean()))
    assert pattern is not None and (pattern.shape, pattern.period) == ("periodic", every)
    assert pattern.typical_s == pytest.approx(0.06, abs=0.01)


def test_a_steady_gap_is_said_as_most_or_all_steps() -> None:
    rank, named, words = judged(own_work(40, 2, {1: lambda step: 0.0074}))
    assert (rank, named) == (1, True)
    assert words is not None and (words == "every step" or words.startswith("most"))


def test_a_small_gap_among_four_ranks_costs_what_it_delays() -> None:
    """A 20 % slower rank of 4 is named by what it costs (its work past the slowest other)."""
    rank, named, words = judged(own_work(40, 4, {2: lambda step: 0.0074}))
    assert (rank, named) == (2, True)
    assert words is not None


def test_sporadic_stalls_are_said_as_a_count() -> None:
    """Three stalls in 40 steps are said as '3 of 40 steps' (named or not: three events are
    at the edge of what 40 steps can tell), and never pinned on another rank."""
    table = own_work(40, 2, {1: lambda step: 0.05 if step in (3, 17, 30) else 0.0})
    rank, _, words = judged(table)
    assert rank == 1
    assert words is not None and words.startswith("3 of 40 steps")


@pytest.mark.slow  # over 2 s on 2 cores
def test_balanced_ranks_name_nobody() -> None:
    """Held to the rate the issue asks (>= 95 % of balanced runs name nobody) over seeds the
    rule was not tuned on."""
    runs = [
        judged(own_work(steps, ranks, {}, seed=seed))
        for seed in range(100, 160)
        for steps, ranks in ((12, 2), (40, 2), (40, 4))
    ]
    named = sum(1 for _, was_named, _ in runs if was_named)
    assert named <= 0.05 * len(runs), f"{named} of {len(runs)} balanced runs named a rank"


def test_no_pattern_for_a_rank_that_costs_nothing() -> None:
    assert pattern_words(np.array([-0.001, -0.002, -0.001]), 0.001) is None


def test_a_period_is_found_in_windows_whose_phase_shifts() -> None:
    """A benchmark cell's step count restarts in each window and the edge and no_sync steps
    between windows shift a user's every-4th-step stall: each window is folded on its own."""
    rng = np.random.default_rng(7)
    costs, windows = [], []
    for window, shift in enumerate((0, 2, 1)):
        for step in range(16):
            stall = 0.06 if (step + shift) % 4 == 3 else 0.0
            costs.append(stall + rng.normal(0, NOISE_S))
            windows.append(window)
    folded = pattern_words(np.array(costs), 0.00185, np.array(windows))
    assert folded is not None and folded.startswith("every 4th step"), folded
    glued = pattern_words(np.array(costs), 0.00185)
    assert glued is not None and not glued.startswith("every 4th"), glued


def test_a_step_left_out_mid_trace_shifts_no_phase() -> None:
    """A profile's traced step cut from the middle (missing on one rank) left a stall every
    2nd step read as '12 of 23 steps' when folded by position: folded by step number, the
    period holds."""
    rng = np.random.default_rng(3)
    numbers = np.array([n for n in range(24) if n != 11])
    costs = np.array([(0.03 if n % 2 else 0.0) + rng.normal(0, NOISE_S) for n in numbers])
    by_number = pattern_words(costs, 0.002, steps=numbers)
    assert by_number is not None and by_number.startswith("every 2nd step"), by_number
    by_position = pattern_words(costs, 0.002)
    assert by_position is not None and not by_position.startswith("every 2nd"), by_position


def test_a_stall_every_4th_step_is_not_said_every_2nd_when_steps_are_missing() -> None:
    """A real 2-rank profile at load 12 (tests.straggler_plugins:periodic, 40 ms every 4th
    step): the trace lost steps 10, 18, 21 and 22, so 6 of the 8 even steps left carry the
    stall and 'every 2nd' passed (75 % of its repeats): every 4th carries it in 6 of 6."""
    ms = [4.7, 42.6, 0.3, 0.0, 0.1, 42.3, -0.1, 0.0, 44.8, -0.4]
    ms += [0.3, 0.0, 40.2, -0.8, 0.5, 40.8, -2.6, 41.1, 0.3]
    numbers = np.array([3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 19, 20, 23, 24, 25])
    words = pattern_words(np.array(ms) / 1e3, 0.00116, np.zeros(len(ms)), numbers)
    assert words is not None and words.startswith("every 4th step"), words
    # a true every-2nd stall is still every 2nd: its multiples' other beat holds the stall
    rng = np.random.default_rng(5)
    every2 = np.array([(0.04 if n % 2 else 0.0) + rng.normal(0, NOISE_S) for n in range(24)])
    assert (pattern_words(every2, 0.00116) or "").startswith("every 2nd step")


def test_one_held_step_on_another_beat_hides_no_period() -> None:
    """The same plugin's 48 traced steps at load 4 (CI beside a second test run): step 42, a
    2nd beat of the period, was held 131 ms by the host, which lifted that beat's mean over a
    quarter of the stall's and left 'every 2nd step' (13 of its 17 repeats) the only period
    that passed; by each other beat's median, every 4th carries it in 12 of 12."""
    numbers = np.array([3, 4, 5, 6, 7, 8, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 24, 25, 26])
    numbers = np.append(numbers, [27, 28, 29, 31, 32, 33, 36, 37, 40, 41, 42, 43, 44, 45])
    numbers = np.append(numbers, [47, 48, 49, 50])
    held = {4: 44.9, 8: 50.0, 12: 37.9, 16: 82.0, 20: 41.5, 24: 53.7, 28: 38.2, 32: 51.8}
    held |= {36: 48.0, 40: 45.3, 42: 130.8, 44: 35.3, 48: 40.3, 6: 4.7, 18: 3.4, 50: 3.2}
    ms = np.array([held.get(int(n), 0.5) for n in numbers])
    words = pattern_words(ms / 1e3, 0.0016, np.zeros(len(ms)), numbers)
    assert words is not None and words.startswith("every 4th step"), words
    # a beat that carries it on 4 of its 10 repeats is no quiet beat: 11 stalls in 20 steps,
    # 7 of them odd, are not 'every 2nd step'
    sporadic = np.array(
        [0.1 if n in {1, 3, 5, 7, 9, 11, 13, 2, 8, 12, 16} else 0.0 for n in range(20)]
    )
    said = pattern_words(sporadic, 0.002)
    assert said is not None and not said.startswith("every"), said


def test_the_default_trace_holds_three_blocks_of_the_longest_period() -> None:
    """A profile traces enough steps by default for the rule to see the longest period it
    names: three whole blocks of LONGEST_PERIOD (10 traced steps cut a stall every 4th step
    into blocks of 3)."""
    from torchscale.contracts.thresholds import TRACED_STEPS
    from torchscale.offline.analysis.diagnosis.cost import LONGEST_PERIOD, cost_block

    assert TRACED_STEPS >= 3 * LONGEST_PERIOD
    assert cost_block(TRACED_STEPS) == LONGEST_PERIOD


def test_a_steady_extra_scattered_by_noise_is_not_said_as_a_few_steps() -> None:
    """A held-out rank 25 % slower in every step read '7 of 48 steps +12 ms' beside a noisy
    other rank: those steps carried under half its cost, so it is no sporadic stall."""
    rng = np.random.default_rng(11)
    costs = np.clip(0.004 + rng.normal(0, 0.006, 48), 0, None)
    words = pattern_words(costs, 0.002)
    assert words is not None and not words[0].isdigit(), words
    # spread thin over about half the steps, the costliest carrying under 70 %, some steps
    # costing less than nothing: no count, and no figure (its median step costs nothing)
    base = [0.004, 0.0035, 0.0015, 0.0015, 0.0015, -0.003, -0.003, 0.0, 0.0]
    thin = np.random.default_rng(0).permutation(np.repeat(base, 6))
    assert pattern_words(thin, 0.001) == "uneven over the steps"
    sporadic = np.zeros(48)
    sporadic[[5, 20, 33]] = 0.05
    assert pattern_words(sporadic + np.abs(rng.normal(0, 0.0005, 48)), 0.002).startswith("3 of 48")
