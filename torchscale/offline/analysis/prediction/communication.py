"""The exposed-communication term: the part of the step's collectives that backward did not
hide. The model, each term and why: docs/prediction.md, "The model" (exposed communication).

With a `comm` run: alpha-beta fits of each collective (`fit_alpha_beta`) give the step's
collective time T(N), and exposed(N) = E1 + max(0, T(N) - H) (`exposed_from_comm`); without
one, a straight line through the cells' exposed transfer over f(w) (`exposed_from_cells`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.offline.analysis.nccl_bandwidth import busbw_factor, ring_steps
from torchscale.offline.analysis.prediction.figures import (
    Figure,
    combine,
    floor_at_zero,
    least_squares_weights,
)
from torchscale.offline.analysis.prediction.inputs import MeasuredCell

DEFAULT_BUCKET_BYTES = 25 * 1024 * 1024  # DDP's bucket_cap_mb default
MIN_FIT_SIZES = 4


@dataclass(frozen=True)
class AlphaBeta:
    """One collective's fit: t = alpha x steps(n) + beta x S x f(n), from `rows` sizes of run
    `run_id`; alpha is one ring step's latency."""

    op: str
    alpha_s: float  # per ring step
    beta_s_per_byte: float
    relative_error: float  # half the 95 % band of the rows around the line, relative
    rows: int
    run_id: str
    world_size: int
    nodes: int
    started_at: str = ""  # the run's start (ISO, UTC): of two runs of one size the later wins

    def seconds(
        self, size_bytes: float, world_size: int, buckets: int = 1, op: str | None = None
    ) -> float:
        """`op` (default the fitted one) of `size_bytes` over `world_size` ranks in `buckets`
        buckets: all_reduce stands in for its halves with their own steps and bus factor."""
        op = op or self.op
        latency = buckets * self.alpha_s * ring_steps(op, world_size)
        return latency + self.beta_s_per_byte * size_bytes * busbw_factor(op, world_size)


def fit_alpha_beta(run: CommResult, op: str) -> AlphaBeta | None:
    """The Theil-Sen line of the run's ok rows of `op` (time against bus bytes), robust to the
    rows a busy or idle host slowed; its error the band that holds 95 % of the rows around it
    (docs/prediction.md). None with fewer than MIN_FIT_SIZES sizes (a line through fewer passes
    through them and learns no scatter) or a world of one (nothing crosses a link)."""
    from scipy.stats import theilslopes  # the analysis' one statistics library, loaded late

    points: dict[int, float] = {}
    for row in run.rows:
        if row.op == op and row.status == "ok" and row.time_us is not None and row.time_us > 0:
            points.setdefault(row.size_bytes, row.time_us * 1e-6)  # one placement per size
    factor = busbw_factor(op, run.world_size)
    if len(points) < MIN_FIT_SIZES or factor == 0:
        return None
    xs = [size * factor for size in points]
    ys = list(points.values())
    beta = float(theilslopes(ys, xs).slope)
    if not beta > 0:
        # no bytes term above the noise over the sizes run (a CPU collective's latency
        # dominates them): the median time as a latency, nothing per byte
        beta = 0.0
    intercept = max(statistics.median(y - beta * x for x, y in zip(xs, ys, strict=True)), 0.0)
    residuals = [abs(intercept + beta * x - y) / y for x, y in zip(xs, ys, strict=True)]
    spread = 1.96 * 1.4826 * statistics.median(residuals)
    alpha = intercept / ring_steps(op, run.world_size)
    return AlphaBeta(
        op, alpha, beta, spread, len(xs), run.id, run.world_size, run.nodes, run.started_at or ""
    )


Fits = dict[str, list[AlphaBeta]]  # op -> its fits, one per world size measured


def pick_fits(runs: Sequence[CommResult], device: str, nodes: int) -> tuple[Fits, list[Finding]]:
    """The fits per op from `runs` on `device`, one per world size: runs over as many nodes
    as asked if any, else over the most nodes measured (the assumption says so)."""
    fits: Fits = {}
    assumptions: list[Finding] = []
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        candidates = [
            fit
            for run in runs
            if run.device == device and run.status == "ok"
            for fit in [fit_alpha_beta(run, op)]
            if fit is not None
        ]
        if not candidates:
            continue
        exact = [f for f in candidates if f.nodes == nodes]
        pool = exact or [f for f in candidates if f.nodes == max(c.nodes for c in candidates)]
        # the latest of a size is kept: it comes last in start order
        by_world = {f.world_size: f for f in sorted(pool, key=lambda f: f.started_at)}
        fits[op] = [by_world[w] for w in sorted(by_world)]
    measured_nodes = {f.nodes for by_op in fits.values() for f in by_op}
    if fits and nodes not in measured_nodes:
        figures = {"nodes": nodes, "measured_nodes": max(measured_nodes)}
        assumptions.append(Finding(code="forecast.comm_nodes", figures=figures))
    return fits, assumptions


def fit_at(fits: Fits, op: str, world_size: int) -> AlphaBeta | None:
    """The fit of `op` (all_reduce standing in when `op` was not run) measured at the world
    size nearest `world_size` (the larger on a tie): a run at the very size measured the
    collective the step will make, its latency included; from another size the ring's steps
    carry it over."""
    pool = fits.get(op) or fits.get("all_reduce")
    if not pool:
        return None
    return min(pool, key=lambda f: (abs(f.world_size - world_size), -f.world_size))


def collective_time(
    fits: Fits,
    strategy: str,
    world_size: int,
    gradient_bytes: int,
    parameter_bytes: int,
    bucket_bytes: int,
) -> tuple[Figure, list[dict[str, object]]] | None:
    """T(N): the step's collectives at `world_size`, with the fits' own error as its interval;
    None when a fit the strategy needs is missing (all_reduce standing in for FSDP's ops)."""
    parts: list[Figure] = []
    hows: list[dict[str, object]] = []
    # what a step sends: DDP all-reduces the gradients; FSDP all-gathers the parameters in
    # forward and again in backward, and reduce-scatters the gradients
    sends = [("all_reduce", gradient_bytes)]
    if strategy != "ddp":
        sends = [("all_gather", 2 * parameter_bytes), ("reduce_scatter", gradient_bytes)]
    for op, size in sends:
        fit = fit_at(fits, op, world_size)
        if fit is None:
            return None
        buckets = max(1, math.ceil(size / bucket_bytes))
        # all_reduce standing in for one half of itself: its steps, the same bus bytes at (n-1)/n
        seconds = fit.seconds(size, world_size, buckets, op)
        half = seconds * fit.relative_error
        parts.append(Figure(seconds, half, half))
        hows.append(
            {
                "op": op,
                "size": size,
                "buckets": buckets,
                "steps": ring_steps(op, world_size),
                "alpha_s": fit.alpha_s,
                "factor": busbw_factor(op, world_size),
                "beta": fit.beta_s_per_byte,
                "run_id": fit.run_id,
            }
        )
    return combine([1.0] * len(parts), parts), hows


@dataclass(frozen=True)
class ExposedForecast:
    seconds: Figure
    how: Finding
    assumptions: list[Finding]
    basis: list[str]


def _one_rank_cost(cells: Sequence[MeasuredCell]) -> Figure:
    """E1, the step's own overhead at one rank, at most what any multi-rank cell exposed: one
    rank runs no collective, and its fixed cost is part of theirs (a 1-rank cell stalled by
    a busy machine reads more, which is noise)."""
    one = [c for c in cells if c.world_size == 1]
    if not one:
        return Figure(0.0)
    multi = [c.exposed for c in cells if c.world_size > 1]
    lowest = min(multi, key=lambda f: f.value, default=None)
    return lowest if lowest is not None and lowest.value < one[0].exposed.value else one[0].exposed


def _overlap_cells(
    cells: Sequence[MeasuredCell], ranks_per_host: float | None
) -> list[MeasuredCell]:
    """The multi-rank cells H is read from: those at `ranks_per_host`, else the fewest."""
    multi = [c for c in cells if c.world_size > 1]
    same = [c for c in multi if c.ranks_per_node == ranks_per_host]
    if same or not multi:
        return same
    fewest = min(c.ranks_per_node for c in multi)
    return [c for c in multi if c.ranks_per_node == fewest]


def exposed_from_comm(
    cells: Sequence[MeasuredCell],
    fits: Fits,
    strategy: str,
    world_size: int,
    bucket_bytes: int,
    reference_ranks_per_host: float | None = None,
) -> ExposedForecast | None:
    """exposed(N) = exposed at one rank + max(0, T(N) - H), H measured on the multi-rank
    cells at the compute reference's ranks per host (`_overlap_cells`: a cell past the cores
    exposes its ranks' turns too, which the contention term adds); no multi-rank cell: H = 0,
    the interval down to H = min(T(N), own work), since backward can hide no more than the
    rank's own work. None without a fit, or without the model's bytes (a user's job whose
    optimizers the probe never saw): the cells' own exposed transfer is used then."""
    reference = cells[0]
    grads, params = reference.gradient_bytes, reference.parameter_bytes
    if grads == 0 and params == 0:  # no bytes counted (a user's job): nothing to size by
        return None
    target = collective_time(fits, strategy, world_size, grads, params, bucket_bytes)
    if target is None:
        return None
    t_n, collectives = target
    base = _one_rank_cost(cells)
    assumptions: list[Finding] = []
    hidden: list[Figure] = []
    used = _overlap_cells(cells, reference_ranks_per_host)
    for cell in used:
        at = collective_time(fits, strategy, cell.world_size, grads, params, bucket_bytes)
        if at is not None:
            # below 0 where the step paid more than the comm run's collective (gradient hooks,
            # bucket copies, ranks sharing cores): a cost carried to N as measured
            hidden.append(combine([1.0, -1.0, 1.0], [at[0], cell.exposed, base]))
    if hidden:
        overlap = combine([1.0 / len(hidden)] * len(hidden), hidden)
    else:
        # unmeasured: nothing hidden as the value, the interval down to all that backward can
        # cover (the own work at most); what a step pays beyond the collective is unknown
        most = min(t_n.value, reference.own_work.value)
        overlap = Figure(0.0, 0.0, most)
        if world_size > 1:
            assumptions.append(Finding(code="forecast.nothing_hidden", figures={"most_s": most}))
    exposed = combine([1.0, 1.0], [base, floor_at_zero(combine([1.0, -1.0], [t_n, overlap]))])
    if world_size == 1:
        exposed = base
    figures = {"base_s": base.value, "collectives": collectives, "overlap_s": overlap.value}
    if used:
        figures["from"] = [c.cell_id for c in used]
    how = Finding(code="forecast.term.exposed_from_comm", figures=figures)
    basis = sorted({f"comm/{f.run_id}.json" for by_op in fits.values() for f in by_op})
    return ExposedForecast(exposed, how, assumptions, basis)


def exposed_from_cells(
    cells: Sequence[MeasuredCell], strategy: str, world_size: int
) -> ExposedForecast | str:
    """No comm run: the cells' exposed transfer, a straight line over the bus factor f(w),
    read at f(N); or why it cannot be (no multi-rank cell)."""
    op = "all_reduce" if strategy == "ddp" else "all_gather"
    xs = [busbw_factor(op, c.world_size) for c in cells]
    if max(xs) == 0:
        return (
            "no collective measured: no multi-rank cell and no comm run "
            "(run `torchscale comm`, or measure 2 ranks)"
        )
    at = busbw_factor(op, world_size)
    if len(set(xs)) < 2:
        weights = [at / (x * len(xs)) for x in xs]  # through the origin: bytes alone
        how_fit = "through_zero"
    else:
        weights = least_squares_weights(xs, at)
        how_fit = "least_squares"
    capped = _one_rank_cost(cells)
    figures = [capped if c.world_size == 1 else c.exposed for c in cells]
    exposed = floor_at_zero(combine(weights, figures))
    points = [[c.world_size, x, f.value] for c, x, f in zip(cells, xs, figures, strict=True)]
    how = Finding(
        code="forecast.term.exposed_from_cells",
        figures={"fit": how_fit, "points": points, "world": world_size, "at": at},
    )
    return ExposedForecast(exposed, how, [Finding(code="forecast.no_comm_run")], [])
