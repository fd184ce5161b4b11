"""Test-only plug-in models that fail on purpose, for the sweep's fault handling tests.

Loaded by the worker as 'tests.fault_models:<factory>' (the tests put the repo root on
PYTHONPATH through `launcher.env`). Nothing in torchscale knows about them.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


class _Faulty(nn.Module):
    def __init__(self, fault: str, on_rank: int) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)
        self.fault = fault
        self.on_rank = on_rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.on_rank in (-1, _rank()):
            if self.fault == "crash":
                raise RuntimeError(f"injected failure on rank {_rank()}")
            if self.fault == "oom":
                raise torch.OutOfMemoryError(
                    "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total "
                    "capacity of 79.11 GiB of which 3.12 GiB is free."
                )
            if self.fault == "hang":
                time.sleep(3600)
        return self.linear(x)


def _bundle(fault: str, on_rank: int) -> tuple[nn.Module, Any, Any]:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(batch_size, 4, device=device), torch.randn(batch_size, 1, device=device)

    return _Faulty(fault, on_rank), make_batch, F.mse_loss


def crash(on_rank: int = 1) -> tuple[nn.Module, Any, Any]:
    """Raises RuntimeError in forward on one rank (-1: every rank)."""
    return _bundle("crash", on_rank)


def oom(on_rank: int = -1) -> tuple[nn.Module, Any, Any]:
    """Raises torch.OutOfMemoryError in forward, as a GPU that ran out of memory would."""
    return _bundle("oom", on_rank)


def hang(on_rank: int = 1) -> tuple[nn.Module, Any, Any]:
    """Sleeps for an hour in forward on one rank: the others wait in the all-reduce."""
    return _bundle("hang", on_rank)


def healthy() -> tuple[nn.Module, Any, Any]:
    """Never fails (on_rank -2 matches no rank)."""
    return _bundle("crash", -2)


def exits_badly_after_result(code: int = 3) -> tuple[nn.Module, Any, Any]:
    """Healthy, but the process exits with `code` when it destroys its process group, after
    rank 0 has written its result (as a rank aborting in gloo's teardown does; ranks skip the
    interpreter's own teardown, so the group's is where this can still happen)."""
    import torch.distributed as dist

    dist.destroy_process_group = lambda *args, **kwargs: os._exit(code)
    return _bundle("crash", -2)


def hangs_after_result() -> tuple[nn.Module, Any, Any]:
    """Healthy, but the process never finishes destroying its process group, after rank 0 has
    written its result (as ranks stuck in a backend's teardown do)."""
    import torch.distributed as dist

    dist.destroy_process_group = lambda *args, **kwargs: time.sleep(3600)
    return _bundle("crash", -2)


class _HangWhileMarker(nn.Module):
    def __init__(self, marker: str) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)
        self.marker = marker

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while os.path.exists(self.marker):
            time.sleep(0.2)
        return self.linear(x)


def hang_while_marker(marker: str) -> tuple[nn.Module, Any, Any]:
    """Every rank waits in forward while the file `marker` exists: a cell that hangs in one
    run and, with the file removed, succeeds in the next under the same definition (resume)."""
    bundle = _bundle("crash", -2)
    return _HangWhileMarker(marker), bundle[1], bundle[2]
