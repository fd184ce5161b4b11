"""What one measured cell contributes to a forecast, read once from its result, in one robust
statistic: the median synchronised step and its parts from the per-rank phase medians (a
mean step carries every stall of a busy machine), a per-rank jitter from the faster half of
the steps rather than the std, the threads each rank ran and how many cores it kept busy, and
the run-to-run spread of its repeats."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult, StepTimeStats
from torchscale.offline.analysis.prediction.figures import Figure, of_estimate
from torchscale.offline.analysis.prediction.order_statistics import expected_max_normal

# A cell whose step CV is this many times its siblings' (the same model and batch at other
# world sizes) was disturbed: over 40 steps a CV is known to ~25 % (95 %), so three times is
# not sampling noise, and the same work at another size is not that much noisier by itself
NOISY_RATIO = 3.0
# With no sibling to compare: a step std above the mean, which a time whose body is normal
# cannot have (it would put a sixth of the steps below 0); only stalls make it
NOISY_ALONE_CV = 1.0


@dataclass(frozen=True)
class MeasuredCell:
    """One ok cell of a forecast group, as the model reads it (seconds per step, medians)."""

    cell_id: str
    world_size: int
    nodes: int
    step: Figure  # T: the median synchronised step (the scored statistic)
    own_work: Figure  # the rank's own work: its phase medians but the sync wait, mean over ranks
    wait: Figure  # stragglers at this size: sigma x e(world_size)
    exposed: Figure  # the rest of T: T - own work - wait, at least 0
    samples_per_s: Figure
    gradient_bytes: int  # the whole model's (an FSDP shard's times the ranks)
    parameter_bytes: int
    jitter_s: float | None  # robust per-rank sigma of own work, (p50 - min) / e(n), over ranks
    jitter_steps: int
    host_cores: int | None
    busy_cores_per_rank: float | None  # CPU seconds per window second, mean over ranks
    threads: int | None  # intra-op threads per rank (torch.get_num_threads() of rank 0)
    # how far a later run of the cell can move: the whole range of its repeats' throughput,
    # (max - min) / median, not the reliability rule's distance either side of the median
    # (stats.spread_from_median, half of it at two repeats): a forecast's error must hold a run
    # at either end
    repeat_range: float | None
    mean_step_s: float | None = None  # the pooled mean step: only to say how noisy a cell was
    step_cv: float | None = None  # the pooled steps' std / mean

    @property
    def ranks_per_node(self) -> float:
        return self.world_size / self.nodes


def robust_sigma(stats: StepTimeStats) -> float:
    """sigma of a distribution's body from its faster half: (p50 - min) / e(n), e(n) the
    expected maximum of n standard normals (the fastest of n steps lies e(n) sigmas below
    the middle). A busy machine only ever makes a step slower, so stalls, however many, leave
    the faster half alone, where a std counts each stall squared and a p95 is one once 5 %
    of steps stall."""
    if stats.count < 2:
        return 0.0
    return max(stats.p50 - stats.min, 0.0) / expected_max_normal(stats.count)


def _jitter(result: CellResult) -> tuple[float | None, int]:
    """Robust step-to-step sigma of one rank's own work: its no_sync compute steps where
    measured (the gradient sync out of them), else its synchronised steps; median over ranks."""
    stats = [rank.compute_time or rank.step_time for rank in result.ranks]
    if not stats:
        return None, 0
    return statistics.median([robust_sigma(s) for s in stats]), min(s.count for s in stats)


def _median_step(result: CellResult) -> Figure | None:
    """T with its interval: the bootstrap of the median where the cell has one, else the pooled
    step-time median with none."""
    if result.intervals is not None:
        figure = of_estimate(result.intervals.step_p50_s)
        if figure is not None and figure.value > 0:
            return figure
    stats = result.step_time
    if stats is None or stats.count < 2 or stats.p50 <= 0:
        return None
    return Figure(stats.p50)


def _own_work(result: CellResult, step: Figure) -> Figure | None:
    """The rank's own work per step in medians: data + forward + backward + optimizer phase
    medians (the gradient-sync wait left out), mean over ranks; the step's relative interval.
    Without phase timers: the step times the diagnosis' own-work share (compute + data +
    rest), which a mean-based split gives."""
    own = [
        sum(p or 0.0 for p in (ph.data, ph.forward, ph.backward, ph.optimizer))
        for ph in (rank.phases for rank in result.ranks)
        if ph is not None and ph.forward is not None and ph.backward is not None
    ]
    if own:
        value = min(sum(own) / len(own), step.value)
    else:
        diagnosis = result.diagnosis
        if diagnosis is None:
            return step if result.cell.world_size == 1 else None
        shares = [diagnosis.part(n) for n in ("compute", "data", "rest")]
        share = sum(p.share.value or 0.0 for p in shares if p is not None)
        value = step.value * min(share, 1.0)
    ratio = value / step.value
    return Figure(value, step.below * ratio, step.above * ratio)


def _busy_cores(result: CellResult) -> tuple[int | None, float | None]:
    telemetry = result.telemetry
    if telemetry is None:
        return None, None
    cores: int | None = None
    busy: list[float] = []
    for rank in telemetry.ranks:
        load = rank.load
        if load is None:
            continue
        cores = load.cores or cores
        if load.own_cpu_s is not None and load.window_s > 0:
            busy.append(load.own_cpu_s / load.window_s)
    return cores, (sum(busy) / len(busy) if busy else None)


def _threads(result: CellResult) -> int | None:
    """Intra-op threads per rank: what rank 0's torch reported, else the launcher's
    OMP_NUM_THREADS."""
    for value in (result.environment.get("torch_threads"), result.launch.get("omp_num_threads")):
        if isinstance(value, int) and value > 0:
            return value
    return None


def noisy_cells(cells: Sequence[MeasuredCell]) -> list[Finding]:
    """A line for each cell whose steps are far noisier than its siblings' (CV above 3 x
    their median CV; alone, a CV above 1): a few stalls that a mean carries and a median does
    not. Named in the forecast's assumptions: its median still feeds the forecast."""
    lines = []
    for cell in cells:
        if cell.step_cv is None or cell.mean_step_s is None:
            continue
        others = [c.step_cv for c in cells if c is not cell and c.step_cv is not None]
        if others:
            usual = statistics.median(others)
            if cell.step_cv <= NOISY_RATIO * usual:
                continue
            than = {"ratio": NOISY_RATIO, "usual": usual}
        else:
            if cell.step_cv <= NOISY_ALONE_CV:
                continue
            than = {}
        figures = {"cell_id": cell.cell_id, "cv": cell.step_cv, **than}
        figures |= {"mean_s": cell.mean_step_s, "median_s": cell.step.value}
        lines.append(Finding(code="forecast.noisy_cell", figures=figures))
    return lines


def measured_cell(result: CellResult) -> tuple[MeasuredCell | None, str | None]:
    """The cell as a forecast input, or why it cannot be one."""
    if result.status != Status.OK:
        return None, f"status {result.status}"
    if result.cell.shares_gpu:  # its ranks queued on one GPU and talked through host memory
        return None, f"its ranks shared a GPU ({result.cell.ranks_per_gpu} per GPU)"
    memory = result.memory
    throughput = (
        of_estimate(result.intervals.samples_per_s) if result.intervals is not None else None
    )
    if throughput is None and result.throughput is not None:
        throughput = Figure(result.throughput.samples_per_s)
    if memory is None or throughput is None:
        return None, "no memory or throughput figures"
    if result.cell.world_size > 1 and result.diagnosis is None:
        # FSDP's phases hold its all-gathers: without a step model its own work is not apart
        return None, "no step model (diagnosis) to split the step into its parts"
    step = _median_step(result)
    if step is None:
        return None, "under 2 steps measured"
    own = _own_work(result, step)
    if own is None:
        return None, "no phase timers or step model to split the step into its parts"
    jitter, steps = _jitter(result)
    world = result.cell.world_size
    wait_s = (jitter or 0.0) * expected_max_normal(world)
    wait = Figure(min(wait_s, step.value - own.value))
    exposed = Figure(max(step.value - own.value - wait.value, 0.0))
    diagnosis = result.diagnosis
    measured_exposed = diagnosis.part("exposed_transfer") if diagnosis is not None else None
    if measured_exposed is not None:  # its measured interval, around the robust value
        spread = of_estimate(measured_exposed.seconds)
        if spread is not None:
            exposed = Figure(exposed.value, min(spread.below, exposed.value), spread.above)
    # FSDP holds a shard: the model's bytes are the shard's times the ranks
    shards = world if result.cell.strategy == "fsdp" else 1
    cores, busy = _busy_cores(result)
    cell = MeasuredCell(
        cell_id=result.cell.id,
        world_size=world,
        nodes=result.cell.nodes,
        step=step,
        own_work=own,
        wait=wait,
        exposed=exposed,
        samples_per_s=throughput,
        gradient_bytes=memory.gradient_bytes * shards,
        parameter_bytes=memory.parameter_bytes * shards,
        jitter_s=jitter,
        jitter_steps=steps,
        host_cores=cores,
        busy_cores_per_rank=busy,
        threads=_threads(result),
        repeat_range=_repeat_range(result),
        mean_step_s=result.step_time.mean if result.step_time is not None else None,
        step_cv=result.step_time.cv if result.step_time is not None else None,
    )
    return cell, None


def _repeat_range(result: CellResult) -> float | None:
    repeats = result.throughput.repeats if result.throughput is not None else []
    middle = statistics.median(repeats) if len(repeats) >= 2 else 0.0
    return (max(repeats) - min(repeats)) / middle if middle > 0 else None
