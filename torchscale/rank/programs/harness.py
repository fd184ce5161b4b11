"""What every rank of a program under rank/programs/ does around its own work, once for all.

The entry (__main__.py) has tied the rank to its torchrun before torch was imported. `main`
then installs the rank's diagnostics (rank/worker/diagnostics.py: a hung rank answers the
parent's SIGUSR1 with its stacks), reads the program's spec, finds the rank's device and joins
the process group, runs the body with a `Group` (gathering, rank 0's atomic write), waits at a
last barrier where the program asks for it, and leaves: the group destroyed after success,
aborted after an error (rank/worker/rank_entry.py), the interpreter left without its teardown.
An exception lands in the rank's torchrun error file (`record_errors`, written atomically), where
the parent reads the root cause.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
import torch.distributed as dist
from pydantic import BaseModel

from torchscale.contracts.atomic import write_text_atomic
from torchscale.rank.worker.diagnostics import install
from torchscale.rank.worker.error_file import record_errors
from torchscale.rank.worker.rank_entry import (
    INIT_TIMEOUT,
    leave_without_teardown,
    process_group,
    rank_device,
)

Spec = TypeVar("Spec")
Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class Join:
    """How a program's ranks meet: the backend, the device kind, the collectives' timeout."""

    backend: str
    device: str
    timeout: timedelta = INIT_TIMEOUT


class Group:
    """The process group as a body sees it, joined and on this rank's device."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()

    def gather(self, mine: Any) -> list[Any]:
        """Every rank's `mine`, in rank order, on every rank (pickled: plain data only)."""
        gathered: list[Any] = [None] * self.size
        dist.all_gather_object(gathered, mine)
        return gathered

    def write(self, path: str | Path, text: str) -> None:
        """Rank 0 writes `text` atomically (a reader never sees half a file); others skip."""
        if self.rank == 0:
            write_text_atomic(path, text)

    def barrier(self) -> None:
        dist.barrier()


@dataclass(frozen=True)
class Program(Generic[Spec]):
    """One rank program: how it reads its spec, how its ranks meet, and its body."""

    description: str
    read: Callable[[Sequence[str] | None], Spec]
    join: Callable[[Spec], Join]
    body: Callable[[Spec, Group], None]
    # every rank waits for the others at the end (rank 0 may still be writing or measuring)
    last_barrier: bool = True


def spec_file(spec_type: type[Model], description: str) -> Callable[[Sequence[str] | None], Model]:
    """A reader of `--spec FILE`, the JSON the host wrote, validated as `spec_type`."""

    def read(argv: Sequence[str] | None) -> Model:
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--spec", required=True, help="what this rank runs (JSON)")
        args = parser.parse_args(argv)
        return spec_type.model_validate_json(Path(args.spec).read_text(encoding="utf-8"))

    return read


def run(program: Program[Spec], spec: Spec) -> None:
    """The body inside the process group, then the last barrier; the group left after."""
    join = program.join(spec)
    device = rank_device(join.device)
    with process_group(join.backend, device, join.timeout):
        program.body(spec, Group(device))
        if program.last_barrier:
            dist.barrier()


@record_errors
def main(program: Program[Any], argv: Sequence[str] | None = None) -> None:
    """One rank of `program`: diagnostics first (a rank that hangs later can then be asked
    for its stacks), then its spec, its run, and an exit without interpreter teardown."""
    install()
    run(program, program.read(argv))
    leave_without_teardown()
