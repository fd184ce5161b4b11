"""What one measured cell contributes to a forecast, read once from its result, in one robust
statistic: the median synchronised step and its parts from the per-rank phase medians (a
mean step carries every stall of a busy machine: one cell measured a mean of 41 ms over a
median of 0.8 ms), a per-rank jitter from the faster half of the steps rather than the std,
the threads each rank ran and how many cores it kept busy, and the run-to-run spread of its
repeats."""

from __future__ import annotations

from dataclasses import dataclass

from torchscale.contracts.cell import Status
from torchscale.contracts.schema.cell_result import CellResult, StepTimeStats
from torchscale.offline.analysis.prediction.figures import Figure, of_estimate
from torchscale.offline.analysis.prediction.order_statistics import expected_max_normal

# A step std this many times its robust sigma is a heavy tail, not sampling noise: over 40
# steps the two estimates of one normal sample's sigma differ by ~40 % at most (95 %: the
# fastest step's spread is ~0.4 sigma, the std's ~0.1 sigma)
HEAVY_TAIL_RATIO = 2.0


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
    spread: float | None  # (max - min) / median of the repeats' throughput
    heavy_tail: str | None = None  # why its steps are far noisier than their body, if they are

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
    sigmas: list[float] = []
    counts: list[int] = []
    for rank in result.ranks:
        stats = rank.compute_time or rank.step_time
        sigmas.append(robust_sigma(stats))
        counts.append(stats.count)
    if not sigmas:
        return None, 0
    sigmas.sort()
    middle = len(sigmas) // 2
    median = sigmas[middle] if len(sigmas) % 2 else (sigmas[middle - 1] + sigmas[middle]) / 2
    return median, min(counts)


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
    own: list[float] = []
    for rank in result.ranks:
        phases = rank.phases
        if phases is None:
            continue
        parts = (phases.data, phases.forward, phases.backward, phases.optimizer)
        if phases.forward is None or phases.backward is None:
            continue
        own.append(sum(p or 0.0 for p in parts))
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


def heavy_tail(result: CellResult) -> str | None:
    """Why this cell's steps are far noisier than their body (std > 2 x the robust sigma):
    a few stalls that a mean carries and a median does not; None when they are not."""
    stats = result.step_time
    if stats is None or stats.count < 2:
        return None
    sigma = robust_sigma(stats)
    if stats.std <= HEAVY_TAIL_RATIO * sigma:
        return None
    return (
        f"{result.cell.id}: mean step {stats.mean * 1e3:.3g} ms over a median of "
        f"{stats.p50 * 1e3:.3g} ms (std {stats.std * 1e3:.3g} ms, "
        f"{stats.std / sigma if sigma > 0 else float('inf'):.3g} x its body's sigma): a few "
        "steps stalled (a busy machine?); forecast from its median; measure it again when quiet"
    )


def measured_cell(result: CellResult) -> tuple[MeasuredCell | None, str | None]:
    """The cell as a forecast input, or why it cannot be one."""
    if result.status != Status.OK:
        return None, f"status {result.status}"
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
    return (
        MeasuredCell(
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
            spread=result.throughput.spread if result.throughput is not None else None,
            heavy_tail=heavy_tail(result),
        ),
        None,
    )
