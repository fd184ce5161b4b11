"""The stragglers term: a synchronised step waits for the slowest of N ranks, and the expected
maximum of N ranks' own work grows with N: sigma x e(N), e(N) the expected maximum of N
standard normals, sigma a robust per-rank jitter from the faster half of the steps
(`inputs.robust_sigma`: a busy machine's stalls only slow steps, and a std counts each stall
squared). The formula and its inputs: docs/prediction.md, "The model".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchscale.contracts.finding import Finding
from torchscale.offline.analysis.prediction.figures import Figure
from torchscale.offline.analysis.prediction.inputs import MeasuredCell
from torchscale.offline.analysis.prediction.order_statistics import expected_max_normal


@dataclass(frozen=True)
class StragglerForecast:
    seconds: Figure
    how: Finding
    assumptions: list[Finding]


def forecast_stragglers(
    reference: MeasuredCell, own_work_s: float, world_size: int
) -> StragglerForecast | str:
    """sigma x e(world_size), sigma the reference's robust per-rank jitter scaled with the own
    work at the asked size (a rank slowed by sharing cores stretches its jitter too); or why
    it cannot be forecast."""
    e_n = expected_max_normal(world_size)
    if reference.jitter_s is None or reference.jitter_steps < 2:
        return "no per-rank jitter measured (no rank step statistics)"
    own = reference.own_work.value
    scale = own_work_s / own if own > 0 else 1.0
    from scipy.stats import chi2

    dof = max(reference.jitter_steps - 1, 1)  # 95 % bounds on sigma / s (chi-square)
    low, high = math.sqrt(dof / chi2.ppf(0.975, dof)), math.sqrt(dof / chi2.ppf(0.025, dof))
    s = reference.jitter_s * scale
    sigma = Figure(s, s - s * low, s * high - s)
    how = Finding(
        code="forecast.term.stragglers",
        figures={
            "world": world_size,
            "sigma_s": s,
            "e_n": e_n,
            "reference_world": reference.world_size,
            "jitter_s": reference.jitter_s,
            "scale": scale,
        },
    )
    assumptions = []
    if world_size > 1 and reference.world_size == 1:
        assumptions.append(Finding(code="forecast.one_rank_jitter"))
    return StragglerForecast(sigma.scaled(e_n), how, assumptions)
