"""The busy-machine rule (docs/telemetry.md): when other processes took enough CPU to slow a
run's timings. One rule for the benchmark's cells (the ranks' telemetry) and the comm sweep's
launches (orchestration/comm/machine_load.py), read from the same psutil figures."""

from __future__ import annotations

from typing import Any

from torchscale.contracts.thresholds import OTHER_CORES_PER_RANK

BUSY_NOTE = "timings may be slowed or noisy"
# psutil.cpu_times() fields that are not busy time; guest time is already inside user and nice
# on Linux (as psutil.cpu_percent counts it)
IDLE_FIELDS = ("idle", "iowait")
GUEST_FIELDS = ("guest", "guest_nice")


def busy_cpu_seconds(times: Any) -> float:
    """Busy CPU seconds of all CPUs from a psutil.cpu_times() tuple: everything but idle and
    I/O wait (steal, time the hypervisor gave another guest, counts as busy: the rank lost it)."""
    values: dict[str, float] = times._asdict()
    total = sum(v for k, v in values.items() if k not in GUEST_FIELDS)
    return total - sum(values.get(k, 0.0) for k in IDLE_FIELDS)


def busy_threshold(cores: int | None, ranks: int) -> float:
    """Other processes' cores that make a host busy: OTHER_CORES_PER_RANK of each core the
    cell's ranks can have. Ranks that outnumber the cores already share them all, so other
    work that takes a share of the host's cores takes that share of every rank's time: 4 ranks
    on 2 cores lose a quarter when others take half a core, not a whole one."""
    return OTHER_CORES_PER_RANK * (min(ranks, cores) if cores else ranks)


def is_busy(other_cores: float, busy_cores: float, cores: int | None, ranks: int) -> bool:
    """Other processes used at least `busy_threshold` cores (a quarter core per rank, or a
    quarter of the host's cores when the ranks outnumber them), and the host had fewer idle
    cores than the cell has ranks there (so they were not merely using cores the cell left
    free)."""
    idle = cores - busy_cores if cores else None
    return other_cores >= busy_threshold(cores, ranks) and (idle is None or idle < ranks)
