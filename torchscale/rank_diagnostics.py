"""Layer 1 (contracts): the files a rank leaves for the host to find where it is stuck.

Every rank (torchscale/worker/diagnostics.py) writes its pid into the directory named by
DIAGNOSTICS_ENV and registers faulthandler on STACK_SIGNAL to dump its stacks there; the host
(torchscale/launch/diagnose.py) sends that signal to a hung launch's ranks and reads the dumps.
Both sides read the names here, so neither imports the other.
"""

from __future__ import annotations

import signal
from pathlib import Path

# where a rank writes its pid and, on request, its stacks
DIAGNOSTICS_ENV = "TORCHSCALE_DIAGNOSTICS_DIR"
STACK_SIGNAL = signal.SIGUSR1  # faulthandler dumps every thread's stack on it


def pid_file(directory: Path, rank: int) -> Path:
    return directory / f"rank{rank}.pid"


def stack_file(directory: Path, rank: int) -> Path:
    return directory / f"rank{rank}.stacks.txt"
