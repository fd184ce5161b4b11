"""The compute terms: a rank's own work per step at the asked world size, and on CPU what the
threads each rank gets and ranks taking turns on the host's cores add to it (contention). The
formulas and why each: docs/prediction.md, "The model". Own work comes from the measured cell
most like the target (`reference_cell`), so what ranks sharing caches and memory bandwidth cost
there is in it; a CPU collective (gloo) runs on the ranks' own cores, so past the cores its
exposed part takes turns too (forecast.py adds it). GPU ranks each have their own device: no
contention term.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from torchscale.contracts.finding import Finding
from torchscale.offline.analysis.prediction.figures import Figure
from torchscale.offline.analysis.prediction.inputs import MeasuredCell


@dataclass(frozen=True)
class ComputeForecast:
    reference: MeasuredCell  # the measured cell the own work comes from
    compute: Figure  # the reference's own work
    contention: Figure  # what fewer threads and sharing the cores add at the asked size, >= 0
    factor: float  # own work at the asked size / the reference's, >= 1
    sharing: float  # time-sharing at the asked size / at the reference, >= 1 (CPU collectives)
    how_compute: Finding
    how_contention: Finding
    assumptions: list[Finding]
    sharing_spread: float = 0.0  # half the sharing ratio's range, relative (fair to busiest)


def time_sharing_range(
    ranks_per_host: float, busy_cores: float | None, cores: int | None
) -> tuple[float, float]:
    """How many times slower the slowest rank runs when its host's ranks want more cores than
    it has, (fair, busiest core): shared out perfectly, max(1, ranks x busy cores per rank /
    cores); with each rank kept on one core for the step, the busiest core's
    ceil(ranks / cores) ranks x min(busy cores, 1). A synchronous step waits for its slowest
    rank, and the scheduler moves ranks between cores only now and then, so it lies between
    the two (equal where the ranks divide evenly over the cores). (1, 1) when either input is
    unknown."""
    if busy_cores is None or not cores:
        return 1.0, 1.0
    fair = max(1.0, ranks_per_host * busy_cores / cores)
    busiest = math.ceil(ranks_per_host / cores) * min(busy_cores, 1.0)
    return fair, max(fair, busiest)


def time_sharing_middle(
    ranks_per_host: float, busy_cores: float | None, cores: int | None
) -> tuple[float, float]:
    """(middle, half-width) of `time_sharing_range`: the forecast's value, and how far its
    interval reaches to either end."""
    fair, busiest = time_sharing_range(ranks_per_host, busy_cores, cores)
    return (fair + busiest) / 2, (busiest - fair) / 2


def launcher_threads(cores: int, ranks_per_host: float) -> int:
    """The launcher's default intra-op threads per rank: the cores shared out, at least one."""
    return max(1, cores // max(1, math.ceil(ranks_per_host)))


def threads_at(
    cells: Sequence[MeasuredCell], ranks_per_host: float, cores: int | None
) -> tuple[int | None, Finding | None]:
    """Threads per rank at the asked size, and the assumption behind it: the launcher's
    default where every measured cell ran it, else one thread count every cell shared (a
    fixed OMP_NUM_THREADS), else the default with a warning; None when nothing recorded it."""
    known = [(c.ranks_per_node, c.threads) for c in cells if c.threads]
    if not known or not cores:
        return None, None
    default = launcher_threads(cores, ranks_per_host)
    if all(t == launcher_threads(cores, k) for k, t in known):
        return default, Finding(
            code="forecast.threads.launcher_default",
            figures={
                "cores": cores,
                "ranks_per_host": math.ceil(ranks_per_host),
                "threads": default,
            },
        )
    counts = {t for _, t in known}
    if len(counts) == 1:
        (fixed,) = counts
        return fixed, Finding(code="forecast.threads.fixed", figures={"threads": fixed})
    figures = {"counts": sorted(counts), "threads": default}
    return default, Finding(code="forecast.threads.mixed", figures=figures)


def reference_cell(
    cells: Sequence[MeasuredCell], ranks_per_host: float, threads: int | None
) -> tuple[MeasuredCell, Finding | None]:
    """The measured cell most like the target: the same threads per rank where any has them,
    then the most ranks per host not above the target's (then the largest world). With none
    that few, the fewest ranks per host, and a line saying so: its own work holds the sharing
    of more ranks than the target runs, which the model does not take off."""
    below = [c for c in cells if c.ranks_per_node <= ranks_per_host]
    if below:
        same = [c for c in below if threads is not None and c.threads == threads]
        return max(same or below, key=lambda c: (c.ranks_per_node, c.world_size)), None
    fewest = min(c.ranks_per_node for c in cells)
    crowded = [c for c in cells if c.ranks_per_node == fewest]
    same = [c for c in crowded if threads is not None and c.threads == threads]
    cell = max(same or crowded, key=lambda c: c.world_size)
    figures = {"ranks_per_host": ranks_per_host, "cell_id": cell.cell_id, "fewest": fewest}
    return cell, Finding(code="forecast.few_ranks", figures=figures)


def forecast_compute(
    cells: Sequence[MeasuredCell], ranks_per_host: float, device: str
) -> ComputeForecast:
    """Own work at `ranks_per_host` ranks on each host, from the measured `cells` (one group,
    sorted by world size)."""
    cores = next((c.host_cores for c in cells if c.host_cores), None)
    threads, thread_note = (None, None)
    if device == "cpu":
        threads, thread_note = threads_at(cells, ranks_per_host, cores)
    reference, crowded_note = reference_cell(cells, ranks_per_host, threads)
    own = reference.own_work
    how_compute = Finding(
        code="forecast.term.own_work",
        figures={"world": reference.world_size, "threads": reference.threads, "own_s": own.value},
    )
    if device != "cpu":
        gpu = Finding(code="forecast.gpu_unshared")
        notes = [note for note in (crowded_note, gpu) if note]
        how = Finding(code="forecast.term.gpu_unshared")
        return ComputeForecast(reference, own, Figure(0.0), 1.0, 1.0, how_compute, how, notes)
    assumptions = [note for note in (crowded_note, thread_note) if note]
    busy = reference.busy_cores_per_rank
    if busy is None and cores is not None and reference.threads:
        # every model is held to the cores alike: a rank without the record wants its threads
        busy = float(reference.threads)
        figures: dict[str, object] = {"threads": reference.threads}
        assumptions.append(Finding(code="forecast.cores_unrecorded.as_threads", figures=figures))
    elif busy is None or cores is None:
        assumptions.append(Finding(code="forecast.cores_unrecorded"))
    if ranks_per_host > reference.ranks_per_node:
        figures = {"ranks_per_node": reference.ranks_per_node}
        assumptions.append(Finding(code="forecast.shared_caches", figures=figures))
    # own work at the target = the reference's x thread factor x shared / shared_ref: the thread
    # factor's high end u / d (its low end 1), each time-sharing the middle of its range +- half
    thread, shared, half, shared_ref, half_ref = 1.0, 1.0, 0.0, 1.0, 0.0
    demand: float | None = None  # cores a rank wants at the target
    if busy is not None and cores:
        demand = busy
        if threads is not None and reference.threads is not None and threads < reference.threads:
            demand = min(busy, threads)
        thread = busy / demand if demand > 0 else 1.0
        shared, half = time_sharing_middle(ranks_per_host, demand, cores)
        shared_ref, half_ref = time_sharing_middle(reference.ranks_per_node, busy, cores)
    measured_past = any(
        c.threads is not None and c.ranks_per_node * c.threads > (cores or 0) for c in cells
    )
    if shared > 1 and not measured_past and demand is not None:
        figures = {"ranks_per_host": ranks_per_host, "demand": demand, "cores": cores}
        figures |= {"shared": shared, "half": half}
        assumptions.append(Finding(code="forecast.past_the_cores", figures=figures))
    # the cores a rank kept busy count OpenMP's spin-waits too, so with fewer threads its
    # work slows by between 1 (no useful parallelism) and u / d (all of it useful): the middle,
    # with both ends in the interval
    if thread > 1:
        figures = {"threads": threads, "reference_threads": reference.threads, "thread": thread}
        assumptions.append(Finding(code="forecast.fewer_threads", figures=figures))
    middle = (1.0 + thread) / 2
    sharing = max(1.0, shared / shared_ref)
    # the reference is no more ranks per host than the target: sharing only adds
    factor = max(1.0, middle * sharing)
    # the ranges' half-widths, independent, in the interval: the thread factor's, and the
    # time-sharing ratio's from both its ends (the target's and a reference past the cores)
    thread_spread = own.value * (thread - 1.0) / 2 * sharing
    relative = math.hypot(half / shared, half_ref / shared_ref)
    sharing_relative = relative if sharing > 1 else 0.0
    spread = math.hypot(thread_spread, own.value * middle * sharing * sharing_relative)
    base = own.scaled(factor - 1.0)
    contention = Figure(base.value, math.hypot(base.below, spread), math.hypot(base.above, spread))
    how = Finding(
        code="forecast.term.contention",
        figures={
            "own_s": own.value,
            "middle": middle,
            "busy": busy,
            "reference_threads": reference.threads,
            "demand": demand,
            "threads": threads,
            "shared": shared,
            "ranks_per_host": ranks_per_host,
            "cores": cores,
            "shared_ref": shared_ref,
            "factor": factor,
        },
    )
    return ComputeForecast(
        reference, own, contention, factor, sharing, how_compute, how, assumptions, sharing_relative
    )
