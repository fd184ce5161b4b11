"""The traces' communication straggler (offline/analysis/diagnosis/late_collectives.py) on synthetic
wait and own-work tables with known answers: a rank the others wait for every step, its own
work on par, is named communication even where arrival order alone names nobody (shared
cores: the others arrive last now and then too); a wait its own work explains is not; balanced
ranks name nobody."""

from __future__ import annotations

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import StragglerVerdict
from torchscale.contracts.wording import say
from torchscale.offline.analysis.diagnosis.late_collectives import late_collectives
from torchscale.offline.analysis.diagnosis.step_model import ALPHA
from torchscale.offline.analysis.trace.straggler import StragglerAnalysis
from torchscale.offline.analysis.uncertainty import paired_gap_test

STEP_S = 0.030
STEPS = 10
UNNAMED = StragglerVerdict(
    named=False,
    rank=None,
    phase=None,
    candidate_rank=None,
    gap_s=None,
    p_value=None,
    min_effect_s=0.05 * STEP_S,
    test=Finding(
        code="straggler.test", figures={"alpha": ALPHA, "min_share": 0.05, "own_work": "timers"}
    ),
)
NO_ORDER = StragglerAnalysis(
    straggler=None,
    reason=Finding(
        code="arrival.chance", figures={"rank": 3, "last": 6, "matched": 10, "p": 0.079}
    ),
    shares={0: 0.1, 1: 0.1, 2: 0.2, 3: 0.6},
)


def tables(
    *, late_ms: float, work_ms: float, ranks: int = 4, seed: int = 0, work_noise_ms: float = 2.5
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """(wait, own, step): every step the others wait `late_ms` for the last rank beyond noise
    of a few ms (shared cores), and its own work is `work_ms` above theirs with noise wide
    enough that the own-work test cannot pass."""
    rng = np.random.default_rng(seed)
    late = ranks - 1
    wait = rng.uniform(0.0, 3e-3, size=(STEPS, ranks))
    wait[:, :late] += late_ms / 1e3
    own = 0.010 + rng.normal(0.0, 0.8e-3, size=(STEPS, ranks))
    own[:, late] += work_ms / 1e3 + rng.normal(0.0, work_noise_ms / 1e3, size=STEPS)
    index = pd.Index(range(STEPS), name="step")
    return (
        pd.DataFrame(wait, index=index, columns=range(ranks)),
        pd.DataFrame(own, index=index, columns=range(ranks)),
        np.full(STEPS, STEP_S),
    )


def test_a_late_rank_is_named_where_arrival_order_alone_names_nobody() -> None:
    wait, own, step = tables(late_ms=8.0, work_ms=1.0)
    verdict = late_collectives(UNNAMED, NO_ORDER, wait, own, step)
    assert verdict.named and verdict.rank == 3 and verdict.kind == "communication"
    rule = verdict.kind_rule
    assert rule is not None and rule.code == "straggler.rule.late_collectives"
    assert rule.figures["last"] is None  # arrival order alone names nobody
    assert 0.2 < rule.figures["wait_share"] < 0.37 and rule.figures["min_share"] == 0.05
    assert abs(rule.figures["work_s"]) < 0.005  # its own work on par
    assert "arrival order alone does not single it out" in say(rule)
    assert verdict.late_s is not None and 0.006 < (verdict.late_s.value or 0.0) < 0.011


def test_a_wait_its_own_work_explains_is_not_named() -> None:
    # its work gap too noisy for the own-work test, yet as large as the others' wait
    wait, own, step = tables(late_ms=3.0, work_ms=3.0, work_noise_ms=5.0)
    gap = own[3] - own.drop(columns=[3]).median(axis=1)
    assert paired_gap_test(gap, min_effect_s=0.05 * STEP_S, alpha=ALPHA).significant is False
    assert not late_collectives(UNNAMED, NO_ORDER, wait, own, step).named
    wait, own, step = tables(late_ms=8.0, work_ms=3.0, work_noise_ms=5.0)
    assert late_collectives(UNNAMED, NO_ORDER, wait, own, step).named  # beyond it: named


def test_balanced_ranks_name_nobody() -> None:
    for seed in range(5):
        wait, own, step = tables(late_ms=0.0, work_ms=0.0, seed=seed)
        assert not late_collectives(UNNAMED, NO_ORDER, wait, own, step).named
