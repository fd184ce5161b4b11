"""What every rank's entry point does around its own work, once for all of them: the cells'
ranks (torchscale/worker/main.py), the collective sweep's (torchscale/comm/rank_main.py) and
validate's smoke test (torchscale/validate/smoke_worker.py).

A rank first installs its diagnostics (it dies with its torchrun, and answers the parent's
SIGUSR1 with a stack dump: torchscale/worker/diagnostics.py), then reads what to run, finds its
device and joins the process group, which it leaves however its work ended. (The entry modules
also call `die_with_torchrun` before they import torch, and wrap `main` in torchelastic's
`@record` so an exception lands in the error file the parent reads for the root cause.)
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from pydantic import BaseModel

from torchscale.worker.diagnostics import install

INIT_TIMEOUT = timedelta(minutes=10)

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
    backend: str, device: torch.device, timeout: timedelta = INIT_TIMEOUT
) -> Iterator[None]:
    """Joined for the block, destroyed after it whatever happened (a rank that raised must not
    leave its communicators to interpreter teardown). NCCL is bound to the rank's device."""
    kwargs: dict[str, Any] = {"backend": backend, "timeout": timeout}
    if backend == "nccl":
        kwargs["device_id"] = device
    dist.init_process_group(**kwargs)
    try:
        yield
    finally:
        dist.destroy_process_group()
