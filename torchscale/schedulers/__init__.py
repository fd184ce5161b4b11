"""Schedulers: where a benchmark's cells run, each behind the one contract of `api.py`.

A launcher takes a plan and runs its cells somewhere: on this node, cell by cell (`local/`), as
srun steps of Slurm allocations it submits and follows (`slurm/`), or as Kubernetes job
manifests it writes and may apply (`kubernetes/`). Each scheduler is a package of its own, its
`Launcher` in `launcher.py` beside its mechanics; `launcher_for` picks one by the config's
`launcher.kind` from `LAUNCHERS` (docs/architecture.md, "Adding a launcher"). The process
mechanics every scheduler shares (the torchrun command, running it) are `torchscale.launch`.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.schedulers.api import Launcher


def _on_this_node() -> Launcher:
    from torchscale.schedulers.local.launcher import ThisNode

    return ThisNode()


def _on_slurm() -> Launcher:
    from torchscale.schedulers.slurm.launcher import SlurmAllocations

    return SlurmAllocations()


def _on_kubernetes() -> Launcher:
    from torchscale.schedulers.kubernetes.launcher import KubernetesJobs

    return KubernetesJobs()


# launcher.kind -> the launcher (imported when chosen: Slurm's and Kubernetes' code stays out
# of a local run)
LAUNCHERS: dict[str, Callable[[], Launcher]] = {
    "local": _on_this_node,
    "slurm": _on_slurm,
    "k8s": _on_kubernetes,
}


def launcher_for(kind: str) -> Launcher:
    try:
        return LAUNCHERS[kind]()
    except KeyError:
        raise UsageError(
            f"unknown launcher.kind {kind!r}: use one of {', '.join(LAUNCHERS)}"
        ) from None
