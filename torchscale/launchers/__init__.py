"""Launchers: where a benchmark's cells run, behind one small interface.

A launcher takes a plan and runs its cells somewhere: on this node, cell by cell
(`on_this_node`), as srun steps of Slurm allocations it submits and follows (`on_slurm`), or as
Kubernetes job manifests it writes and may apply (`on_kubernetes`). `launcher_for` picks one by
the config's `launcher.kind`; a new scheduler is a module here with a class that satisfies
`Launcher` and one line in `LAUNCHERS` (docs/architecture.md).

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.config.schema import BenchConfig
    from torchscale.launchers.benchmark_run import BenchmarkEvents, BenchmarkRun, RunOptions
    from torchscale.plan import Machine, Plan
    from torchscale.results.store import ResultStore


class Launcher(Protocol):
    """How one kind of launcher plans, checks and runs a benchmark. Nothing prints: progress
    goes to `BenchmarkEvents`, and everything produced comes back in a `BenchmarkRun`."""

    def machine(self, config: BenchConfig) -> Machine:
        """The nodes cells run on (the submitting host's GPUs say nothing about a cluster's)."""
        ...

    def results_store(self, config: BenchConfig, output_dir: Path, dry_run: bool) -> ResultStore:
        """Where results go; first checks the tools this launcher needs, before anything is
        written (a UsageError names what is missing)."""
        ...

    def dry_run(
        self,
        plan: Plan,
        store: ResultStore,
        env: Mapping[str, str],
        options: RunOptions,
        events: BenchmarkEvents,
    ) -> BenchmarkRun:
        """What a real run with these options would do, without running a cell: the output
        directory probed, the tools checked, the cells --resume would reuse counted."""
        ...

    def run(
        self,
        plan: Plan,
        store: ResultStore,
        env: Mapping[str, str],
        options: RunOptions,
        events: BenchmarkEvents,
    ) -> BenchmarkRun: ...


def _on_this_node() -> Launcher:
    from torchscale.launchers.on_this_node import ThisNode

    return ThisNode()


def _on_slurm() -> Launcher:
    from torchscale.launchers.on_slurm import SlurmAllocations

    return SlurmAllocations()


def _on_kubernetes() -> Launcher:
    from torchscale.launchers.on_kubernetes import KubernetesJobs

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
