"""The stragglers term: a synchronised step waits for the slowest of N ranks, and the expected
maximum of N ranks' own work grows with N.

With per-step own work X_r = mu + sigma Z_r (Z independent standard normal), the step pays
E[max_r X_r] - mu = sigma e(N), e(N) the expected maximum of N standard normals (0, 0.564,
0.846, 1.029, ... 1.766 at 16; about sqrt(2 ln N) for large N). sigma is the measured per-rank
jitter as it acts on the step: from each measured multi-rank cell, its wait for peers over
e(w) (what the jitter cost there); with one rank measured only, the step-to-step standard
deviation of its own work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from torchscale.offline.analysis.prediction.figures import Figure, combine
from torchscale.offline.analysis.prediction.inputs import MeasuredCell


@lru_cache(maxsize=256)
def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals]: the integral of x n phi(x) Phi(x)^(n-1),
    by the trapezoid rule on [-10, 10] (exact to ~1e-9 for the n a cluster has)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if n == 1:
        return 0.0
    steps, lo, hi = 20_000, -10.0, 10.0
    h = (hi - lo) / steps
    acc = 0.0
    for i in range(steps + 1):
        x = lo + i * h
        pdf = math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        cdf = 0.5 * (1 + math.erf(x / math.sqrt(2)))
        value = x * n * pdf * cdf ** (n - 1)
        acc += value * (0.5 if i in (0, steps) else 1.0)
    return acc * h


def _chi2_bounds(steps: int) -> tuple[float, float]:
    """95 % bounds on sigma / s for a sample std s over `steps` steps (chi-square)."""
    from scipy.stats import chi2

    dof = max(steps - 1, 1)
    return math.sqrt(dof / chi2.ppf(0.975, dof)), math.sqrt(dof / chi2.ppf(0.025, dof))


@dataclass(frozen=True)
class StragglerForecast:
    seconds: Figure
    how: str
    assumptions: list[str]


def forecast_stragglers(cells: Sequence[MeasuredCell], world_size: int) -> StragglerForecast | str:
    """sigma x e(world_size), or why it cannot be forecast."""
    e_n = expected_max_normal(world_size)
    multi = [c for c in cells if c.world_size > 1]
    if multi:
        weights = [1.0 / (len(multi) * expected_max_normal(c.world_size)) for c in multi]
        sigma = combine(weights, [c.wait for c in multi])
        sizes = ", ".join(str(c.world_size) for c in multi)
        how = (
            f"sigma x e({world_size}) = {sigma.value * 1e3:.3g} ms x {e_n:.3f}; sigma = wait "
            f"for peers / e(w) at w = {sizes}"
        )
        return StragglerForecast(sigma.scaled(e_n), how, [])
    reference = cells[0]
    if reference.jitter_s is None or reference.jitter_steps < 2:
        return "no per-rank jitter measured (no rank step statistics)"
    low, high = _chi2_bounds(reference.jitter_steps)
    s = reference.jitter_s
    sigma = Figure(s, s - s * low, s * high - s)
    how = (
        f"sigma x e({world_size}) = {s * 1e3:.3g} ms x {e_n:.3f}; sigma = the step-to-step "
        f"std of one rank's step over {reference.jitter_steps} steps"
    )
    assumptions = []
    if world_size > 1:
        assumptions.append(
            "stragglers from one rank's step-to-step jitter, assumed independent across "
            "ranks (no multi-rank cell measured its wait for peers); measure 2 ranks to "
            "calibrate it"
        )
    return StragglerForecast(sigma.scaled(e_n), how, assumptions)
