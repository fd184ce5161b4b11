"""The busy-machine rule (docs/telemetry.md): when other processes took enough CPU from a run's
own cores to slow its timings. One rule for the benchmark's cells (the ranks' telemetry) and the
comm sweep's launches (orchestration/comm/machine_load.py), read from the same psutil figures,
stored as a finding (code and figures; words in contracts/wording/cell_warnings.py)."""

from __future__ import annotations

from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.thresholds import BUSY_SLOWDOWN

BUSY_NOTE = "timings may be slowed or noisy"
# psutil.cpu_times() fields that are not busy time; guest time is already inside user and nice
# on Linux (as psutil.cpu_percent counts it)
IDLE_FIELDS = ("idle", "iowait")
GUEST_FIELDS = ("guest", "guest_nice")

# the verdict's codes (docs/results.md, 'Finding codes')
BUSY = "busy.contended"  # others took from the cell's cores enough to explain BUSY_SLOWDOWN
QUIET = "busy.quiet"  # below the threshold: the host's own background, or cores the cell left
UNRESOLVED = "busy.unresolved"  # one tick of the kernel's CPU accounting could cross it


def busy_cpu_seconds(times: Any) -> float:
    """Busy CPU seconds of all CPUs from a psutil.cpu_times() tuple: everything but idle and
    I/O wait (steal, time the hypervisor gave another guest, counts as busy: the rank lost it)."""
    values: dict[str, float] = times._asdict()
    total = sum(v for k, v in values.items() if k not in GUEST_FIELDS)
    return total - sum(values.get(k, 0.0) for k in IDLE_FIELDS)


def free_cores(cores: int | None, cell_cores: float) -> float | None:
    """The cores the cell leaves free: the machine's less what its ranks and their threads
    used; None where the core count was not read."""
    return max(0.0, cores - cell_cores) if cores else None


# Below a tenth of a core, others' time is the host's own background (kernel threads, the
# telemetry sampler's reads: 0.03 core beside a 2-rank cell sleeping in an injected delay,
# whose tenth of its own 0.12 core was the threshold, so that 'busy machine' said 'others
# used 0.0 cores'); every slowed run measured had others at 0.43 core or more.
BACKGROUND_CORES = 0.1


def busy_threshold(cores: int | None, cell_cores: float, ranks: int) -> float:
    """Other processes' cores that make a host busy: what the free cores hold with a core to
    spare for each rank's helper threads (gloo and NCCL progress threads, DataLoader workers
    wake at once and need one), plus BUSY_SLOWDOWN of the cell's own cores, the others' time
    that beyond the free cores comes out of the cell's. A cell that fills the machine has no
    free cores: a tenth of its cores of other work is busy, however few (unknown cores count
    as none free). Never below BACKGROUND_CORES."""
    free = free_cores(cores, cell_cores)
    spare = max(0.0, free - ranks) if free is not None else 0.0
    return max(BACKGROUND_CORES, spare + BUSY_SLOWDOWN * cell_cores)


def busy_finding(
    other_cores: float, cell_cores: float, cores: int | None, ranks: int, tick_cores: float = 0.0
) -> Finding:
    """The verdict on one host with its figures: busy when the others' cores reach
    `busy_threshold`; unresolved when they lie within `tick_cores` of it (what one tick of the
    kernel's CPU accounting reads as over the windows: a stray tick could flip it)."""
    threshold = busy_threshold(cores, cell_cores, ranks)
    free = free_cores(cores, cell_cores)
    spare = max(0.0, threshold - BUSY_SLOWDOWN * cell_cores)
    taken = max(0.0, other_cores - spare)
    figures = {
        "other_cores": round(other_cores, 3),
        "cell_cores": round(cell_cores, 3),
        "cores": cores,
        "free_cores": round(free, 3) if free is not None else None,
        "ranks": ranks,
        "threshold": round(threshold, 3),
        # the slowdown the others' time can explain, had the cell had it: a lower bound
        "slowdown": round(taken / cell_cores, 3) if cell_cores > 0 else None,
    }
    if abs(other_cores - threshold) < tick_cores:
        return Finding(code=UNRESOLVED, figures=figures | {"tick_cores": round(tick_cores, 3)})
    return Finding(code=BUSY if other_cores >= threshold else QUIET, figures=figures)


def is_busy(other_cores: float, cell_cores: float, cores: int | None, ranks: int) -> bool:
    """Whether other processes took `busy_threshold` cores or more (the finding's verdict)."""
    return busy_finding(other_cores, cell_cores, cores, ranks).code == BUSY
