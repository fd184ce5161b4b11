"""The compute terms: a rank's own work per step at the asked world size, and on CPU the
slowdown of ranks that share a host's cores (contention).

Own work (compute + data + rest of the step model) is measured at the same per-device batch,
so it is the forecast's base. On CPU, ranks on one host slow each other down: the measured own
work of each world size, divided by its time-sharing factor, is fitted by a straight line over
the ranks per host (the measured contention); past the host's cores, ranks take turns, and
the time-sharing factor max(1, ranks x busy cores per rank / cores) multiplies it. GPU ranks
each have their own device: no contention term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchscale.offline.analysis.prediction.figures import Figure, combine, least_squares_weights
from torchscale.offline.analysis.prediction.inputs import MeasuredCell


@dataclass(frozen=True)
class ComputeForecast:
    compute: Figure  # own work at the reference (smallest measured) world size
    contention: Figure  # what sharing the host's cores adds at the asked size
    how_compute: str
    how_contention: str
    assumptions: list[str]


def time_sharing(ranks_per_host: float, busy_cores: float | None, cores: int | None) -> float:
    """How many times slower each rank runs when its host's ranks want more cores than it
    has: max(1, ranks x busy cores per rank / cores); 1 when either is unknown."""
    if busy_cores is None or not cores:
        return 1.0
    return max(1.0, ranks_per_host * busy_cores / cores)


def _demand(cells: Sequence[MeasuredCell]) -> tuple[float | None, int | None]:
    """Cores one rank keeps busy (the most of any measured cell: the least constrained) and
    the host's cores."""
    busy = [c.busy_cores_per_rank for c in cells if c.busy_cores_per_rank is not None]
    cores = next((c.host_cores for c in cells if c.host_cores), None)
    return (max(busy) if busy else None), cores


def forecast_compute(
    cells: Sequence[MeasuredCell], ranks_per_host: float, device: str
) -> ComputeForecast:
    """Own work at `ranks_per_host` ranks on each host, from the measured `cells` (one group,
    sorted by world size)."""
    reference = cells[0]
    how_compute = (
        f"own work (compute + data + rest) measured at {reference.world_size} rank(s): "
        f"{reference.own_work.value * 1e3:.4g} ms"
    )
    if device != "cpu":
        return ComputeForecast(
            reference.own_work,
            Figure(0.0),
            how_compute,
            "GPU: one device per rank, nothing shared",
            ["GPU ranks share no compute: host CPU and PCIe contention not modelled"],
        )
    busy, cores = _demand(cells)
    assumptions: list[str] = []
    if busy is None or cores is None:
        assumptions.append(
            "CPU cores per rank not recorded (telemetry off): no time-sharing past the "
            "host's cores; run with measurement.telemetry.enabled to record them"
        )
    # own work without time-sharing, then a straight line over ranks per host
    shares = [time_sharing(c.ranks_per_node, busy, cores) for c in cells]
    xs = [c.ranks_per_node for c in cells]
    full = cores / busy if busy and cores else float("inf")
    at = min(ranks_per_host, max(full, 1.0))
    if len(set(xs)) < 2:
        weights = [1.0 / len(cells)] * len(cells)
        if ranks_per_host != xs[0]:
            assumptions.append(
                f"one host load measured ({xs[0]:g} rank(s) per host): ranks assumed not to "
                "slow each other below the host's cores; measure a second world size to "
                "learn it"
            )
    else:
        weights = least_squares_weights(xs, at)
    sharing = time_sharing(ranks_per_host, busy, cores)
    own_weights = [w / s * sharing for w, s in zip(weights, shares, strict=True)]
    # the reference is one of the inputs: its own work is taken out of its weight, not
    # subtracted as an independent figure (which would double its noise)
    extra = [w - (1.0 if i == 0 else 0.0) for i, w in enumerate(own_weights)]
    contention = combine(extra, [c.own_work for c in cells])
    how = (
        f"own work fitted over ranks per host {sorted(set(xs))} at {at:.3g}, x time-sharing "
        f"max(1, {ranks_per_host:g} x {busy if busy is not None else 0:.2f} busy cores / "
        f"{cores or '?'} cores) = {sharing:.2f}, minus the reference's"
    )
    return ComputeForecast(reference.own_work, contention, how_compute, how, assumptions)
