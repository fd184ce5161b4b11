"""CPU ranks bound to cores of their own, before they start a thread.

Unbound, the scheduler moves a rank's thread between cores or lets two ranks share one, and the
straggler test sees a slower rank in a balanced run (7 of 113 quiet runs unbound, 0 of 72
pinned): docs/methodology.md, "Inside every rank", step 0.

The rank splits the cores it may run on (its affinity: taskset, cgroup cpusets and Slurm's
binding respected) into `local_world_size` equal, contiguous, disjoint sets and takes set
`local_rank`; its threads (intra-op, gloo, the telemetry sampler) inherit it. With fewer
cores than ranks no set is its own: nothing is bound, and the result says why. GPU ranks
are not bound here (which cores suit a GPU is a NUMA question: docs/limits.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from torchscale.contracts.cpu_binding import BIND_TO_CORES, CPU_BINDING_ENV


@dataclass(frozen=True)
class CoreBinding:
    """What the rank did: the cores it is bound to (None: not bound), the cores it could run
    on before, and what the result records (its local rank and cores, or why not bound:
    no_sched_setaffinity, ranks_share_cores, sched_setaffinity_failed)."""

    cpus: tuple[int, ...] | None
    cores_before: int
    note: dict[str, Any]


def core_set(allowed: list[int], local_rank: int, local_world: int) -> tuple[int, ...] | None:
    """Set `local_rank` of `local_world` equal contiguous disjoint sets of `allowed` (sorted),
    or None when there are fewer cores than ranks."""
    per = len(allowed) // max(local_world, 1)
    if per < 1 or not 0 <= local_rank < local_world:
        return None
    return tuple(sorted(allowed)[local_rank * per : (local_rank + 1) * per])


_DONE: list[CoreBinding] = []  # what this process did, for the result's environment


def current() -> CoreBinding | None:
    """The binding this process made (None: it was not asked to bind)."""
    return _DONE[-1] if _DONE else None


def bind_cpu_rank(env: Mapping[str, str] | None = None) -> CoreBinding | None:
    """Bind this process to its cores when the launch asked for it (None: it did not)."""
    binding = _bind(os.environ if env is None else env)
    if binding is not None:
        _DONE.append(binding)
    return binding


def _bind(env: Mapping[str, str]) -> CoreBinding | None:
    if env.get(CPU_BINDING_ENV) != BIND_TO_CORES:
        return None
    if not hasattr(os, "sched_setaffinity"):
        count = os.cpu_count() or 1
        return CoreBinding(None, count, {"not_bound": "no_sched_setaffinity"})
    allowed = sorted(os.sched_getaffinity(0))
    local_rank = int(env.get("LOCAL_RANK", "0"))
    local_world = int(env.get("LOCAL_WORLD_SIZE", "1"))
    cpus = core_set(allowed, local_rank, local_world)
    if cpus is None:
        shared = {"not_bound": "ranks_share_cores", "ranks": local_world, "cores": len(allowed)}
        return CoreBinding(None, len(allowed), shared)
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as exc:
        failed = {"not_bound": "sched_setaffinity_failed", "error": str(exc)}
        return CoreBinding(None, len(allowed), failed)
    return CoreBinding(cpus, len(allowed), {"local_rank": local_rank, "cores": list(cpus)})
