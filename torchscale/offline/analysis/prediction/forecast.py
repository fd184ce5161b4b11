"""A forecast of one cell from the measured cells of its group and the comm runs: the terms
(compute, contention, stragglers, exposed communication) added up, the intervals of the
measured inputs carried through, widened by the model's own error measured by back-testing
(each measured world size forecast from the others). No forecast where an input is missing and
cannot be assumed honestly: the reason instead."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.schema.forecast import Forecast, ForecastKey, ForecastTerm, TermName
from torchscale.contracts.wording import forecast as terms_words
from torchscale.offline.analysis.prediction.communication import (
    DEFAULT_BUCKET_BYTES,
    exposed_from_cells,
    exposed_from_comm,
    pick_fits,
)
from torchscale.offline.analysis.prediction.compute import forecast_compute
from torchscale.offline.analysis.prediction.figures import (
    Figure,
    floor_at_zero,
    to_estimate,
    total,
    widened,
)
from torchscale.offline.analysis.prediction.inputs import MeasuredCell, measured_cell, noisy_cells
from torchscale.offline.analysis.prediction.stragglers import forecast_stragglers

FORECAST_STRATEGIES = ("ddp", "fsdp")
METHOD = "forecast (docs/prediction.md): measured intervals in quadrature"


@dataclass(frozen=True)
class StepForecast:
    """The terms of one forecast step, before it becomes a `Forecast`."""

    terms: list[tuple[TermName, Figure, Finding]]
    assumptions: list[Finding]
    basis: list[str]

    @property
    def step(self) -> Figure:
        return total([figure for _, figure, _ in self.terms])


@dataclass
class Group:
    """The measured cells of one (model, label, batch, precision, strategy, device)."""

    strategy: str
    cells: list[MeasuredCell] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # cell id -> why


def measured_groups(
    results: Sequence[CellResult],
) -> dict[tuple[str, str, int, str, str], dict[str, Group]]:
    """(model, label, batch, precision, device) -> strategy -> its usable cells."""
    groups: dict[tuple[str, str, int, str, str], dict[str, Group]] = {}
    for result in results:
        c = result.cell
        if c.strategy not in FORECAST_STRATEGIES:
            continue
        key = (c.model, c.label, c.batch_size, c.precision, c.device)
        group = groups.setdefault(key, {}).setdefault(c.strategy, Group(c.strategy))
        cell, why = measured_cell(result)
        if cell is None:
            group.left_out[c.id] = why or "unusable"
        else:
            group.cells.append(cell)
    for by_strategy in groups.values():
        for group in by_strategy.values():
            group.cells.sort(key=lambda c: (c.world_size, c.nodes))
    return groups


def forecast_step(
    cells: Sequence[MeasuredCell],
    runs: Sequence[CommResult],
    strategy: str,
    world_size: int,
    nodes: int,
    device: str,
    bucket_bytes: int = DEFAULT_BUCKET_BYTES,
) -> StepForecast | str:
    """The terms of the step at `world_size` over `nodes` from `cells` (of one group, sorted
    by world size, all measured with the same strategy), or why there is none."""
    if not cells:
        return "no usable measured cell"
    if world_size < cells[0].world_size:
        return f"{world_size} ranks is below the smallest measured ({cells[0].world_size})"
    if world_size % nodes:
        return f"{world_size} ranks do not split evenly over {nodes} nodes"
    compute = forecast_compute(cells, world_size / nodes, device)
    own_s = compute.compute.value * compute.factor
    stragglers = forecast_stragglers(compute.reference, own_s, world_size)
    if isinstance(stragglers, str):
        return stragglers
    fits, comm_assumptions = pick_fits(runs, device, nodes)
    exposed = None
    if fits:
        ranks_per_node = compute.reference.ranks_per_node
        exposed = exposed_from_comm(cells, fits, strategy, world_size, bucket_bytes, ranks_per_node)
    if exposed is None:
        comm_assumptions = []
        from_cells = exposed_from_cells(cells, strategy, world_size)
        if isinstance(from_cells, str):
            if world_size > 1:
                return from_cells
        else:
            exposed = from_cells
    assumptions = [*compute.assumptions, *stragglers.assumptions, *comm_assumptions]
    assumptions += noisy_cells(cells)
    basis = [f"cells/{c.cell_id}.json" for c in cells]
    contention, how_contention = compute.contention, compute.how_contention
    if exposed is not None and compute.sharing > 1:
        # a CPU collective runs on the ranks' own cores: past the cores it takes turns too
        shared = exposed.seconds.scaled(compute.sharing - 1.0)
        # the time-sharing ratio's own range, as the own work's contention carries it
        spread = exposed.seconds.value * compute.sharing * compute.sharing_spread
        shared = Figure(
            shared.value, math.hypot(shared.below, spread), math.hypot(shared.above, spread)
        )
        contention = total([contention, shared])
        how_contention = how_contention.model_copy(
            update={
                "figures": how_contention.figures
                | {"shared_exposed_s": exposed.seconds.value, "sharing": compute.sharing}
            }
        )
    terms: list[tuple[TermName, Figure, Finding]] = [
        ("compute", compute.compute, compute.how_compute),
        ("contention", contention, how_contention),
        ("stragglers", stragglers.seconds, stragglers.how),
    ]
    if exposed is not None:
        terms.append(("exposed_communication", exposed.seconds, exposed.how))
        assumptions += exposed.assumptions
        basis += exposed.basis
    most = max(c.nodes for c in cells)
    if nodes > most and not any(a.code == "forecast.comm_nodes" for a in assumptions):
        figures = {"measured_nodes": most, "nodes": nodes}
        assumptions.append(Finding(code="forecast.cell_nodes", figures=figures))
    return StepForecast(terms, assumptions, basis)


@dataclass(frozen=True)
class BackTest:
    """The model forecasting each measured world size from the other cells."""

    errors: dict[int, float]  # world size -> (forecast - measured) / measured

    @property
    def worst(self) -> float | None:
        return max((abs(e) for e in self.errors.values()), default=None)


def back_test(
    cells: Sequence[MeasuredCell], runs: Sequence[CommResult], strategy: str, device: str
) -> BackTest:
    """Each cell forecast from the others (where they can forecast it): the model's error."""
    errors: dict[int, float] = {}
    for index, cell in enumerate(cells):
        others = [c for i, c in enumerate(cells) if i != index]
        if not others or cell.step.value <= 0:
            continue
        step = forecast_step(others, runs, strategy, cell.world_size, cell.nodes, device)
        if isinstance(step, str):
            continue
        errors[cell.world_size] = (step.step.value - cell.step.value) / cell.step.value
    return BackTest(errors)


# how far a forecast no back-test could check missed on this project's machine before there
# was a track record: 2-rank forecasts from one measured size, -27 % to +15 % (docs/prediction.md)
UNTESTED_MISS = 0.30


def model_error(
    tested: BackTest, cells: Sequence[MeasuredCell], missed: tuple[float, int] | None = None
) -> tuple[float | None, Finding]:
    """The relative model error the interval is widened by, and how it was measured: the
    larger of the back-test's worst error (the model on the measured sizes) and the largest
    run-to-run range of the cells' repeats (how far a later run of the same cell moves, which
    a back-test of one run cannot show); None with neither."""
    spreads = [c.repeat_range for c in cells if c.repeat_range is not None]
    spread = max(spreads) if spreads else None
    worst = tested.worst
    figures: dict[str, object] = {}
    if worst is not None:
        figures["errors"] = [[w, e] for w, e in sorted(tested.errors.items())]
    if spread is not None:
        figures["spread"] = spread
    error = max(worst or 0.0, spread or 0.0)
    if worst is None:  # nothing checks the model here: as far as such forecasts have missed
        # the worst of `scored` forecasts here, else the stated default (no "scored")
        miss, scored = missed or (UNTESTED_MISS, None)
        figures |= {"miss": miss} | ({"scored": scored} if scored else {})
        error = max(error, miss)
    return error, Finding(code="forecast.model_error", figures=figures | {"error": error})


def no_narrower_than_inputs(
    figure: Figure, cells: Sequence[MeasuredCell]
) -> tuple[Figure, Finding | None]:
    """The step widened, where needed, to the relative 95 % interval of the noisiest input
    cell's throughput: a forecast can know its figure no better than the cells it is made of
    (a ±17 % forecast from a cell whose own figure is ±92 % claimed what nobody measured)."""
    rel = [
        ((c.samples_per_s.below + c.samples_per_s.above) / 2 / c.samples_per_s.value, c)
        for c in cells
        if c.samples_per_s.value > 0
    ]
    if not rel or figure.value <= 0:
        return figure, None
    widest, cell = max(rel, key=lambda item: item[0])
    half = widest * figure.value
    if half <= (figure.below + figure.above) / 2:
        return figure, None
    floor = Figure(figure.value, max(figure.below, half), max(figure.above, half))
    figures = {"widest": widest, "cell_id": cell.cell_id}
    return floor, Finding(code="forecast.no_narrower", figures=figures)


def _samples_per_s(world: int, batch: int, step: Figure) -> Figure:
    """world x batch / step, with the step's interval turned over (a step of 0 at its lower
    end leaves the rate no upper end)."""
    samples = world * batch
    value = samples / step.value
    low = samples / step.high
    high = samples / step.low if step.low > 0 else math.inf
    return Figure(value, value - low, high - value)


def _efficiency(key: ForecastKey, step: Figure, reference: MeasuredCell) -> Figure:
    """thr(N) / (N x thr(w_ref) / w_ref), the report's definition, with both throughputs the
    same statistic: N x batch / median step, the forecast's from its step and the reference's
    from its measured median step (score.measured_step_s, the statistic a forecast is scored
    on). The cell's wall-clock throughput is a mean over the run: against a median-based rate
    it would move the efficiency by the run's stalls, not by scaling. The two relative
    intervals in quadrature."""
    rate = _samples_per_s(key.world_size, key.batch_size, step)
    base = _samples_per_s(reference.world_size, key.batch_size, reference.step)
    value = rate.value / (key.world_size * base.value / reference.world_size)
    below = math.hypot(rate.below / rate.value, base.above / base.value)
    above = math.hypot(rate.above / rate.value, base.below / base.value)
    return Figure(value, value * below, value * above)


def build_forecast(
    key: ForecastKey,
    cells: Sequence[MeasuredCell],
    runs: Sequence[CommResult],
    *,
    forecast_id: str,
    created_at: str,
    measured_strategy: str,
    missed: tuple[float, int] | None = None,
) -> Forecast | str:
    """The forecast of `key` from its group's `cells` (measured under `measured_strategy`),
    or why there is none. `missed`: how far stored forecasts have missed, and where that comes
    from, for a forecast no back-test can check."""
    derived = measured_strategy != key.strategy
    if derived and not any(r.device == key.device and r.status == "ok" for r in runs):
        return (
            f"{key.strategy} not measured and not derivable from {measured_strategy} without "
            f"a comm run (run `torchscale comm`, or benchmark {key.strategy})"
        )
    step = forecast_step(cells, runs, key.strategy, key.world_size, key.nodes, key.device)
    if isinstance(step, str):
        return step
    assumptions = list(step.assumptions)
    if derived:
        figures = {"strategy": key.strategy, "measured": measured_strategy}
        assumptions.insert(0, Finding(code="forecast.strategy_derived", figures=figures))
    unavailable: dict[str, Finding] = {}
    tested = back_test(cells, runs, measured_strategy, key.device)
    figure = floor_at_zero(step.step)
    if figure.value <= 0:  # a step of no time has no throughput: the cells contradict each other
        return terms_words.no_step(step.step.value)
    error, why = model_error(tested, cells, missed)
    if error is not None:
        figure = widened(figure, error)
        assumptions.append(why)
    else:
        unavailable["model_uncertainty"] = why
    figure, floor = no_narrower_than_inputs(figure, cells)
    if floor is not None:
        assumptions.append(floor)
    n = len(cells)
    terms = [
        ForecastTerm(name=name, seconds=to_estimate(fig, n, METHOD), how=how)
        for name, fig, how in step.terms
    ]
    dominant = max(step.terms, key=lambda t: t[1].value)[0]
    rate = _samples_per_s(key.world_size, key.batch_size, figure)
    return Forecast(
        id=forecast_id,
        created_at=created_at,
        key=key,
        basis=step.basis,
        step_s=to_estimate(figure, n, METHOD),
        samples_per_s=to_estimate(rate, n, METHOD),
        scaling_efficiency=to_estimate(_efficiency(key, figure, cells[0]), n, METHOD),
        dominant=dominant,
        terms=terms,
        assumptions=assumptions,
        unavailable=unavailable,
    )
