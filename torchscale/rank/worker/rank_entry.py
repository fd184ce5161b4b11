"""What every rank's entry point does around its own work, once for all of them: the cells'
ranks (torchscale/rank/worker/main.py) and the harness of the other rank programs
(torchscale/rank/programs/harness.py: comm, smoke, perf, burn-in).

A rank first installs its diagnostics (it dies with its torchrun, and answers the parent's
SIGUSR1 with a stack dump: torchscale/rank/worker/diagnostics.py), then reads what to run, finds its
device and joins the process group, which it leaves however its work ended: destroyed after
success, aborted after an error (see `process_group`). (The entry modules also call
`die_with_torchrun` before they import torch, and wrap `main` in `record_errors`
(torchelastic's `@record`, written atomically: rank/worker/error_file.py) so an exception lands
in the error file the parent reads for the root cause.)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from pydantic import BaseModel
from torch.distributed import distributed_c10d as c10d

from torchscale.rank.worker.diagnostics import exit_if_stuck, install
from torchscale.rank.worker.error_file import AtomicErrorHandler

INIT_TIMEOUT = timedelta(minutes=10)
# how long a rank that raised may take to leave (abort, interpreter teardown) before it is
# ended with its stacks dumped: its exception is already in its error file by then
ERROR_EXIT_GRACE = timedelta(seconds=30)

Spec = TypeVar("Spec", bound=BaseModel)


def read_spec(spec_type: type[Spec], description: str, argv: Sequence[str] | None) -> Spec:
    """Diagnostics first (a rank that hangs later can then be asked for its stacks), then the
    JSON file named by `--spec`, validated as `spec_type`."""
    install()
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--spec", required=True, help="what this rank runs (JSON)")
    args = parser.parse_args(argv)
    return spec_type.model_validate_json(Path(args.spec).read_text(encoding="utf-8"))


def rank_device(kind: str) -> torch.device:
    """This rank's device: on CUDA its GPU (LOCAL_RANK), made the current one; else the CPU."""
    if kind == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        return device
    return torch.device("cpu")


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
