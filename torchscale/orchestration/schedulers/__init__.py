"""Schedulers: where a benchmark's cells run, each behind the one contract of `api.py`.

A launcher takes a plan and runs its cells somewhere: on this node, cell by cell (`local/`), as
srun steps of Slurm allocations it submits and follows (`slurm/`), or as Kubernetes job
manifests it writes and may apply (`kubernetes/`). Each scheduler is a package of its own, its
`Launcher` in `launcher.py` beside its mechanics; `launcher_for` picks one by the config's
`launcher.kind` from the one registry, `torchscale.contracts.launcher_registry.LAUNCHERS`
(docs/architecture.md, "Adding a launcher"). The process
mechanics every scheduler shares (the torchrun command, running it) are
`torchscale.orchestration.launch`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from torchscale.contracts.errors import UsageError
from torchscale.contracts.launcher_registry import LAUNCHERS

if TYPE_CHECKING:
    from torchscale.orchestration.schedulers.api import Launcher


def launcher_for(kind: str) -> Launcher:
    """The launcher `launcher.kind` names in the registry, its module imported only now."""
    reference = LAUNCHERS.get(kind)
    if reference is None:
        raise UsageError(f"unknown launcher.kind {kind!r}: use one of {', '.join(LAUNCHERS)}")
    module, _, name = reference.partition(":")
    launcher: Launcher = getattr(importlib.import_module(module), name)()
    return launcher
