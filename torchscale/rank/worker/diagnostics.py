"""What a rank sets up so a hung or crashed cell can be explained, and cleaned up
(docs/methodology.md, "Timeouts and hangs" and "No orphans").

Each rank writes its pid where the parent looks (TORCHSCALE_DIAGNOSTICS_DIR) and registers
faulthandler on SIGUSR1 (read by torchscale/orchestration/launch/diagnose.py); a fatal signal
(SIGSEGV, SIGABRT, SIGBUS...) dumps to the same file. Beside its pid it writes who it is
(global, local and node rank, Slurm node, host, torchrun's error file for it), which maps
torchrun's per-node logs to global ranks (torchscale/orchestration/launch/failure.py). A rank
dies with its torchrun, which starts ranks in sessions of their own (a SIGKILLed torchrun would
leave them holding ports and GPUs); one whose teardown after an error hangs is ended by
`exit_if_stuck`. Nothing heavy is imported at the top: die_with_torchrun() runs before torch is.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from torchscale.contracts.signals import set_parent_death_signal

if TYPE_CHECKING:
    from torchscale.contracts.rank_diagnostics import RankIdentity

AGENT_ENV = "TORCHELASTIC_RUN_ID"  # set by torchrun for every rank it starts
# what the command line of a rank's parent mentions when that parent is torchrun
# (`python -m torch.distributed.run`, the `torchrun` script, the elastic agent)
_TORCHRUN_MARKS = (b"torch.distributed.run", b"torchrun", b"torch.distributed.elastic")

_open_files: list[TextIO] = []  # faulthandler writes to their descriptors: keep them open


def die_with_torchrun(env: Mapping[str, str] | None = None, signum: int = signal.SIGKILL) -> bool:
    """Under torchrun (AGENT_ENV set), have the kernel send `signum` to this rank when torchrun
    exits; if torchrun is gone already (this rank was reparented: its parent is init, or a
    process that is not torchrun), exit now the same way. Outside torchrun, or where the
    platform has no parent-death signal, nothing is done (False).

    The signal is set before the parent is checked: a torchrun that dies after the check
    delivers it, one that died before fails the check.
    """
    env = os.environ if env is None else env
    if AGENT_ENV not in env or not set_parent_death_signal(signum):
        return False
    parent = os.getppid()
    if not _is_torchrun(parent):
        with contextlib.suppress(OSError):
            sys.stderr.write(
                f"torchscale: this rank's torchrun is gone (parent is now pid {parent}); exiting\n"
            )
            sys.stderr.flush()
        os.kill(os.getpid(), signum)
    return True


def _is_torchrun(pid: int) -> bool:
    if pid <= 1:  # reparented to init
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except PermissionError:
        return True  # cannot tell (a restricted /proc): keep the rank
    except OSError:
        return not Path("/proc/self").is_dir()  # gone; or no /proc to tell from
    return any(mark in cmdline for mark in _TORCHRUN_MARKS)


def install(env: Mapping[str, str] | None = None) -> Path | None:
    """Under torchrun, die with it; when the diagnostics directory is set, answer SIGUSR1 with
    a stack dump. Returns the stack file.

    The identity, then the pid file are written last and atomically: a pid the parent can read
    belongs to a rank that will dump on SIGUSR1 rather than die of it (its default action).
    """
    # here, not at the top: they import the config schema, too late for die_with_torchrun
    from torchscale.contracts.atomic import write_text_atomic
    from torchscale.contracts.rank_diagnostics import (
        DIAGNOSTICS_ENV,
        STACK_SIGNAL,
        identity_file,
        pid_file,
        stack_file,
    )

    env = os.environ if env is None else env
    die_with_torchrun(env)  # idempotent: the worker did it before importing torch
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
    write_text_atomic(identity_file(root, rank), rank_identity(env).to_json())
    write_text_atomic(pid_file(root, rank), f"{os.getpid()}\n")
    return stacks


def rank_identity(env: Mapping[str, str]) -> RankIdentity:
    """This rank as torchrun (RANK, LOCAL_RANK, GROUP_RANK, its error file) and Slurm
    (SLURM_NODEID, which names the node's log directory) numbered it."""
    from torchscale.contracts.rank_diagnostics import ERROR_FILE_ENV, RankIdentity

    return RankIdentity(
        rank=int(env.get("RANK", "0")),
        local_rank=_int_or_none(env.get("LOCAL_RANK")),
        group_rank=_int_or_none(env.get("GROUP_RANK")),
        slurm_node_id=_int_or_none(env.get("SLURM_NODEID")),
        hostname=socket.gethostname(),
        pid=os.getpid(),
        error_file=env.get(ERROR_FILE_ENV) or None,
    )


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def exit_if_stuck(seconds: float) -> None:
    """Exit with status 1 after `seconds` unless the process has ended by then, first dumping
    every thread's stack (to the rank's stack file once installed): for the error path, where
    leaving the process group or the interpreter's teardown can wait on peers that wait on this
    rank. faulthandler's watchdog is a C thread: it fires even while the main thread blocks in
    C++ holding the GIL, where a Python timer would never run."""
    handle = _open_files[-1] if _open_files else sys.stderr
    faulthandler.dump_traceback_later(seconds, exit=True, file=handle)
