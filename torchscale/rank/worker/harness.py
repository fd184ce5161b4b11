"""What every rank of every torchrun program does around its own work, once for all: the cell
worker (rank/worker/main.py) and the programs of rank/programs/ (comm, smoke, perf, burn-in).

The entry module has tied the rank to its torchrun before torch was imported and wraps `main`
in `record_errors` (torchelastic's `@record`, written atomically: rank/worker/error_file.py), so
an exception lands in the error file where the parent reads the root cause. `main` then installs
the rank's diagnostics (a hung rank answers the parent's SIGUSR1 with its stacks), reads the
program's spec, readies the rank's device and joins the process group, runs the body with a
`Group` (gathering, rank 0's atomic write), waits at a last barrier where the program asks for
it, and leaves: the group destroyed after success, aborted after an error (`process_group`),
the interpreter left without its teardown.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
import torch.distributed as dist
from pydantic import BaseModel
from torch.distributed import distributed_c10d as c10d

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.shared_gpu import gpu_index, ranks_per_gpu_from
from torchscale.rank.worker.diagnostics import exit_if_stuck, install
from torchscale.rank.worker.error_file import AtomicErrorHandler, record_errors

INIT_TIMEOUT = timedelta(minutes=10)
# how long a rank that raised may take to leave (abort, interpreter teardown) before it is
# ended with its stacks dumped: its exception is already in its error file by then
ERROR_EXIT_GRACE = timedelta(seconds=30)

Spec = TypeVar("Spec")
Model = TypeVar("Model", bound=BaseModel)


def rank_device(kind: str) -> torch.device:
    """This rank's device: on CUDA its GPU (LOCAL_RANK's, or the one it shares with its
    neighbours where the launch put several ranks on a GPU), made the current one; else the
    CPU."""
    if kind == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        index = gpu_index(local_rank, ranks_per_gpu_from(os.environ))
        device = torch.device("cuda", index)
        torch.cuda.set_device(device)
        return device
    return torch.device("cpu")


@dataclass(frozen=True)
class Join:
    """How a program's ranks meet: the backend, the device kind, the collectives' timeout, and
    what readies the rank's device before the group is joined (None: `rank_device`)."""

    backend: str
    device: str
    timeout: timedelta = INIT_TIMEOUT
    ready: Callable[[str], torch.device] | None = None


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
    device = (join.ready or rank_device)(join.device)
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


@contextmanager
def process_group(
    backend: str,
    device: torch.device,
    timeout: timedelta = INIT_TIMEOUT,
    exit_grace: timedelta = ERROR_EXIT_GRACE,
) -> Iterator[None]:
    """Joined for the block; destroyed after it when it succeeded, aborted when it raised.

    Destroying waits for this rank's outstanding collectives (NCCL kernels, gloo's pending
    work), which its peers, themselves waiting in a collective for this rank, never complete:
    one rank's OOM on 8 GPUs then ended 10 minutes later as a peer's watchdog SIGABRT. So a
    rank that raised first writes its exception to its error file (before anything that can
    block), arms `exit_if_stuck(exit_grace)`, and aborts its communicators without waiting;
    torchrun then sees it exit and stops the peers. NCCL is bound to the rank's device.
    """
    kwargs: dict[str, Any] = {"backend": backend, "timeout": timeout}
    if backend == "nccl":
        kwargs["device_id"] = device
    dist.init_process_group(**kwargs)
    try:
        yield
    except BaseException as error:
        leave_after_error(error, exit_grace)
        raise
    dist.destroy_process_group()


def leave_after_error(error: BaseException, grace: timedelta) -> None:
    """Record `error`, bound the time left to exit, abort the process group (never destroy)."""
    record_error(error)
    exit_if_stuck(grace.total_seconds())
    if not dist.is_initialized():
        return
    try:
        c10d._abort_process_group()  # every group, the default one included
    except Exception as abort_error:  # the rank's own exception matters, not this one
        with contextlib.suppress(OSError):
            sys.stderr.write(f"torchscale: aborting the process group failed: {abort_error}\n")


def leave_without_teardown() -> None:
    """End a rank whose work is done and whose group is destroyed, skipping interpreter
    teardown. On gloo a rank sometimes aborts in teardown ("terminate called without an active
    exception"), seen with a DeviceMesh about 1 run in 3 and with plain DDP across two torchrun
    agents under load. Such a rank's agent then reports a failure and never reaches
    torchelastic's exit barrier, so its peer agent waits there 300 s before it too exits, and
    the measurement, already written, reads as a crashed launch."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def record_error(error: BaseException) -> None:
    """Under torchrun, write `error` to this rank's error file as `record_errors` would, now:
    the abort may block until `exit_if_stuck` ends the process, before `record_errors` runs. As
    `@record` does, only an Exception (not SystemExit, KeyboardInterrupt) is recorded; the write
    is atomic (rank/worker/error_file.py), so torchrun stopping the rank mid-write leaves no torn
    file."""
    if isinstance(error, Exception):  # the handler writes only under torchrun
        with contextlib.suppress(OSError):
            AtomicErrorHandler().record_exception(error)


@contextmanager
def collective_timeout(seconds: float | None, restore: timedelta = INIT_TIMEOUT) -> Iterator[None]:
    """The default group's collective timeout set to `seconds` for the block (None: left as
    it is), then `restore`d: outside the block ranks legitimately wait on a peer far longer
    than a step (rank 0 aggregating and writing the result, a profile being exported).

    A shorter timeout bounds how long ranks sit in a collective whose peer will never come
    (a peer stuck, or gone without torchrun noticing): NCCL's watchdog, or gloo's wait, ends
    them after `seconds` instead of the 10 minutes set at init. Other groups (a DeviceMesh's)
    keep theirs. After an error the block's timeout stays: the group is aborted anyway.
    """
    if seconds is None:
        yield
        return
    c10d._set_pg_timeout(timedelta(seconds=seconds))
    yield
    c10d._set_pg_timeout(restore)
