"""What a rank sets up so a hung or crashed cell can be explained, and cleaned up.

When the sweep times a cell out it cannot see where each rank is stuck; the rank can. Each rank
writes its pid where the parent looks (TORCHSCALE_DIAGNOSTICS_DIR) and registers faulthandler on
SIGUSR1, so the parent can ask for every thread's Python stack before killing the cell (read by
torchscale/launch/diagnose.py). A fatal signal (SIGSEGV, SIGABRT, SIGBUS...) dumps to the same
file. And a rank dies with its torchrun: torchrun starts ranks in sessions of their own, so a
SIGKILLed torchrun would otherwise leave them running, holding ports and GPUs.
"""

from __future__ import annotations

import faulthandler
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from torchscale.launch.diagnose import STACK_SIGNAL, pid_file, stack_file
from torchscale.launch.torchrun import DIAGNOSTICS_ENV
from torchscale.signals import die_with_parent

AGENT_ENV = "TORCHELASTIC_RUN_ID"  # set by torchrun for every rank it starts

_open_files: list[TextIO] = []  # faulthandler writes to their descriptors: keep them open


def install(env: Mapping[str, str] | None = None) -> Path | None:
    """Under torchrun, die with it; when the diagnostics directory is set, answer SIGUSR1 with
    a stack dump. Returns the stack file.

    The pid file is written last and atomically: a pid the parent can read belongs to a rank
    that will dump on SIGUSR1 rather than die of it (its default action).
    """
    env = os.environ if env is None else env
    if AGENT_ENV in env:  # started by torchrun: its death is the cell's end
        die_with_parent(os.getppid())
    directory = env.get(DIAGNOSTICS_ENV)
    if not directory:
        return None
    rank = int(env.get("RANK", "0"))
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    stacks = stack_file(root, rank)
    handle = stacks.open("w", encoding="utf-8")
    _open_files.append(handle)
    faulthandler.register(STACK_SIGNAL, file=handle, all_threads=True, chain=False)
    faulthandler.enable(file=handle, all_threads=True)
    target = pid_file(root, rank)
    partial = target.with_name(f".{target.name}.tmp")
    partial.write_text(f"{os.getpid()}\n", encoding="utf-8")
    partial.replace(target)
    return stacks
