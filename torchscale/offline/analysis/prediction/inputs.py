"""What one measured cell contributes to a forecast, read once from its result: the parts of
its step (the diagnosis), its throughput, its gradient and parameter bytes, its per-rank jitter
and how many cores each rank kept busy."""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchscale.contracts.cell import Status
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.offline.analysis.prediction.figures import Figure, of_estimate, total

Z95 = 1.959963984540054


@dataclass(frozen=True)
class MeasuredCell:
    """One ok cell of a forecast group, as the model reads it (seconds per step)."""

    cell_id: str
    world_size: int
    nodes: int
    own_work: Figure  # compute + data + rest: the rank's own work per step, mean over ranks
    exposed: Figure  # exposed transfer per step
    wait: Figure  # wait for peers per step
    step: Figure  # the mean step the parts add up to
    samples_per_s: Figure
    gradient_bytes: int  # the whole model's (an FSDP shard's times the ranks)
    parameter_bytes: int
    jitter_s: float | None  # per-rank std of the step (own work) over steps, RMS over ranks
    jitter_steps: int
    host_cores: int | None
    busy_cores_per_rank: float | None  # CPU seconds per window second, mean over ranks

    @property
    def ranks_per_node(self) -> float:
        return self.world_size / self.nodes


def _mean_step(result: CellResult) -> Figure | None:
    """One rank without a diagnosis: its mean step with a t-style interval over its steps."""
    stats = result.step_time
    if stats is None or stats.count < 2:
        return None
    half = Z95 * stats.std / math.sqrt(stats.count)
    return Figure(stats.mean, half, half)


def _jitter(result: CellResult) -> tuple[float | None, int]:
    """Step-to-step std of one rank's own work: its no_sync compute steps where measured (the
    gradient sync out of them), else its synchronised steps; RMS over ranks."""
    stds: list[float] = []
    counts: list[int] = []
    for rank in result.ranks:
        stats = rank.compute_time or rank.step_time
        stds.append(stats.std)
        counts.append(stats.count)
    if not stds:
        return None, 0
    return math.sqrt(sum(s * s for s in stds) / len(stds)), min(counts)


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


def _throughput(result: CellResult) -> Figure | None:
    if result.intervals is not None:
        return of_estimate(result.intervals.samples_per_s)
    if result.throughput is not None:
        return Figure(result.throughput.samples_per_s)
    return None


def _zero() -> Figure:
    return Figure(0.0)


def measured_cell(result: CellResult) -> tuple[MeasuredCell | None, str | None]:
    """The cell as a forecast input, or why it cannot be one."""
    if result.status != Status.OK:
        return None, f"status {result.status}"
    memory, throughput = result.memory, _throughput(result)
    if memory is None or throughput is None:
        return None, "no memory or throughput figures"
    diagnosis = result.diagnosis
    if diagnosis is not None:
        parts = {p.name: of_estimate(p.seconds) for p in diagnosis.parts}
        own = total([parts.get(n) or _zero() for n in ("compute", "data", "rest")])
        exposed = parts.get("exposed_transfer") or _zero()
        wait = parts.get("wait_for_peers") or _zero()
        step = of_estimate(diagnosis.step_s) or total([own, exposed, wait])
    elif result.cell.world_size == 1:
        # one rank and no step model (FSDP): its whole step is its own work
        mean = _mean_step(result)
        if mean is None:
            return None, "one rank without a step model and under 2 steps"
        own, exposed, wait, step = mean, _zero(), _zero(), mean
    else:
        return None, "no step model (diagnosis) to split the step into its parts"
    # FSDP holds a shard: the model's bytes are the shard's times the ranks
    shards = result.cell.world_size if result.cell.strategy == "fsdp" else 1
    jitter, steps = _jitter(result)
    cores, busy = _busy_cores(result)
    return (
        MeasuredCell(
            cell_id=result.cell.id,
            world_size=result.cell.world_size,
            nodes=result.cell.nodes,
            own_work=own,
            exposed=exposed,
            wait=wait,
            step=step,
            samples_per_s=throughput,
            gradient_bytes=memory.gradient_bytes * shards,
            parameter_bytes=memory.parameter_bytes * shards,
            jitter_s=jitter,
            jitter_steps=steps,
            host_cores=cores,
            busy_cores_per_rank=busy,
        ),
        None,
    )
