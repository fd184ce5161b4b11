"""Schedulers: where a benchmark's cells run, each behind the one contract of `api.py`: this
node (`local/`), Slurm allocations (`slurm/`), Kubernetes job manifests (`kubernetes/`), a
package each with its `Launcher` in `launcher.py` (docs/architecture.md: the layer table, and
"A launcher" for adding one). The process mechanics they share (the torchrun command, running
it) are `torchscale.orchestration.launch`.
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
