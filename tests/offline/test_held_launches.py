"""A communication straggler in the phase timers (diagnosis/held_launches.py) on synthetic
step tables with known answers: a rank whose DDP comm hook holds its launch is named
communication whether the hold lies after its last gradient or inside its backward; equal
holds name nobody; a rank with more work stays compute; a table without holds is judged as
before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from torchscale.contracts.schema.diagnosis import StepSplit, StragglerVerdict
from torchscale.contracts.step_phases import COMM_HOLD, COMM_HOLD_BACKWARD
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say
from torchscale.contracts.wording.diagnosis_checks import detail as said
from torchscale.offline.analysis.diagnosis.timers import timers_step_split

PHASE_MS = {"data": 0.1, "forward": 1.0, "backward": 2.0, "optimizer": 0.5}
LAUNCH_MS = 0.3  # every rank's hook: the launch of its all-reduce
TRANSFER_MS = 1.0
REST_MS = 0.2


def held_steps(
    *,
    ranks: int = 2,
    steps: int = 15,
    windows: int = 3,
    hold: tuple[int, float, str] | None = None,
    work: tuple[int, str, float] | None = None,
    noise: float = 0.05,
    seed: int = 0,
) -> pd.DataFrame:
    """Steps of DDP ranks whose hooks each hold their launch LAUNCH_MS; `hold` = (rank, ms,
    where) holds one rank's launch longer, "sync" after its last gradient or "backward" before
    it (a held bucket delays the gradients after it: backward includes it); `work` = (rank,
    phase, ms) adds work. The all-reduce starts when the last rank launches; each rank's
    grad-sync wait runs from its own last gradient to the end of the transfer."""
    rng = np.random.default_rng(seed)
    rows = []
    for window in range(windows):
        for step in range(steps):
            phases, held, before = {}, {}, {}
            for rank in range(ranks):
                p = {n: ms / 1e3 * (1 + abs(rng.normal(0, noise))) for n, ms in PHASE_MS.items()}
                h, b = LAUNCH_MS / 1e3 * (1 + abs(rng.normal(0, noise))), 0.0
                if work is not None and rank == work[0]:
                    p[work[1]] += work[2] / 1e3
                if hold is not None and rank == hold[0]:
                    extra = hold[1] / 1e3 * (1 + abs(rng.normal(0, noise)))
                    h += extra
                    if hold[2] == "backward":
                        b = extra
                        p["backward"] += extra
                phases[rank], held[rank], before[rank] = p, h, b
            ready = {r: p["data"] + p["forward"] + p["backward"] for r, p in phases.items()}
            launch = max(ready[r] + held[r] - before[r] for r in ready)
            transfer = TRANSFER_MS / 1e3 * (1 + abs(rng.normal(0, noise)))
            for rank, p in phases.items():
                wait = launch + transfer - ready[rank]
                rows.append(
                    {
                        "window": window,
                        "step": step,
                        "rank": rank,
                        "step_s": sum(p.values()) + wait + REST_MS / 1e3,
                        "grad_sync_wait": wait,
                        COMM_HOLD: held[rank],
                        COMM_HOLD_BACKWARD: before[rank],
                        **p,
                    }
                )
    return pd.DataFrame(rows)


def judged(table: pd.DataFrame) -> tuple[StepSplit, StragglerVerdict]:
    model = timers_step_split(table, None)
    assert model is not None and model.straggler is not None
    return model, model.straggler


def held_check(model: StepSplit) -> str:
    check = next(c for c in model.cross_checks if c.check == "held_launches")
    return said(check.detail)


@pytest.mark.parametrize("where", ["sync", "backward"])
@pytest.mark.parametrize("ranks", [2, 4])
def test_a_held_launch_is_named_communication(where: str, ranks: int) -> None:
    late = ranks - 1
    model, verdict = judged(held_steps(ranks=ranks, hold=(late, 6.0, where)))
    assert verdict.named and verdict.rank == late
    assert verdict.kind == "communication"
    assert verdict.late_s is not None and verdict.late_s.value == pytest.approx(6e-3, rel=0.15)
    assert verdict.headline_gap() == verdict.late_s
    line = verdict_words.straggler_text(verdict, ranks)
    assert line.startswith(
        f"Straggler: rank {late}, communication (its collectives start late): the others wait +"
    ), line
    rule = verdict.kind_rule
    assert rule is not None and rule.code == "straggler.rule.held_launches"
    assert rule.figures["held_s"] == pytest.approx(6e-3, rel=0.15)
    assert "hook holds its collectives" in say(rule)
    # the others wait for its launch: their wait for peers, not a transfer everyone pays
    waits = {p.name: p.seconds.value for p in model.parts}
    assert (waits["wait_for_peers"] or 0.0) > 0.5 * 6e-3 * (ranks - 1) / ranks
    assert (waits["exposed_transfer"] or 0.0) < 2 * TRANSFER_MS / 1e3


def test_equal_holds_name_nobody() -> None:
    for seed in range(4):
        model, verdict = judged(held_steps(seed=seed))
        assert not verdict.named
        assert held_check(model).startswith("no rank's hook holds its launches")


def test_a_rank_with_more_work_stays_compute() -> None:
    model, verdict = judged(held_steps(work=(1, "forward", 6.0)))
    assert verdict.named and verdict.rank == 1 and verdict.kind == "compute"
    assert verdict.phase == "forward"
    assert held_check(model).startswith("no rank's hook")


def test_more_work_than_hold_is_compute_and_more_hold_than_work_is_communication() -> None:
    model, verdict = judged(held_steps(work=(1, "forward", 6.0), hold=(1, 2.0, "sync")))
    assert verdict.kind == "compute"
    assert "less than its extra work" in held_check(model)
    _, verdict = judged(held_steps(work=(1, "forward", 1.5), hold=(1, 6.0, "sync")))
    assert verdict.kind == "communication" and verdict.rank == 1


def test_a_longer_hold_outweighs_another_rank_smaller_work() -> None:
    _, verdict = judged(held_steps(ranks=4, work=(0, "forward", 1.5), hold=(3, 6.0, "sync")))
    assert verdict.named and verdict.rank == 3 and verdict.kind == "communication"
    _, verdict = judged(held_steps(ranks=4, work=(0, "forward", 9.0), hold=(3, 2.0, "sync")))
    assert verdict.rank == 0 and verdict.kind == "compute"


def test_without_holds_the_table_is_judged_as_before() -> None:
    table = held_steps(hold=(1, 6.0, "sync")).drop(columns=[COMM_HOLD, COMM_HOLD_BACKWARD])
    model, verdict = judged(table)
    assert not verdict.named  # its hook's time lies in everyone's grad-sync wait alike
    assert all(c.check != "held_launches" for c in model.cross_checks)


def test_a_hook_blocking_while_it_waits_for_a_slow_rank_names_the_slow_rank() -> None:
    """A hook that waits inside its own collective holds longest on the rank that waits for a
    slow one, by about what the slow one is behind: the tie keeps the own-work name."""
    model, verdict = judged(held_steps(work=(1, "forward", 6.0), hold=(0, 6.0, "sync")))
    assert verdict.named and verdict.rank == 1 and verdict.kind == "compute"
    assert "its hook waits for them" in held_check(model)
